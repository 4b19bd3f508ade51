"""Faults in the nightly run on the real DynamoDB stores (moto's, served in this process: faults.InProcessDynamo), offline models.

A day with three speakers, a quiet user with stale records and an outsider. A failure is
injected at every DynamoDB request of the run, one at a time, then at every model call,
then in random combinations. After each: every change has exactly one ledger row, no
partial change, nobody outside the day's speakers and the stale records touched, no
change without a decision; and where the failure stopped the run, the scheduler's retry
(the same ``now``, no fault) converges to what a clean run does. A failed decay step does
not stop the run: the record stays stale and the next night removes it. Lost answers (the
write took effect, the worker got an error) are tried at every write too.

The offline stand-ins are deterministic and refuse to add a fact already in the profile,
so work redone by a retry settles on the same profiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes import Clock, memory, message
from faults import (
    CallFaults,
    LostAnswers,
    RequestFaults,
    Snapshot,
    assert_every_change_has_exactly_one_ledger_row,
    fresh_tables,
    put_tables_items,
    scan,
    tables_items,
)
from hypothesis_profiles import examples
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.adapters.dynamodb_messages import DynamoMessageStore, message_item
from memorybot.adapters.dynamodb_runs import DynamoRunStore
from memorybot.adapters.manifests import InMemoryManifests
from memorybot.adapters.offline import OFFLINE_MEMORY_LABEL, OfflineChatModel, OfflineDecisionModel, third_person
from memorybot.core.night.consolidation import Consolidator
from memorybot.core.night.nightly_steps import run_in_process
from memorybot.core.record.changes import Change, LedgerEntry
from memorybot.core.record.domain import JST, NIGHTLY_MAX_DURATION, Action, Actor, Exchange
from memorybot.core.turn.extraction import Extractor


def jst(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=JST)


NOW = jst(30, 3)  # the 03:00 JST schedule: the window is the 29th, 03:00 to 03:00
DAY = "2026-11-29"
SPEAKERS = ("alice", "bob", "carol")
OUTSIDER = "oscar"  # has memories, said nothing in the window: never touched
QUIET = "zed"  # said nothing; two stale records, one time-limited

UPDATE_CELLO = "I play the cello in an orchestra now"
FORGET_NATTO = "please forget that I like natto"
MOVED = "I moved to Osaka last month"
DOG = "I adopted a dog named Pochi"
HIKING = "I love hiking in the Alps"

# Each speaker's messages, in order; chunks of six cut from the newest, and the offline rules read
# the last line of each chunk. Alice: three chunks (an update, a forget, an add); bob and carol one each.
SAID = {
    "alice": [
        UPDATE_CELLO,
        "good morning",
        "the weather is nice",
        "lunch?",
        "ok",
        "see you",
        FORGET_NATTO,
        "hm",
        "so",
        "well",
        "yes",
        "right",
        MOVED,
    ],
    "bob": ["hi all", DOG],
    "carol": ["I work as a nurse", HIKING],
}
# (user, memory id, text, days before the window): 30 or more days old is stale.
SEED = [
    ("alice", "aaaa2", "[offline] Plays the cello", 1),
    ("alice", "aaaa3", "[offline] Likes natto", 2),
    ("alice", "aaaa4", "[offline] Has an exam this week", 40),
    ("bob", "bbbb2", "[offline] Has a cat", 3),
    (QUIET, "zzzz2", "[offline] Has a dentist appointment tomorrow", 45),
    (QUIET, "zzzz3", "[offline] Is allergic to cats", 50),
    (OUTSIDER, "oooo2", "[offline] Likes jazz", 5),
]

# What the clean run changes, per chunk (by the chunk's last line) and by decay.
# A change is (action, user, text before, text after): add ids are random.
BY_CHUNK = {
    UPDATE_CELLO: {("update", "alice", "[offline] Plays the cello", "[offline] Plays the cello in an orchestra now")},
    FORGET_NATTO: {("delete", "alice", "[offline] Likes natto", None)},
    MOVED: {("add", "alice", None, "[offline] Moved to Osaka last month")},
    DOG: {("add", "bob", None, "[offline] Adopted a dog named Pochi")},
    HIKING: {("add", "carol", None, "[offline] Loves hiking in the Alps")},
}
DECAY = {
    ("delete", "alice", "[offline] Has an exam this week", None),
    ("delete", QUIET, "[offline] Has a dentist appointment tomorrow", None),
}
CLEAN_CHANGES = set().union(*BY_CHUNK.values()) | DECAY


def change_key(entry: LedgerEntry) -> tuple:
    return (
        entry.action.value,
        entry.user_id,
        entry.before.text if entry.before else None,
        entry.after.text if entry.after else None,
    )


def profiles(snapshot: Snapshot) -> dict[str, list[str]]:
    texts: dict[str, list[str]] = {}
    for (who, _), m in snapshot.memories.items():
        texts.setdefault(who.user_id, []).append(m.text)
    return {user: sorted(t) for user, t in texts.items()}


def clean_profiles() -> dict[str, list[str]]:
    """Every seed record, with the clean run's changes applied (by text)."""
    texts: dict[str, list[str]] = {}
    for user, _, text, _ in SEED:
        texts.setdefault(user, []).append(text)
    for _action, user, before, after in CLEAN_CHANGES:
        if before is not None:
            texts[user].remove(before)
        if after is not None:
            texts.setdefault(user, []).append(after)
    return {user: sorted(t) for user, t in texts.items()}


@dataclass
class Day:
    """One fresh set of tables holding the day; ``consolidator`` builds the nightly worker on it."""

    client: object
    config: object
    clock: Clock
    faults: RequestFaults
    unhooked: object

    def consolidator(self, jev=None, chat=None) -> Consolidator:
        memories = DynamoMemoryStore(self.client, self.config, clock=self.clock)
        jev, chat = jev or OfflineDecisionModel(), chat or OfflineChatModel()
        # One speaker at a time: the DynamoDB requests then come in the same order every
        # run, so request number k is the same request in every iteration. (Model calls
        # still overlap: CallFaults records which call failed, and the checks go by that.)
        extractor = Extractor(memories, jev, chat, clock=self.clock, concurrency=2)
        return Consolidator(
            memories,
            DynamoMessageStore(self.client, self.config),
            DynamoRunStore(self.client, self.config),
            extractor,
            jev,
            chat,
            manifests=InMemoryManifests(),
            clock=self.clock,
            speaker_concurrency=1,
        )

    def snapshot(self) -> Snapshot:
        return Snapshot.take(self.client, self.config)

    def runs(self) -> list[dict]:
        return scan(self.unhooked, self.config.table_names["nightly_runs"])


# The seeded day's items, by table (its name without the prefix): written through the stores once,
# then copied into every new day's tables (a loop makes a day for every request position).
_SEEDED: dict[str, list[dict]] = {}


def new_day(moto_in_process) -> Day:
    client, config = fresh_tables(moto_in_process)
    clock = Clock(NOW)
    if not _SEEDED:
        seed(client, config, clock)
        _SEEDED.update(tables_items(client, config))
    else:
        put_tables_items(client, config, _SEEDED)
    # Hooked after seeding: only the nightly run's requests are counted and failed.
    return Day(client, config, clock, RequestFaults(client), moto_in_process.client())


def seed(client, config, clock: Clock) -> None:
    """The day's memories (through the store's own writes) and messages."""
    memories = DynamoMemoryStore(client, config, clock=clock)
    for user, memory_id, text, age in SEED:
        seeded = memory(user, memory_id, text, at=jst(29, 1) - timedelta(days=age))
        memories.apply(Change(Action.ADD, None, seeded, "seed"), actor=Actor.EXTRACTION)
    said = [
        message(user, line, at=jst(29, 10, minute), name=user)
        for minute, (user, line) in enumerate(((user, line) for user, lines in SAID.items() for line in lines), start=1)
    ]
    said.append(message("bot", "how nice", at=jst(29, 11), bot=True, name="memorybot"))
    said.append(message(OUTSIDER, "I love opera", at=jst(29, 2, 59), name=OUTSIDER))  # the night before's
    # One batch instead of a put per message: the same items the adapter writes, in less time.
    table = config.table_names["messages"]
    client.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": message_item(m)}} for m in said]})


def assert_invariants(before: Snapshot, after: Snapshot, extra: set[tuple] = frozenset()) -> set[tuple]:
    """The invariants that hold after any fault; returns the changes made (as change keys).

    ``extra``: changes the models may decide only because of a fault (an add judged without
    the verdict that would have shown the fact already known).
    """
    assert_every_change_has_exactly_one_ledger_row(before, after)
    new_rows = [e for e in after.ledger if e not in before.ledger]
    # Nobody outside the day's speakers: the outsider has not even been read.
    assert [e for e in new_rows if e.user_id == OUTSIDER] == []
    assert {k: m for k, m in after.memories.items() if k[0].user_id == OUTSIDER} == {
        k: m for k, m in before.memories.items() if k[0].user_id == OUTSIDER
    }
    assert all(e.actor is Actor.NIGHTLY and e.run_id == 1 for e in new_rows)
    made = [change_key(e) for e in new_rows if e.action is not Action.READ]
    # No change without a decision: every change is one the models decided in the clean run
    # (or may decide given the fault), and none is made twice.
    assert len(made) == len(set(made)) and set(made) <= CLEAN_CHANGES | extra, set(made) - CLEAN_CHANGES
    return set(made)


def adds_judged_without(failed: list) -> set[tuple]:
    """The adds a failed verdict can let through: that chunk's statement, written down."""
    return {
        ("add", args[1].user_id, None, f"{OFFLINE_MEMORY_LABEL} {third_person(chunk_of(args[0]))}")
        for name, args in failed
        if name == "verdict"
    }


def assert_day_done_once(day: Day, final: Snapshot, extra: set[tuple] = frozenset()) -> None:
    """The day's run finished once (one run id for the day) with the clean run's profiles,
    ``extra`` adds aside. A decay delete that failed is the one thing that waits: the record
    stays stale and the next night's review removes it (checked here too)."""
    expected = clean_profiles()
    for _, user, _, text in extra:  # adds decided during a faulty attempt stand
        expected[user] = sorted(expected[user] + [text])
    decay_targets = {t for _, _, t, _ in DECAY}
    assert {u: [t for t in texts if t not in decay_targets] for u, texts in profiles(final).items()} == {
        u: [t for t in texts if t not in decay_targets] for u, texts in expected.items()
    }
    items = day.runs()
    [day_item] = [i for i in items if i["run_key"]["S"] == f"day#{DAY}"]
    [run] = [i for i in items if i["run_key"]["S"] == f"run#{day_item['run_id']['N']}"]
    assert run["run_id"]["N"] == "1" and "finished_at" in run and "worked_until" not in run
    if profiles(final) != expected:
        # The next night (no messages) reviews what is still stale: then nothing decayed is left.
        day.faults.reset()
        following = run_in_process(day.consolidator(), NOW + timedelta(days=1))
        assert following is not None and following.run_id == 2
        assert profiles(day.snapshot()) == expected


@pytest.fixture(scope="module")
def clean(moto_in_process):
    """The clean run: how many DynamoDB requests and model calls it makes."""
    day = new_day(moto_in_process)
    before = day.snapshot()
    calls = CallFaults()
    run = run_in_process(day.consolidator(calls.wrap(OfflineDecisionModel()), calls.wrap(OfflineChatModel())), NOW)
    requests, model_calls = day.faults.count, calls.count
    after = day.snapshot()
    assert assert_invariants(before, after) == CLEAN_CHANGES
    assert profiles(after) == clean_profiles()
    assert_day_done_once(day, after)
    assert run.summary.failures == 0 and run.summary.failed_speakers == [] and run.diary
    return requests, model_calls, len([e for e in after.ledger if e.action is Action.READ and e not in before.ledger])


def test_the_clean_run_makes_every_kind_of_change(clean):
    requests, model_calls, reads = clean
    # one profile read per chunk that was worth reading (3 for alice, bob, carol), and the decay
    # review's read row for each person whose stale records it reads
    assert reads == 5 + 2
    assert model_calls == calls_of_a_clean_run()
    assert requests > 20


def calls_of_a_clean_run() -> int:
    # Each chunk with a profile: worth, the one decision, the add's draft (written beside the
    # decision, dropped on a no) and a rewrite per update. Alice: the update (4), the forget (3),
    # the add (3); bob: the add (3); carol: worth and the add's text (empty profile: no decision).
    alice = (1 + 1 + 1 + 1) + (1 + 1 + 1) + (1 + 1 + 1)
    return alice + 3 + 2 + 3 + 1  # + three stale reviews + the diary


def test_a_failure_at_every_dynamodb_request_keeps_the_invariants_and_the_retry_converges(moto_in_process, clean):
    # The clean run makes about 30 requests, so every position is tried (no sampling).
    requests, _, _ = clean
    stopped, absorbed = [], []
    for k in range(1, requests + 1):
        day = new_day(moto_in_process)
        before = day.snapshot()
        day.faults.reset({k})
        try:
            run = run_in_process(day.consolidator(), NOW)
        except Exception:  # noqa: BLE001 - the injected fault, or the run reporting itself incomplete
            run = None
        failed_op = day.faults.operations[k - 1]
        after = day.snapshot()
        assert_invariants(before, after)
        day.faults.reset()
        if run is None:
            stopped.append(k)
            # The worker gave the run up: the scheduler's retry takes it over and finishes it.
            retried = run_in_process(day.consolidator(), NOW)
            assert retried is not None and retried.run_id == 1, f"fault at request {k}: the retry did not take over"
            final = day.snapshot()
            assert_every_change_has_exactly_one_ledger_row(after, final)
        else:
            # The run went on past the failed request and finished: a speaker's step absorbs it by
            # its retry (the state machine's Retry; nothing is counted twice: the checks below), a
            # decay step by leaving the record stale for the next night, on record as a failure.
            absorbed.append(k)
            assert run.summary.failed_speakers == [], f"fault at request {k}: one retry must absorb it"
            if run.summary.failures == 0:
                assert failed_op in ("Query", "GetItem", "PutItem", "TransactWriteItems"), (k, failed_op)
            assert run_in_process(day.consolidator(), NOW) is None
            final = day.snapshot()
            assert final == after
        assert_day_done_once(day, final)
    # Reading the day, claiming it, finishing it: these stop the run.
    assert stopped[:1] == [1] and stopped[-1] == requests
    print(
        f"nightly: {requests} request positions; {len(stopped)} stopped the run, {len(absorbed)} were absorbed by decay"
    )


def test_a_lost_answer_at_every_write_of_the_run_converges(moto_in_process, clean):
    """The write reaches the table, then the worker gets an error: it must not be done twice,
    and what it left must still be finished by the retry."""
    day = new_day(moto_in_process)
    lost = LostAnswers(day.client)
    run_in_process(day.consolidator(), NOW)
    writes = lost.writes()
    claim = writes[0]  # the day's claim: see the next test
    assert lost.operations[claim - 1] == "TransactWriteItems"
    for k in writes[1:]:
        day = new_day(moto_in_process)
        before = day.snapshot()
        lost = LostAnswers(day.client)
        lost.fail_at = {k}
        try:
            run = run_in_process(day.consolidator(), NOW)
        except Exception:  # noqa: BLE001 - the lost answer, or the run reporting itself incomplete
            run = None
        after = day.snapshot()
        assert_invariants(before, after)
        lost.reset()
        if run is None:  # the scheduler retries a failed run
            retried = run_in_process(day.consolidator(), NOW)
            if retried is None:  # only if the lost answer was the one storing the finished run
                assert "finished_at" in next(i for i in day.runs() if i["run_key"]["S"] == "run#1"), f"lost answer {k}"
        final = day.snapshot()
        assert_every_change_has_exactly_one_ledger_row(before, final)
        assert_day_done_once(day, final)


def test_a_lost_answer_to_the_days_claim_does_not_lose_the_day(moto_in_process):
    day = new_day(moto_in_process)
    lost = LostAnswers(day.client)
    run_in_process(day.consolidator(), NOW)
    claim = lost.writes()[0]
    assert lost.operations[claim - 1] == "TransactWriteItems"
    day = new_day(moto_in_process)
    before = day.snapshot()
    lost = LostAnswers(day.client)
    lost.fail_at = {claim}
    run = run_in_process(day.consolidator(), NOW)  # the claim committed: the worker finds that it did, and goes on
    assert run is not None and run.run_id == 1 and run.finished_at is not None
    after = day.snapshot()
    assert_invariants(before, after)
    assert_day_done_once(day, after)


def chunk_of(exchange: Exchange) -> str:
    """The chunk's last line (what the offline rules read): a nightly chunk is the speaker's own lines."""
    return exchange.speaker_said()[-1]


def dropped_draft(name: str, args: tuple) -> bool:
    """A failed draft of an add that Jev then refused: never wanted, so no failure of the turn."""
    if name != "write_memory" or args[1] is not None:
        return False
    return not any(c[0] == "add" for c in BY_CHUNK[chunk_of(args[0])])


def test_a_failure_at_every_model_call_changes_only_what_was_decided(moto_in_process, clean):
    _, model_calls, reads = clean
    for k in range(1, model_calls + 1):
        day = new_day(moto_in_process)
        before = day.snapshot()
        calls = CallFaults({k})
        run = run_in_process(day.consolidator(calls.wrap(OfflineDecisionModel()), calls.wrap(OfflineChatModel())), NOW)
        after = day.snapshot()
        made = assert_invariants(before, after, adds_judged_without(calls.failed))
        [(name, args)] = calls.failed
        chunk = BY_CHUNK[chunk_of(args[0])] if name in ("worth", "decide", "write_memory") else set()
        assert run.finished_at is not None and run.summary.failures == (0 if dropped_draft(name, args) else 1)

        # What the failed call decided must be missing; what it could not affect must be there.
        must_miss: set[tuple] = set()
        may_miss: set[tuple] = set()
        if name == "worth":
            must_miss = BY_CHUNK[chunk_of(args[0])]
            assert len([e for e in after.ledger if e.action is Action.READ and e not in before.ledger]) == reads - 1
        elif name == "decide":  # a failed decision: every record of the chunk untouched, nothing added
            must_miss = chunk
        elif name == "write_memory" and args[1] is None:
            must_miss = {c for c in chunk if c[0] == "add"}
        elif name == "write_memory":
            must_miss = {c for c in BY_CHUNK[chunk_of(args[0])] if c[2] == args[1].text}
        elif name == "review":  # a failed review keeps the record
            must_miss = {c for c in DECAY if c[1] == args[0].user_id and c[2] == args[0].text}
            assert after.memories[(args[0].owner, args[0].memory_id)] == args[0]
        elif name == "write_diary":
            assert run.diary == ""
        else:
            raise AssertionError(f"unexpected model call {name}")
        missing = CLEAN_CHANGES - made
        assert must_miss <= missing <= must_miss | may_miss, f"call {k} ({name}): missing {missing}"
        if name != "write_diary":
            assert run.diary
        # The day is finished: the scheduler's retry changes nothing.
        assert run_in_process(day.consolidator(), NOW) is None and day.snapshot() == after


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_combinations_of_request_and_model_faults(moto_in_process, clean, data):
    requests, model_calls, _ = clean
    request_faults = data.draw(st.sets(st.integers(1, requests), max_size=3), label="requests")
    model_faults = data.draw(st.sets(st.integers(1, model_calls), max_size=4), label="model calls")
    day = new_day(moto_in_process)
    before = day.snapshot()
    day.faults.reset(request_faults)
    calls = CallFaults(model_faults)
    try:
        run = run_in_process(day.consolidator(calls.wrap(OfflineDecisionModel()), calls.wrap(OfflineChatModel())), NOW)
    except Exception:  # noqa: BLE001 - the injected fault, or the run reporting itself incomplete
        run = None
    after = day.snapshot()
    extra = assert_invariants(before, after, adds_judged_without(calls.failed)) - CLEAN_CHANGES
    for name, args in calls.failed:
        if name == "review":  # a failed review keeps the record, whatever else failed
            assert after.memories[(args[0].owner, args[0].memory_id)] == args[0]
    hit = request_faults & set(range(1, day.faults.count + 1))
    day.faults.reset()
    if run is not None:
        # A model fault is on record, unless a store fault made the speaker's step run again (the
        # retry redoes the chunk, and its own answers replace the failed attempt's), or the only
        # failed calls were drafts dropped on Jev's "no" (the draft runs beside the decision, so
        # which call is the k-th varies from run to run).
        if any(not dropped_draft(name, args) for name, args in calls.failed) and not hit:
            assert run.summary.failures >= 1
        assert hit or calls.failed or run.summary.failures == 0
        final, finished = after, run
    else:
        retried = run_in_process(day.consolidator(), NOW)
        if retried is None:
            # The failed run could not be given up either (its release request failed too): it
            # is taken over once its worker's time limit has passed.
            day.clock.now += NIGHTLY_MAX_DURATION
            retried = run_in_process(day.consolidator(), NOW)
        assert retried is not None and retried.run_id == 1 and retried.finished_at is not None
        final, finished = day.snapshot(), retried
        assert_every_change_has_exactly_one_ledger_row(after, final)
        assert_invariants(before, final, adds_judged_without(calls.failed))
    if finished.summary.failed_speakers:
        # A speaker is recorded failed only once its step and both of its retries failed: three
        # store faults in its requests. The run finished anyway; the invariants above still hold.
        assert len(hit) >= 3 and len(finished.summary.failed_speakers) == 1
    elif not calls.failed:
        # Only store faults: the same profiles as a clean run (decay by the next night at the latest).
        assert_day_done_once(day, final, extra)
    # (With model faults, what the failed calls would have decided is simply not done: a
    # finished speaker is not redone. The model-call test above checks exactly what is missing.)
