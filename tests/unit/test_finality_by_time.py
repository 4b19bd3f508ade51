"""A forget-all is final by the times the bot kept, not by a record's own stamps, on the fakes of
our ports: nothing said before it teaches (a live turn, "Remember this" on an older message, a
turn already in flight), and nothing that existed when it ran comes back (an Undo, a rollback,
an import begun before it), whatever the memory's ``updated_at`` says."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from fakes import (
    T0,
    Clock,
    FakeMemoryStore,
    FakePeopleStore,
    FakeRunStore,
    ScriptedChat,
    ScriptedJev,
    memory,
    message,
    owner,
    speaker,
)
from memorybot.core.record.changes import Change, NightlyRun
from memorybot.core.record.domain import Action, Actor, Owner, ScopeMode
from memorybot.core.rights import commands
from memorybot.core.rights.history import UndoOutcome, history, undo
from memorybot.core.rights.importing import Importer, parse_import
from memorybot.core.rights.rollback import Rollback
from memorybot.core.turn.extraction import Extractor, Outcome

SCOPE = "guild:1"
USER = "111111111111111111"


def stores(clock: Clock) -> tuple[FakePeopleStore, FakeMemoryStore]:
    people = FakePeopleStore()
    memories = FakeMemoryStore(clock, people=people)
    people.ledger_to = memories
    return people, memories


def said(*texts: str, start=T0) -> list:
    return [message(USER, t, at=start + timedelta(minutes=n), scope=SCOPE) for n, t in enumerate(texts)]


def test_a_live_turn_reaching_back_before_a_forget_all_learns_only_what_was_said_after_it():
    clock = Clock(T0 + timedelta(minutes=1, seconds=30))
    people, memories = stores(clock)
    lines = said("I work at Sony", "I like tea", "I started pottery")  # T0, T0+1 min, T0+2 min
    commands.forget_all(memories, owner(USER, SCOPE), people, clock=clock)  # between the 2nd and the 3rd
    jev = ScriptedJev()
    result = Extractor(memories, jev, ScriptedChat(), people=people).run(speaker(USER), SCOPE, lines)
    assert result.added and [e.speaker_said() for e in jev.asked("worth")] == [["I started pottery"]]
    [learned] = memories.of(owner(USER, SCOPE))
    assert [ref.message_id for ref in learned.sources] == [lines[2].message_id]


def test_remember_this_on_a_message_from_before_a_forget_all_asks_no_model_and_learns_nothing():
    clock = Clock(T0 + timedelta(hours=1))
    people, memories = stores(clock)
    commands.forget_all(memories, owner(USER, SCOPE), people, clock=clock)
    jev, chat = ScriptedJev(), ScriptedChat()
    older = said("My cat is called Tama")  # said at T0, before the forget-all
    result = Extractor(memories, jev, chat, people=people).run(speaker(USER), SCOPE, older, actor=Actor.COMMAND)
    assert result.outcome is Outcome.NO_EXCHANGE
    assert jev.calls == [] and chat.seen == [] and memories.of(owner(USER, SCOPE)) == []
    # In another scope the same person's words still teach.
    elsewhere = [replace(m, scope="guild:2") for m in older]
    assert (
        Extractor(memories, ScriptedJev(), ScriptedChat(), people=people).run(speaker(USER), "guild:2", elsewhere).added
    )


def test_a_turn_in_flight_when_the_forget_all_is_confirmed_writes_nothing():
    clock = Clock(T0 + timedelta(hours=1))
    people, memories = stores(clock)

    class ForgettingJev(ScriptedJev):
        def worth(self, exchange):  # the person confirms while the models think
            commands.forget_all(memories, owner(USER, SCOPE), people, clock=clock)
            return super().worth(exchange)

    result = Extractor(memories, ForgettingJev(), ScriptedChat(), people=people).run(
        speaker(USER), SCOPE, said("I like tea")
    )
    assert result.added == [] and result.conflicts == 1
    assert memories.of(owner(USER, SCOPE)) == [] and all(e.action is not Action.ADD for e in memories.ledger)


def ahead_of_the_clock(clock: Clock, memory_id: str):
    """A memory whose stamps say four minutes from now (an import's accepted skew)."""
    ahead = clock.now + timedelta(minutes=4)
    return replace(memory(USER, memory_id, "Collects antique clocks", scope=SCOPE), created_at=ahead, updated_at=ahead)


def test_an_undo_does_not_bring_back_a_memory_stamped_ahead_of_the_clock_that_a_forget_all_deleted():
    clock = Clock(T0)
    people, memories = stores(clock)
    memories.apply(Change(Action.ADD, None, ahead_of_the_clock(clock, "abcde"), "operator import"), actor=Actor.IMPORT)
    A = owner(USER, SCOPE)
    commands.forget_all(memories, A, people, clock=clock)
    [gone] = [line for line in history(memories, A, people=people).lines if line.kind.value == "forgotten"]
    assert not gone.undoable
    rows = len(memories.ledger)
    assert undo(memories, A, gone.key).outcome is UndoOutcome.FINAL
    assert memories.get(A, "abcde") is None and len(memories.ledger) == rows


def test_a_rollback_does_not_restore_a_future_stamped_state_current_before_the_forget_all_was_done():
    clock = Clock(T0)
    people, memories = stores(clock)
    runs = FakeRunStore()
    decayed = ahead_of_the_clock(clock, "abcde")
    memories.seed(decayed)
    runs.runs[1] = NightlyRun(1, "2026-11-20", clock(), finished_at=clock())
    memories.apply(Change(Action.DELETE, decayed, None, "decay"), actor=Actor.NIGHTLY, run_id=1)
    commands.forget_all(memories, owner(USER, SCOPE), people, clock=clock)
    result = Rollback(memories, runs, clock=clock, people=people).run(1)
    assert result.skipped == ["abcde"] and result.reverted == []
    assert memories.get(owner(USER, SCOPE), "abcde") is None


def test_while_the_job_runs_nothing_is_restored_in_that_scope_and_after_it_a_later_change_is():
    clock = Clock(T0)
    people, memories = stores(clock)
    A = owner(USER, SCOPE)
    started = commands.begin_forget_all(people, A, "job-1", clock())
    assert started is not None
    assert commands.begin_forget_all(people, A, "job-2", clock()) is None  # one at a time
    learned = memory(USER, "fghjk", "Plays the cello", at=clock(), scope=SCOPE)  # learned after it began
    memories.apply(Change(Action.ADD, None, learned, "extraction"), actor=Actor.EXTRACTION)
    memories.apply(Change(Action.DELETE, learned, None, "user asked to forget"), actor=Actor.COMMAND)
    [forgot] = [line for line in history(memories, A, people=people).lines if line.kind.value == "forgotten"]
    assert not forgot.undoable  # the job runs: nothing comes back in that scope yet
    commands.forget_all(memories, A, people, started=started, clock=clock)  # the job: it ends the run
    assert history(memories, A, people=people).lines[0].undoable is False  # deleted before it was done
    relearned = memory(USER, "mnpqr", "Plays the viola", at=clock(), scope=SCOPE)
    memories.apply(Change(Action.ADD, None, relearned, "extraction"), actor=Actor.EXTRACTION)
    memories.apply(Change(Action.DELETE, relearned, None, "user asked to forget"), actor=Actor.COMMAND)
    newest = history(memories, A, people=people).lines[0]
    assert newest.memory_id == "mnpqr" and newest.undoable
    assert undo(memories, A, newest.key).outcome is UndoOutcome.UNDONE


def test_an_import_begun_before_a_forget_all_adds_nothing_in_that_scope_after_it():
    clock = Clock(T0 + timedelta(hours=1))
    people, memories = stores(clock)
    rows = [
        {"userId": USER, "scope": scope, "text": "Keeps bees", "createdAt": "2026-03-01T10:00:00Z"}
        for scope in ("guild:900000000000000001", "guild:900000000000000002")
    ]
    request = parse_import({"memories": rows}, now=clock.now)
    began = clock.now
    commands.forget_all(memories, Owner("guild:900000000000000001", USER), people, clock=clock)  # while it runs
    result = Importer(memories, ScopeMode.GUILD, clock=lambda: began).run(request)
    assert result.imported == 1
    assert [m.scope for m in memories.rows.values()] == ["guild:900000000000000002"]
