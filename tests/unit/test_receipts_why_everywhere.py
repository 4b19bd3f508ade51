"""Receipts, a reply's "Why?" and "everywhere" memories with fakes of the ports: when a receipt is
sent and what it holds, the night's note told once, the prompt's memories from the named read row,
the choice of ten over both of a person's profiles (each read's row naming its own), and moves."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from fakes import T0, Clock, FakeMemoryStore, FakePeopleStore, memory, owner
from memorybot.core.prompting.both_scopes import read_both
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import EVERYWHERE_SCOPE, Action, Actor, Owner, snowflake_at
from memorybot.core.rights import everywhere, receipts, why
from memorybot.core.rights.history import ChangeKind, UndoOutcome, history, undo
from memorybot.discord.receipts_view import receipt_message

A = owner("a", "guild:1")
YOURS = Owner(EVERYWHERE_SCOPE, "a")


class Discord:
    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[str, str, str, list]] = []
        self.fail = fail

    def follow_up(self, application_id, token, content, components=()):
        if self.fail:
            raise RuntimeError("discord down")
        self.sent.append(("follow_up", token, content, list(components)))
        return "1"

    def edit_original(self, application_id, token, content, components=()):
        self.sent.append(("edit", token, content, list(components)))
        return "1"


def world():
    clock = Clock(T0)
    people = FakePeopleStore()
    return FakeMemoryStore(clock, people=people), people, clock


def add(store, memory_id, text, scope=A.scope, at=T0):
    m = memory("a", memory_id, text, at=at, scope=scope)
    return store.apply(Change(Action.ADD, None, m, "jev: add"), actor=Actor.EXTRACTION)


def interaction(at=T0):
    return receipts.Interaction(snowflake_at(at), "1", "token-1")


def test_a_receipt_lists_each_change_with_the_historys_undo_and_is_sent_once():
    store, people, clock = world()
    added = add(store, "mem22", "likes tea")
    current = store.get(A, "mem22")
    updated = store.apply(
        Change(Action.UPDATE, current, dataclasses.replace(current, text="likes green tea"), "jev: update"),
        actor=Actor.EXTRACTION,
    )
    receipt = receipts.receipt_of("a", "", [added, updated])
    assert [(line.kind, line.before, line.after) for line in receipt.lines] == [
        (ChangeKind.ADDED, "", "likes tea"),
        (ChangeKind.UPDATED, "likes tea", "likes green tea"),
    ]
    discord = Discord()
    assert receipts.deliver(people, discord, receipt_message, interaction(), receipt, clock=lambda: T0)
    [(kind, _, content, rows)] = discord.sent
    assert kind == "follow_up" and "likes tea” → “likes green tea" in content
    buttons = [b["custom_id"] for row in rows for b in row["components"]]
    assert buttons == [f"memory-undo:a:{added.key}", f"memory-undo:a:{updated.key}"]
    # the history offers the same row (the update's) for Undo
    page = history(store, A, people=people)
    assert [line.key for line in page.lines if line.undoable] == [updated.key]


def test_no_receipt_for_nothing_when_off_when_the_token_is_old_or_someone_elses_rows():
    store, people, clock = world()
    added = add(store, "mem22", "likes tea")
    discord = Discord()
    empty = receipts.receipt_of("a", "", [])
    assert not receipts.deliver(people, discord, receipt_message, interaction(), empty, clock=lambda: T0)
    assert receipts.receipt_of("b", "", [added]).lines == ()  # never another person's change
    receipt = receipts.receipt_of("a", "", [added])
    late = T0 + timedelta(minutes=14)
    assert not receipts.deliver(people, discord, receipt_message, interaction(), receipt, clock=lambda: late)
    assert people.set_receipts("a", False) and not people.set_receipts("a", False)
    assert not receipts.deliver(people, discord, receipt_message, interaction(), receipt, clock=lambda: T0)
    assert discord.sent == []
    # a failed send is no failure of the turn
    people.set_receipts("a", True)
    assert not receipts.deliver(people, Discord(fail=True), receipt_message, interaction(), receipt, clock=lambda: T0)


def test_the_nights_note_is_told_once_and_put_back_when_it_could_not_be_sent():
    store, people, clock = world()
    night = add(store, "mem22", "likes tea")
    receipts.note_overnight(store, [night, night])  # a retried step adds nothing twice
    view = lambda count: (f"changed {count}", [])  # noqa: E731
    assert not receipts.tell_overnight(store, Discord(fail=True), interaction(), A, view)
    assert store.overnight(A) == {"mem22"}  # put back for the next use
    discord = Discord()
    assert receipts.tell_overnight(store, discord, interaction(), A, view)
    assert [content for _, _, content, _ in discord.sent] == ["changed 1"]
    assert not receipts.tell_overnight(store, discord, interaction(), A, view)  # told once


def test_why_answers_from_the_replys_named_read_row_and_says_what_changed_or_went():
    store, people, clock = world()
    add(store, "mem22", "likes tea")
    add(store, "mem23", "plays go")
    asked = snowflake_at(clock() - timedelta(seconds=5))
    store.log_read(A, ("mem22", "mem23"), actor=Actor.REPLY, reason="reply prompt", entry_id=why.reply_read_id(asked))
    clock.now += timedelta(minutes=1)
    current = store.get(A, "mem22")
    store.apply(
        Change(Action.UPDATE, current, dataclasses.replace(current, text="likes green tea", updated_at=clock()), "u"),
        actor=Actor.EXTRACTION,
    )
    store.apply(Change(Action.DELETE, store.get(A, "mem23"), None, "f"), actor=Actor.COMMAND)
    answer = why.why_reply(store, everywhere.owners_read(A), asked)
    assert answer.found
    assert [(line.memory_id, line.state, line.text) for line in answer.lines] == [
        ("mem22", why.WhyState.CHANGED, "likes green tea"),
        ("mem23", why.WhyState.GONE, ""),
    ]
    assert store.ledger[-1].reason == why.WHY_REASON and store.ledger[-1].memory_ids == ("mem22",)
    # Another interaction's id (or another person's scope) finds nothing.
    assert not why.why_reply(store, [owner("b", "guild:1")], asked).found
    assert not why.why_reply(store, [A], snowflake_at(clock() + timedelta(hours=1))).found


def test_the_ten_are_chosen_from_both_profiles_and_each_read_row_names_its_own():
    store, people, clock = world()
    add(store, "mem22", "likes tea")
    add(store, "mem23", "plays go", scope=EVERYWHERE_SCOPE)
    chosen = read_both(store, A, lambda ms: sorted(ms, key=lambda m: m.memory_id), actor=Actor.REPLY, reason="r")
    assert [m.memory_id for m in chosen] == ["mem22", "mem23"]
    rows = {(e.scope, e.memory_ids) for e in store.ledger if e.action is Action.READ}
    assert rows == {(A.scope, ("mem22",)), (EVERYWHERE_SCOPE, ("mem23",))}
    # None of the person's own chosen: no row in their scope.
    store.ledger.clear()
    only_here = read_both(store, A, lambda ms: [m for m in ms if m.scope == A.scope], actor=Actor.REPLY, reason="r")
    assert [m.memory_id for m in only_here] == ["mem22"]
    assert [e.scope for e in store.ledger if e.action is Action.READ] == [A.scope]
    # Unused (a paused person): nothing returned, no row at all.
    store.ledger.clear()
    assert read_both(store, A, lambda ms: ms, actor=Actor.REPLY, reason="r", unused_if=lambda: True) == []
    assert store.ledger == []


def test_a_failing_choice_or_read_ends_both_reads_without_a_row():
    store, people, clock = world()
    add(store, "mem22", "likes tea")

    def boom(ms):
        raise ValueError("no")

    with pytest.raises(ValueError):
        read_both(store, A, boom, actor=Actor.REPLY, reason="r")
    original = store.read_selected

    def failing(owner, choose, **kw):
        if owner.scope == EVERYWHERE_SCOPE:
            raise RuntimeError("query failed")
        return original(owner, choose, **kw)

    store.read_selected = failing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        read_both(store, A, lambda ms: ms, actor=Actor.REPLY, reason="r")
    assert [e for e in store.ledger if e.action is Action.READ] == []


def test_a_move_is_one_row_undone_from_the_history_and_never_reaches_another_person():
    store, people, clock = world()
    add(store, "mem22", "likes tea")
    moved = everywhere.move(store, A, "mem22", everywhere=True)
    assert moved.outcome is everywhere.MoveOutcome.MOVED
    assert store.get(A, "mem22") is None and store.get(YOURS, "mem22").text == "likes tea"
    row = moved.entry
    assert (row.action, row.scope, row.before.scope, row.after.scope) == (Action.MOVE, A.scope, "guild:1", "everywhere")
    assert (
        everywhere.move(store, owner("b", "guild:1"), "mem22", everywhere=False).outcome
        is everywhere.MoveOutcome.NOT_FOUND
    )
    [line] = [line for line in history(store, A, people=people).lines if line.kind is ChangeKind.MOVED]
    assert line.undoable
    assert undo(store, A, line.key).outcome is UndoOutcome.UNDONE
    assert store.get(A, "mem22").text == "likes tea" and store.get(YOURS, "mem22") is None
    assert undo(store, A, line.key).outcome is UndoOutcome.CHANGED  # once
    # the id taken where it would go: nothing written
    add(store, "mem22", "another", scope=EVERYWHERE_SCOPE)
    assert everywhere.move(store, A, "mem22", everywhere=True).outcome is everywhere.MoveOutcome.BLOCKED
    assert store.get(A, "mem22").text == "likes tea"


def test_a_receipts_undo_finds_a_change_of_an_everywhere_memory_and_an_export_of_them_imports():
    from memorybot.core.record.domain import ScopeMode
    from memorybot.core.rights.importing import is_scope, scope_unused

    store, people, clock = world()
    add(store, "mem22", "likes tea", scope=EVERYWHERE_SCOPE)
    current = store.get(YOURS, "mem22")
    changed = store.apply(
        Change(Action.UPDATE, current, dataclasses.replace(current, text="likes matcha"), "jev: update"),
        actor=Actor.EXTRACTION,
    )
    [line] = receipts.receipt_of("a", "", [changed]).lines
    assert undo(store, A, line.key).outcome is UndoOutcome.UNDONE  # pressed in the server it was said in
    assert store.get(YOURS, "mem22").text == "likes tea"
    assert is_scope(EVERYWHERE_SCOPE) and scope_unused(EVERYWHERE_SCOPE, ScopeMode.GUILD) is None
