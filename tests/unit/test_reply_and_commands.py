"""The read paths: the reply prompt, show, autocomplete suggestions, and forget."""

from __future__ import annotations

from datetime import timedelta

import pytest

from fakes import T0, FakeMemoryStore, ScriptedChat, memory, message, owner
from memorybot.core.record.domain import Action, Actor
from memorybot.core.rights import commands
from memorybot.core.turn.reply import ReplyWriter

ALICE, BOB = "100", "200"
ME, HER = owner(ALICE), owner(BOB)  # their profiles in the (default) global scope
LETTERS = "abcdefghjkmn"  # twelve memories: ids aaaaa .. anaaa, oldest first


def alice_id(i: int) -> str:
    return f"a{LETTERS[i]}aaa"


@pytest.fixture
def store():
    s = FakeMemoryStore()
    for i in range(12):
        s.seed(memory(ALICE, alice_id(i), f"alice fact {i}", at=T0 + timedelta(minutes=i)))
    s.seed(memory(BOB, "bbbbb", "bob's secret: allergic to cats"))
    return s


def conversation():
    return [
        message(BOB, "hi", name="bob"),
        message(ALICE, "what should I cook?", name="alice"),
    ]


def test_reply_prompt_is_one_system_message_with_only_the_speakers_memories_then_the_conversation(store):
    chat = ScriptedChat(reply="pasta")
    assert ReplyWriter(store, chat).reply(ME, "alice", conversation()) == "pasta"
    [(_, prompt)] = chat.seen
    roles = [p.role for p in prompt]
    assert roles == ["system", "user", "user"]
    system = prompt[0].content
    assert "alice fact 11" in system and "alice fact 2" in system
    assert "alice fact 1\n" not in system + "\n" and "alice fact 0" not in system  # only the newest ten
    assert "allergic" not in "".join(p.content for p in prompt)
    # The line's exact markup is the prompt adapters' business (tests/unit/test_speaker_prompts.py).
    assert "what should I cook?" in prompt[2].content and "hi" not in prompt[2].content


def test_reply_read_is_logged_with_actor_reply(store):
    ReplyWriter(store, ScriptedChat()).reply(ME, "alice", conversation())
    [read] = store.ledger
    assert (read.user_id, read.action, read.actor, len(read.memory_ids)) == (ALICE, Action.READ, Actor.REPLY, 10)


def test_bot_turns_become_assistant_turns():
    store = FakeMemoryStore()
    chat = ScriptedChat()
    convo = conversation() + [message("9", "try curry", name="memorybot", bot=True)]
    ReplyWriter(store, chat).reply(ME, "alice", convo)
    [(_, prompt)] = chat.seen
    assert prompt[-1].role == "assistant" and prompt[-1].content == "try curry"
    assert "nothing yet" in prompt[0].content


def test_a_failed_chat_model_raises_for_the_caller_to_apologise():
    chat = ScriptedChat()
    chat.fail = {"write_reply"}
    with pytest.raises(Exception):
        ReplyWriter(FakeMemoryStore(), chat).reply(ME, "alice", conversation())


def test_show_lists_every_memory_newest_first_as_id_space_first_80_characters_and_logs_actor_command(store):
    long = memory(ALICE, "zzzzz", "x" * 79 + "yz and more", at=T0 + timedelta(days=1))
    store.seed(long)
    lines = commands.show(store, ME)
    assert len(lines) == 13  # all of them, past the design's read limit of ten
    assert lines[0] == "zzzzz " + "x" * 79 + "y"
    assert lines[1] == f"{alice_id(11)} alice fact 11"
    assert [line.split(" ")[0] for line in lines[1:]] == [alice_id(i) for i in range(11, -1, -1)]
    [read] = store.ledger
    assert (read.actor, read.action, read.user_id) == (Actor.COMMAND, Action.READ, ALICE)
    assert len(read.memory_ids) == 13


def test_show_never_lists_another_persons_memories(store):
    assert all("bob" not in line for line in commands.show(store, ME))
    assert commands.show(store, HER) == ["bbbbb bob's secret: allergic to cats"]


def test_forget_removes_the_row_for_real_and_keeps_the_before_state_in_the_ledger(store):
    target = store.get(ME, "afaaa")
    assert target is not None
    result = commands.forget(store, ME, " AFAAA ")
    assert result.outcome is commands.ForgetOutcome.FORGOTTEN
    assert store.get(ME, "afaaa") is None
    [row] = store.changes()
    assert (row.action, row.actor, row.before, row.after) == (Action.DELETE, Actor.COMMAND, target, None)
    assert "afaaa" not in [line.split()[0] for line in commands.show(store, ME)]


@pytest.mark.parametrize("memory_id", ["bbbbb", "nope!", "", "afaaa' OR 1=1", "1" * 200])
def test_forget_of_an_id_that_is_not_the_callers_is_not_found_and_deletes_nothing(store, memory_id):
    rows_before = dict(store.rows)
    result = commands.forget(store, ME, memory_id)
    assert result.outcome is commands.ForgetOutcome.NOT_FOUND
    assert store.rows == rows_before and store.changes() == []


def test_forget_twice_is_not_found_the_second_time(store):
    commands.forget(store, ME, "afaaa")
    assert commands.forget(store, ME, "afaaa").outcome is commands.ForgetOutcome.NOT_FOUND
    assert len(store.changes()) == 1


def test_suggestions_are_the_callers_own_matching_memories_and_the_read_is_logged(store):
    suggestions = commands.suggest(store, ME, "fact 1")
    # "fact 1" matches facts 1, 10 and 11: every memory is searched, not only the ten newest
    assert [memory_id for memory_id, _ in suggestions] == [alice_id(11), alice_id(10), alice_id(1)]
    assert commands.suggest(store, ME, alice_id(7)) == [(alice_id(7), f"{alice_id(7)} alice fact 7")]
    assert commands.suggest(store, ME, "cats") == []
    reads = [e for e in store.ledger if e.action is Action.READ]
    assert len(reads) == 3  # one per autocomplete request
    assert all(r.actor is Actor.COMMAND and r.user_id == ALICE for r in reads)


def test_show_forget_and_suggest_stay_in_the_callers_scope():
    """The same person in another server (or the DM) is another profile: not listed, not found."""
    store = FakeMemoryStore()
    here, there = owner(ALICE, "guild:1"), owner(ALICE, "guild:2")
    store.seed(
        memory(ALICE, "hhhhh", "learned here", scope="guild:1"),
        memory(ALICE, "ttttt", "learned there", scope="guild:2"),
    )
    assert commands.show(store, here) == ["hhhhh learned here"]
    assert commands.suggest(store, here, "learned") == [("hhhhh", "hhhhh learned here")]
    assert commands.forget(store, here, "ttttt").outcome is commands.ForgetOutcome.NOT_FOUND
    assert store.get(there, "ttttt") is not None and store.changes() == []
    assert all(e.owner == here for e in store.ledger)
