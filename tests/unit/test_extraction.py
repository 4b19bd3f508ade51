"""The write path, branch by branch, against fakes of our own ports."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from fakes import T0, Clock, FakeMemoryStore, ScriptedChat, ScriptedJev, memory, message, owner, speaker
from memorybot.core.record.domain import GLOBAL_SCOPE, Action, Actor, Exchange, Memory, Verdict
from memorybot.core.turn.extraction import Extractor

ALICE, BOB = "100", "200"
SCOPE = GLOBAL_SCOPE
ME = speaker(ALICE, "alice")  # whose exchange is extracted
MINE = owner(ALICE, SCOPE)  # and whose profile it decides


def exchange(speaker=ALICE, text="I started learning the cello"):
    return [
        message(BOB, "morning all", name="bob"),
        message(speaker, text, name="alice"),
        message("999", "Nice! How is it going?", name="memorybot", bot=True, to=speaker),
    ]


def ids(n, start=0):
    alphabet = "abcdefghjkmnpqrstuvwxyz"
    return [f"m{alphabet[i]}222" for i in range(start, start + n)]


@pytest.fixture
def store():
    return FakeMemoryStore()


def extractor(store, jev, chat, **kw):
    counter = iter(f"n{c}222" for c in "abcdefghjkmnpqrstuvwxyz")
    return Extractor(store, jev, chat, clock=Clock(T0 + timedelta(days=1)), new_id=lambda: next(counter), **kw)


def seed_profile(store, user=ALICE, n=3):
    made = []
    for i, memory_id in enumerate(ids(n)):
        m = memory(user, memory_id, f"fact {i}", at=T0 + timedelta(minutes=i))
        store.seed(m)
        made.append(m)
    return made


# --- step 1: rendering ------------------------------------------------------------


def test_the_exchange_is_the_last_six_lines_of_the_speakers_own_conversation_including_the_bot_reply():
    # Was "the channel's last six messages": now other people's lines never enter it, however many.
    mine = [message(ALICE, f"old {i}", name="alice") for i in range(5)]
    msgs = mine + [message(BOB, f"bob {i}", name="bob") for i in range(5)] + exchange()
    text = Exchange.of(ME, SCOPE, msgs).render()
    lines = text.splitlines()
    assert len(lines) == 6
    assert lines[0] == "alice: old 1"
    assert lines[-2] == "alice: I started learning the cello"
    assert lines[-1] == "memorybot: Nice! How is it going?"
    assert "old 0" not in text and "bob" not in text and "morning all" not in text


def test_a_bot_reply_to_someone_else_and_a_line_in_another_scope_are_not_the_speakers_exchange():
    msgs = [
        message(ALICE, "in another server", name="alice", scope="guild:2"),
        message(ALICE, "I play the cello", name="alice"),
        message("999", "to bob", name="memorybot", bot=True, to=BOB),
        message(ALICE, "history, not said to the bot", name="alice", to=""),
    ]
    assert Exchange.of(ME, SCOPE, msgs).speaker_said() == ["I play the cello"]
    assert [m.content for m in Exchange.of(ME, SCOPE, msgs).messages] == ["I play the cello"]


def test_no_usable_exchange_means_no_model_call_and_no_read(store):
    jev, chat = ScriptedJev(), ScriptedChat()
    only_others = [message(BOB, "hello", name="bob"), message(ALICE, "   ", name="alice")]
    result = extractor(store, jev, chat).run(ME, SCOPE, only_others)
    assert result.outcome == "no_exchange"
    assert jev.calls == [] and store.ledger == []


# --- step 2: worth ------------------------------------------------------------------


@pytest.mark.parametrize("answer", [0.49, 0.0])
def test_below_threshold_ends_with_no_reads_and_no_writes(store, answer):
    seed_profile(store)
    jev = ScriptedJev(worth=answer)
    result = extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange())
    assert result.outcome == "not_worth"
    assert store.ledger == []
    assert [q for q, _ in jev.calls] == ["worth"]


def test_exactly_the_threshold_is_worth_keeping(store):
    result = extractor(store, ScriptedJev(worth=0.5), ScriptedChat()).run(ME, SCOPE, exchange())
    assert result.outcome == "done"


@pytest.mark.parametrize("answer", [1.5, -0.1, math.nan, "0.9", True, None, {"probability": 0.9}])
def test_a_malformed_worth_answer_is_no_decision(store, answer):
    seed_profile(store)
    result = extractor(store, ScriptedJev(worth=answer), ScriptedChat()).run(ME, SCOPE, exchange())
    assert result.outcome == "no_decision"
    assert store.ledger == []


def test_jev_unavailable_writes_nothing(store):
    before = seed_profile(store)
    jev = ScriptedJev()
    jev.fail = {"worth", "verdict", "add", "review"}
    result = extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange())
    assert result.outcome == "no_decision"
    assert store.of(ALICE) == sorted(before, key=lambda m: m.updated_at, reverse=True)
    assert store.changes() == []


# --- step 3: the read -----------------------------------------------------------------


@pytest.mark.parametrize("actor,run_id", [(Actor.EXTRACTION, None), (Actor.NIGHTLY, 7)])
def test_reads_ten_most_recent_and_logs_the_read_with_the_runs_actor(store, actor, run_id):
    profile = seed_profile(store, n=12)
    jev = ScriptedJev(add=0.0)
    extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange(), actor=actor, run_id=run_id)
    reads = [e for e in store.ledger if e.action is Action.READ]
    assert len(reads) == 1
    newest_ten = [m.memory_id for m in sorted(profile, key=lambda m: m.updated_at, reverse=True)[:10]]
    assert list(reads[0].memory_ids) == newest_ten
    assert reads[0].actor is actor and reads[0].run_id == run_id
    assert sorted(jev.asked("verdict")) == sorted(newest_ten)


# --- step 4: verdicts -----------------------------------------------------------------


def test_delete_verdict_removes_the_row_with_its_ledger_row(store):
    a, b, _ = seed_profile(store)
    jev = ScriptedJev(verdicts={a.memory_id: Verdict.DELETE}, add=0.0)
    result = extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange())
    assert result.deleted == [a.memory_id]
    assert store.get(MINE, a.memory_id) is None
    [row] = store.changes()
    assert (row.action, row.actor, row.before, row.after) == (Action.DELETE, Actor.EXTRACTION, a, None)
    assert row.reason


def test_update_verdict_rewrites_the_text_and_keeps_identity(store):
    a, _, _ = seed_profile(store)
    chat = ScriptedChat(texts={a.memory_id: "plays the cello since November"})
    jev = ScriptedJev(verdicts={a.memory_id: "update"}, add=0.0)
    result = extractor(store, jev, chat).run(ME, SCOPE, exchange())
    assert result.updated == [a.memory_id]
    after = store.get(MINE, a.memory_id)
    assert after.text == "plays the cello since November"
    assert after.created_at == a.created_at and after.updated_at > a.updated_at
    [row] = store.changes()
    assert (row.action, row.before, row.after) == (Action.UPDATE, a, after)


def test_the_rewrite_sees_only_the_exchange_and_the_record_being_rewritten(store):
    a, b, c = seed_profile(store)
    chat = ScriptedChat()
    jev = ScriptedJev(verdicts={b.memory_id: Verdict.UPDATE}, add=0.0)
    extractor(store, jev, chat).run(ME, SCOPE, exchange())
    # the rewrite, and the new memory's draft written beside the decision (dropped on its "no")
    [(what, (seen, current))] = [(w, (e, c)) for w, (e, c) in chat.seen if c is not None]
    assert what == "write_memory" and current == b
    exchange_text = seen.render()
    assert a.text not in exchange_text and c.text not in exchange_text


@pytest.mark.parametrize("bad", ["maybe", "KEEP ", 3, None, "review"])
def test_an_unknown_verdict_leaves_the_record_untouched(store, bad):
    a, _, _ = seed_profile(store)
    jev = ScriptedJev(verdicts={a.memory_id: bad}, add=0.0)
    result = extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange())
    assert store.get(MINE, a.memory_id) == a
    assert store.changes() == [] and result.failures == 1


def test_a_failed_verdict_call_leaves_that_record_untouched_and_others_proceed(store):
    a, b, _ = seed_profile(store)
    jev = ScriptedJev(verdicts={a.memory_id: Verdict.DELETE, b.memory_id: Verdict.DELETE}, add=0.0)
    jev.fail = {a.memory_id}
    result = extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange())
    assert store.get(MINE, a.memory_id) == a
    assert result.deleted == [b.memory_id]


# --- step 5: the add decision ---------------------------------------------------------


def test_with_no_memories_an_add_is_allowed_without_asking(store):
    jev = ScriptedJev(add=0.0)  # would refuse, if it were asked
    result = extractor(store, jev, ScriptedChat(texts={None: "learns the cello"})).run(ME, SCOPE, exchange())
    assert jev.asked("add") == []
    [added] = result.added
    assert store.get(MINE, added).text == "learns the cello"
    [row] = store.changes()
    assert (row.action, row.before, row.after.text) == (Action.ADD, None, "learns the cello")


def test_jev_sees_the_verdicts_before_deciding_an_add(store):
    a, b, c = seed_profile(store)
    jev = ScriptedJev(verdicts={a.memory_id: Verdict.DELETE, b.memory_id: Verdict.UPDATE}, add=0.7)
    result = extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange())
    [seen] = jev.asked("add")
    assert set(seen) == {(a.memory_id, Verdict.DELETE), (b.memory_id, Verdict.UPDATE), (c.memory_id, Verdict.KEEP)}
    assert len(result.added) == 1


def test_no_add_while_a_memory_went_unjudged_but_the_other_verdicts_apply(store):
    # The unjudged memory may be the very fact the exchange restates: an add would duplicate it.
    a, b, c = seed_profile(store)
    jev = ScriptedJev(verdicts={a.memory_id: Verdict.DELETE}, add=1.0)
    jev.fail = {c.memory_id}
    result = extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange())
    assert jev.asked("add") == [] and result.added == []
    assert result.deleted == [a.memory_id] and store.get(c.owner, c.memory_id) == c


@pytest.mark.parametrize("answer", [0.49, 1.01, "yes", None])
def test_a_refused_or_malformed_add_adds_nothing(store, answer):
    seed_profile(store)
    result = extractor(store, ScriptedJev(add=answer), ScriptedChat()).run(ME, SCOPE, exchange())
    assert result.added == [] and store.changes() == []


def test_no_add_when_jev_judged_none_of_the_profile(store):
    a, b, c = seed_profile(store)
    jev = ScriptedJev(add=1.0)
    jev.fail = {a.memory_id, b.memory_id, c.memory_id}
    result = extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange())
    assert jev.asked("add") == [] and result.added == [] and store.changes() == []


# --- step 6: phrasing -----------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n  "])
def test_an_empty_text_means_that_change_is_not_made(store, text):
    a, _, _ = seed_profile(store)
    chat = ScriptedChat(texts={a.memory_id: text, None: text})
    jev = ScriptedJev(verdicts={a.memory_id: Verdict.UPDATE}, add=0.9)
    result = extractor(store, jev, chat).run(ME, SCOPE, exchange())
    assert store.changes() == [] and result.updated == [] and result.added == []


def test_a_failed_text_call_means_no_change_but_deletes_still_apply(store):
    a, b, _ = seed_profile(store)
    chat = ScriptedChat()
    chat.fail = {"write_memory"}
    jev = ScriptedJev(verdicts={a.memory_id: Verdict.UPDATE, b.memory_id: Verdict.DELETE}, add=0.9)
    result = extractor(store, jev, chat).run(ME, SCOPE, exchange())
    assert store.get(MINE, a.memory_id) == a
    assert result.deleted == [b.memory_id] and result.updated == [] and result.added == []


def test_texts_are_folded_to_one_line():
    store = FakeMemoryStore()
    chat = ScriptedChat(texts={None: "  likes\n\n green   tea  "})
    result = extractor(store, ScriptedJev(), chat).run(ME, SCOPE, exchange())
    assert store.get(MINE, result.added[0]).text == "likes green tea"


# --- step 7: applying -----------------------------------------------------------------


def test_a_record_changed_by_someone_else_meanwhile_is_not_overwritten(store):
    a, _, _ = seed_profile(store)
    changed = Memory(
        ALICE, a.memory_id, "changed by a concurrent writer", a.created_at, a.updated_at + timedelta(hours=1)
    )

    class RacingChat(ScriptedChat):
        def write_memory(self, exchange, current):
            store.seed(changed)  # lands between our read and our write
            return super().write_memory(exchange, current)

    jev = ScriptedJev(verdicts={a.memory_id: Verdict.UPDATE}, add=0.0)
    result = extractor(store, jev, RacingChat()).run(ME, SCOPE, exchange())
    assert store.get(MINE, a.memory_id) == changed
    assert result.conflicts == 1 and result.updated == [] and store.changes() == []


def test_an_add_retries_with_a_fresh_id_when_the_first_collides():
    store = FakeMemoryStore()
    store.seed(memory(ALICE, "na222", "already here"))
    jev = ScriptedJev(add=0.9)
    result = extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange())
    assert result.added == ["nb222"]
    assert store.get(MINE, "na222").text == "already here"


def test_other_speakers_are_never_touched(store):
    seed_profile(store, ALICE)
    bobs = seed_profile(store, BOB)
    jev = ScriptedJev(add=0.9)
    jev.default_verdict = Verdict.DELETE
    extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange())
    assert store.of(BOB) == sorted(bobs, key=lambda m: m.updated_at, reverse=True)
    assert {e.user_id for e in store.ledger} == {ALICE}
    assert all(m.user_id == ALICE for _, m in jev.calls if isinstance(m, Memory))


def test_the_model_calls_are_counted(store):
    a, b, _ = seed_profile(store)
    jev = ScriptedJev(verdicts={a.memory_id: Verdict.UPDATE, b.memory_id: Verdict.DELETE}, add=0.9)
    result = extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange())
    # worth + 3 verdicts + add decision + 1 rewrite + 1 add text
    assert result.model_calls == 7
    assert (result.updated, result.deleted, len(result.added)) == ([a.memory_id], [b.memory_id], 1)


def test_the_same_person_in_another_scope_is_never_touched(store):
    elsewhere = memory(ALICE, "zz222", "learned in another server", scope="guild:2")
    store.seed(elsewhere)
    seed_profile(store, ALICE)
    jev = ScriptedJev(add=0.9)
    jev.default_verdict = Verdict.DELETE
    result = extractor(store, jev, ScriptedChat()).run(ME, SCOPE, exchange())
    assert store.of(owner(ALICE, "guild:2")) == [elsewhere]
    assert "zz222" not in jev.asked("verdict") and len(result.deleted) == 3
    assert {e.owner for e in store.ledger} == {MINE}
    assert all(m.scope == SCOPE for m in store.of(MINE))
