"""/memory history and its Undo with fakes of the ports: what each change reads as, which are
undoable, paging, and the Undo under the rollback's conditions (changed since, forget-all,
erasure), with its own ledger row."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from fakes import T0, Clock, FakeMemoryStore, FakePeopleStore, memory, owner
from memorybot.core.record.changes import DECAY_REASON, Change
from memorybot.core.record.domain import Action, Actor, utcnow
from memorybot.core.rights import commands
from memorybot.core.rights.history import ChangeKind, UndoOutcome, Who, history, undo

A = owner("a", "guild:1")


def world():
    clock = Clock(T0)
    people = FakePeopleStore()
    store = FakeMemoryStore(clock, people=people)
    return store, people, clock


def add(store, memory_id, text, actor=Actor.EXTRACTION, at=T0):
    m = memory("a", memory_id, text, at=at, scope=A.scope)
    return store.apply(Change(Action.ADD, None, m, "jev: add"), actor=actor)


def update(store, memory_id, text, actor=Actor.EXTRACTION, clock=None):
    current = store.get(A, memory_id)
    after = dataclasses.replace(current, text=text, updated_at=clock() if clock else current.updated_at)
    return store.apply(Change(Action.UPDATE, current, after, "jev: update"), actor=actor)


def test_each_change_says_what_it_was_who_made_it_and_the_start_of_before_and_after():
    store, people, clock = world()
    add(store, "mem22", "likes tea")
    update(store, "mem22", "likes green tea " + "x" * 200, clock=clock)
    add(store, "mem23", "plays go", actor=Actor.IMPORT)
    add(store, "mem24", "had a cold", actor=Actor.NIGHTLY)
    store.apply(Change(Action.DELETE, store.get(A, "mem24"), None, DECAY_REASON), actor=Actor.NIGHTLY)
    commands.forget(store, A, "mem23")
    page = history(store, A, people=people, limit=10)
    got = [(line.memory_id, line.kind, line.who) for line in page.lines]
    assert got == [
        ("mem23", ChangeKind.FORGOTTEN, Who.YOU),
        ("mem24", ChangeKind.DECAYED, Who.NIGHT),
        ("mem24", ChangeKind.ADDED, Who.NIGHT),
        ("mem23", ChangeKind.IMPORTED, Who.IMPORT),
        ("mem22", ChangeKind.UPDATED, Who.CONVERSATION),
        ("mem22", ChangeKind.ADDED, Who.CONVERSATION),
    ]
    updated = page.lines[4]
    assert (updated.before, len(updated.after)) == ("likes tea", 80)  # the first 80 characters
    assert page.older == ""
    # Only what is still current can be undone: the update (not the add it replaced), the forget,
    # the decay (not the add the decay removed).
    assert [line.undoable for line in page.lines] == [True, True, False, False, True, False]


def test_history_is_the_owners_own_in_this_scope_and_is_logged_as_a_read():
    store, people, clock = world()
    add(store, "mem22", "likes tea")
    store.apply(Change(Action.ADD, None, memory("b", "mem29", "likes coffee", scope=A.scope), "x"), actor=Actor.NIGHTLY)
    store.apply(Change(Action.ADD, None, memory("a", "mem28", "elsewhere", scope="guild:2"), "x"), actor=Actor.NIGHTLY)
    page = history(store, A, people=people)
    assert [line.memory_id for line in page.lines] == ["mem22"]
    [read] = [e for e in store.ledger_for(A) if e.action is Action.READ]
    assert (read.actor, read.memory_ids, read.reason) == (Actor.COMMAND, ("mem22",), "memory history")


def test_pages_go_on_from_the_oldest_shown_to_older_ones_without_repeats():
    store, people, clock = world()
    for i in range(8):
        add(store, f"m{i:04d}", f"fact {i}")
    first = history(store, A, limit=3)
    second = history(store, A, limit=3, older_than=first.older)
    third = history(store, A, limit=3, older_than=second.older)
    ids = [line.memory_id for page in (first, second, third) for line in page.lines]
    assert ids == [f"m{i:04d}" for i in range(7, -1, -1)]
    assert first.older and second.older and third.older == ""


def test_undo_of_an_update_restores_the_previous_text_with_an_undo_row_by_command():
    store, people, clock = world()
    add(store, "mem22", "lives in Osaka")
    update(store, "mem22", "lives in Kyoto", clock=clock)
    before = store.get(A, "mem22")
    [line] = [line for line in history(store, A).lines if line.kind is ChangeKind.UPDATED]
    result = undo(store, A, line.key)
    assert (result.outcome, result.memory_id, result.kind) == (UndoOutcome.UNDONE, "mem22", ChangeKind.UPDATED)
    assert store.get(A, "mem22").text == "lives in Osaka"
    row = store.changes()[-1]
    assert (row.action, row.actor, row.before, row.after.text) == (Action.UNDO, Actor.COMMAND, before, "lives in Osaka")
    # The undo is a change of its own: listed as undone, and undoable in turn; the update no longer is.
    lines = history(store, A).lines
    assert (lines[0].kind, lines[0].undoable) == (ChangeKind.UNDONE, True)
    assert [line.undoable for line in lines if line.kind is ChangeKind.UPDATED] == [False]


def test_undo_of_an_add_deletes_it_and_of_a_decay_brings_it_back_with_its_id():
    store, people, clock = world()
    added = add(store, "mem22", "plays go")
    assert undo(store, A, added.key).outcome is UndoOutcome.UNDONE
    assert store.get(A, "mem22") is None
    old = add(store, "mem23", "had a cold", at=T0 - timedelta(days=40))
    decayed = store.apply(Change(Action.DELETE, store.get(A, "mem23"), None, DECAY_REASON), actor=Actor.NIGHTLY)
    assert undo(store, A, decayed.key).outcome is UndoOutcome.UNDONE
    assert store.get(A, "mem23") == old.after


def test_a_change_made_since_is_never_overwritten_and_writes_nothing():
    store, people, clock = world()
    first = add(store, "mem22", "lives in Osaka")
    update(store, "mem22", "lives in Kyoto", clock=clock)
    rows = len(store.changes())
    result = undo(store, A, first.key)  # the add: the record is no longer what it wrote
    assert (result.outcome, result.memory_id) == (UndoOutcome.CHANGED, "mem22")
    assert store.get(A, "mem22").text == "lives in Kyoto" and len(store.changes()) == rows
    # Undone once, the same undo again finds the record changed (by the undo itself).
    [upd] = [line for line in history(store, A).lines if line.kind is ChangeKind.UPDATED]
    assert undo(store, A, upd.key).outcome is UndoOutcome.UNDONE
    assert undo(store, A, upd.key).outcome is UndoOutcome.CHANGED


def test_what_forget_all_removed_is_never_brought_back_nor_offered():
    store, people, clock = world()
    add(store, "mem22", "lives in Osaka")
    clock.now += timedelta(minutes=1)
    commands.forget_all(store, A, people, clock=clock)
    [gone] = [line for line in history(store, A, people=people).lines if line.kind is ChangeKind.FORGOTTEN]
    assert not gone.undoable
    rows = len(store.changes())
    assert undo(store, A, gone.key).outcome is UndoOutcome.FINAL
    assert store.get(A, "mem22") is None and len(store.changes()) == rows


def test_a_single_forget_can_be_undone_by_its_owner():
    store, people, clock = world()
    add(store, "mem22", "lives in Osaka")
    commands.forget(store, A, "mem22")
    [gone] = [line for line in history(store, A, people=people).lines if line.kind is ChangeKind.FORGOTTEN]
    assert gone.undoable
    assert undo(store, A, gone.key).outcome is UndoOutcome.UNDONE
    assert store.get(A, "mem22").text == "lives in Osaka"


def test_an_erased_row_cannot_be_undone_and_shows_no_text():
    store, people, clock = world()
    add(store, "mem22", "lives in Osaka")
    entry = store.apply(
        Change(Action.DELETE, store.get(A, "mem22"), None, "erasure"), actor=Actor.OPERATOR, redacted=True
    )
    people.erased("a", utcnow())
    [line] = [line for line in history(store, A, people=people).lines if line.kind is ChangeKind.ERASED]
    assert (line.redacted, line.undoable, line.before, line.who) == (True, False, "", Who.OPERATOR)
    assert undo(store, A, entry.key).outcome is UndoOutcome.FINAL
    assert store.get(A, "mem22") is None


def test_someone_elses_change_or_a_read_row_is_not_found():
    store, people, clock = world()
    theirs = store.apply(
        Change(Action.ADD, None, memory("b", "mem29", "likes coffee", scope=A.scope), "x"), actor=Actor.NIGHTLY
    )
    assert undo(store, A, theirs.key).outcome is UndoOutcome.NOT_FOUND
    assert store.get(owner("b", A.scope), "mem29") is not None
    add(store, "mem22", "likes tea")
    history(store, A)
    [read] = [e for e in store.ledger_for(A) if e.action is Action.READ]
    assert undo(store, A, read.key).outcome is UndoOutcome.NOT_FOUND
    assert undo(store, A, "not-a-key").outcome is UndoOutcome.NOT_FOUND
