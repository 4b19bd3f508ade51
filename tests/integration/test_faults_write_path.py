"""Faults in the write path on the real DynamoDB adapter: a failure at every DynamoDB
request and at every model call, one at a time, then random combinations.

After each: no change without a decision, one ledger row per change, no partial change,
the other user untouched, and a retry of the same work converges to the clean state.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes import T0, Clock, ScriptedChat, ScriptedJev, memory, message, owner, speaker
from faults import (
    CallFaults,
    InjectedFault,
    LostAnswers,
    RequestFaults,
    Snapshot,
    assert_every_change_has_exactly_one_ledger_row,
    fresh_tables,
)
from hypothesis_profiles import examples
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import GLOBAL_SCOPE, Action, Actor, Verdict
from memorybot.core.turn.extraction import Extractor

ALICE, BOB = "alice", "bob"
KEEP, UPDATE, DELETE = "kkkkk", "uuuuu", "ddddd"
EXCHANGE = [
    message(ALICE, "I moved to Osaka and took up the cello", name="alice"),
    message("9", "Nice!", name="bot", bot=True, to=ALICE),
]


def world(moto_in_process):
    client, config = fresh_tables(moto_in_process)
    store = DynamoMemoryStore(client, config, clock=Clock())
    for m in (
        memory(ALICE, KEEP, "likes tea"),
        memory(ALICE, UPDATE, "lives in Kyoto"),
        memory(ALICE, DELETE, "exam on Friday"),
        memory(BOB, UPDATE, "bob lives in Sapporo"),
    ):
        store.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)
    return client, config, store


def models():
    jev = ScriptedJev(worth=0.9, verdicts={UPDATE: Verdict.UPDATE, DELETE: Verdict.DELETE}, add=0.8)
    chat = ScriptedChat(texts={UPDATE: "moved from Kyoto to Osaka", None: "plays the cello"})
    return jev, chat


def extract(store, jev, chat):
    ids = iter(f"n{c}{d}22" for c in "abcdefgh" for d in "abcdefgh")
    return Extractor(store, jev, chat, clock=Clock(T0 + timedelta(days=1)), new_id=lambda: next(ids)).run(
        speaker(ALICE, "alice"), GLOBAL_SCOPE, EXCHANGE
    )


def profile_texts(snapshot: Snapshot, user: str) -> list[str]:
    return sorted(m.text for (o, _), m in snapshot.memories.items() if o == owner(user))


INDEX_BUILD_LAST = 4  # the build of the selection index from the first read is among the first four requests


@pytest.fixture(scope="module")
def clean_outcome(moto_in_process):
    """What the write path does with no fault: the state every retry must converge to."""
    client, config, store = world(moto_in_process)
    faults = RequestFaults(client)
    extract(store, *models())
    # the forgotten sources (one item), the scope's profile and the person's "everywhere" one (read
    # side by side, so in either order; the scope's selection index built from its first read), the
    # read row, then the changes
    assert faults.operations[0] == "GetItem" and faults.operations[4:] == ["PutItem"] + ["TransactWriteItems"] * 3
    assert sorted(faults.operations[1:4]) == ["Query", "Query", "TransactWriteItems"]
    return profile_texts(Snapshot.take(client, config), ALICE), faults.count


def test_the_clean_run_is_what_the_scripted_models_decided(clean_outcome):
    texts, requests = clean_outcome
    assert texts == ["likes tea", "moved from Kyoto to Osaka", "plays the cello"]
    # forgotten sources, the two profiles' queries, the selection index's build, read row, a transaction a change
    assert requests == 8


def test_a_failure_at_every_dynamodb_request_keeps_the_invariants_and_a_retry_converges(moto_in_process, clean_outcome):
    clean_texts, requests = clean_outcome
    for k in range(1, requests + 1):
        client, config, store = world(moto_in_process)
        before = Snapshot.take(client, config)
        faults = RequestFaults(client)
        faults.reset({k})
        try:
            extract(store, *models())
        except InjectedFault:
            pass
        else:  # only the selection index's build (derived data, built by a later read) may fail unseen
            assert faults.operations[k - 1] == "TransactWriteItems" and k <= INDEX_BUILD_LAST, k
            after = Snapshot.take(client, config)  # the index agrees with the memories (Snapshot checks)
            assert_every_change_has_exactly_one_ledger_row(before, after)
            assert profile_texts(after, ALICE) == clean_texts
            continue
        after = Snapshot.take(client, config)
        assert_every_change_has_exactly_one_ledger_row(before, after)
        assert profile_texts(after, BOB) == ["bob lives in Sapporo"]
        # the worker is retried (Lambda async retry): same work, no fault
        faults.reset()
        extract(store, *models())
        final = Snapshot.take(client, config)
        assert_every_change_has_exactly_one_ledger_row(after, final)
        assert profile_texts(final, ALICE) == clean_texts, f"fault at request {k} did not converge"


def test_a_failure_at_every_model_call_changes_only_what_was_decided(moto_in_process):
    for k in range(1, 8):  # worth, three verdicts, add, rewrite, add text
        client, config, store = world(moto_in_process)
        before = Snapshot.take(client, config)
        jev, chat = models()
        faults = CallFaults({k})
        result = extract(store, faults.wrap(jev), faults.wrap(chat))
        after = Snapshot.take(client, config)
        assert faults.count >= 1 and len(faults.failed) == (1 if k <= faults.count else 0)
        assert_every_change_has_exactly_one_ledger_row(before, after)
        assert profile_texts(after, BOB) == ["bob lives in Sapporo"]
        assert after.memories[(owner(ALICE), KEEP)] == before.memories[(owner(ALICE), KEEP)]
        failed, args = faults.failed[0] if faults.failed else (None, ())
        if failed == "worth":
            assert after.ledger == before.ledger and result.outcome == "no_decision"
        if failed == "write_memory":  # the rewrite or the add text: exactly that change is missing
            assert len(result.updated) + len(result.added) == 1
        if failed == "add":
            assert result.added == [] and result.updated == [UPDATE]
        if failed == "verdict":  # that record untouched, the others as decided
            judged = args[1].memory_id
            assert after.memories.get((owner(ALICE), judged)) == before.memories[(owner(ALICE), judged)]
            assert sorted(result.updated + result.deleted) == sorted({UPDATE, DELETE} - {judged})


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    requests=st.sets(st.integers(min_value=1, max_value=6), max_size=3),
    jev_fail=st.sets(st.sampled_from(["worth", "verdict", "add", UPDATE, DELETE])),
    chat_fail=st.booleans(),
)
def test_random_combinations_of_faults_keep_the_invariants(moto_in_process, requests, jev_fail, chat_fail):
    client, config, store = world(moto_in_process)
    before = Snapshot.take(client, config)
    faults = RequestFaults(client)
    faults.reset(requests)
    jev, chat = models()
    jev.fail = set(jev_fail)
    chat.fail = {"write_memory"} if chat_fail else set()
    try:
        extract(store, jev, chat)
    except InjectedFault:
        pass
    after = Snapshot.take(client, config)
    assert_every_change_has_exactly_one_ledger_row(before, after)
    assert profile_texts(after, BOB) == ["bob lives in Sapporo"]
    assert after.memories.get((owner(ALICE), KEEP)) == before.memories[(owner(ALICE), KEEP)]  # Jev said keep
    if "worth" in jev_fail:
        assert after.ledger == before.ledger  # no decision: not even a read
    if UPDATE in jev_fail or chat_fail:
        assert after.memories[(owner(ALICE), UPDATE)] == before.memories[(owner(ALICE), UPDATE)]
    if DELETE in jev_fail:
        assert after.memories[(owner(ALICE), DELETE)] == before.memories[(owner(ALICE), DELETE)]


def test_a_change_whose_answer_is_lost_is_found_committed_and_not_reported_as_failed(moto_in_process):
    client, config, store = world(moto_in_process)
    before = Snapshot.take(client, config)
    lost = LostAnswers(client)
    current = store.get(owner(ALICE), UPDATE)
    lost.reset({1})  # the transaction commits, then its answer is lost
    after_state = memory(ALICE, UPDATE, "moved to Osaka", at=T0 + timedelta(days=1))
    entry = store.apply(Change(Action.UPDATE, current, after_state, "test"), actor=Actor.EXTRACTION)
    assert lost.operations[0] == "TransactWriteItems" and entry.after == after_state
    after = Snapshot.take(client, config)
    assert_every_change_has_exactly_one_ledger_row(before, after)
    assert after.memories[(owner(ALICE), UPDATE)] == after_state
