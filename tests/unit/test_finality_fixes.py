"""Small hardening of the commands, each through the interactions handler signed like Discord, on
moto tables: a forget-all button usable once, a confirmation time out of range answered as
expired, lone surrogates stored replaced, a replayed /chat not handed on again, and the
forget-all prompt's count logged as what it is."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from frontdoor import ALICE, CHANNEL, body_of, chat, click, context, event, forget_all, owner, seed
from memorybot.core.record.catalog import text
from memorybot.core.record.domain import Action, Actor
from memorybot.core.rights.commands import FORGET_ALL_COUNT_REASON
from memorybot.discord import interactions
from memorybot.discord.requests import FORGET_ALL_BUTTON, forget_all_button
from memorybot.handlers import extraction
from memorybot.handlers.interactions import handler


def call(payload):
    return body_of(handler(event(payload), context()))


def held(front, *memory_ids: str) -> list[str]:
    """Which of these memories alice still has (read without a ledger row of its own)."""
    return [m for m in memory_ids if front.memory_store.get(owner(ALICE), m) is not None]


def changes(front):
    return [e for e in front.memory_store.ledger_for(owner(ALICE), limit=None) if e.action is not Action.READ]


def reads(front):
    return [e for e in front.memory_store.ledger_for(owner(ALICE), limit=None) if e.action is Action.READ]


def run_jobs(front) -> list[dict]:
    """The hand-offs so far, run as the extraction worker runs them (a forget-all's deletes)."""
    answers = [extraction.handler(job, context("memorybot-extraction")) for _, job in front.invoker.calls]
    front.invoker.calls.clear()
    return answers


def test_a_forget_all_button_works_once_and_a_second_press_deletes_nothing_learned_since(front):
    seed(front.memory_store, ALICE, "abcde", "Likes kites")
    seed(front.memory_store, ALICE, "bcdef", "Drinks tea")
    button = forget_all_button(ALICE, datetime.now(UTC))
    first = call(click(button))
    assert first["type"] == interactions.UPDATE_MESSAGE and first["data"]["components"] == []
    assert first["data"]["content"].startswith("Forgetting every memory")
    assert [worker for worker, _ in front.invoker.calls] == ["extraction"]  # the deletes run as a job
    assert held(front, "abcde", "bcdef") == ["abcde", "bcdef"]  # not inside the 3 s
    assert run_jobs(front) == [{"forgotten": 2}]
    [edit] = [e for e in front.recorder.events if e.kind == "edit"]
    assert "Forgotten: 2 memories" in edit.body["content"]  # the confirmation says when it is done

    seed(front.memory_store, ALICE, "cdefg", "Plays the cello")  # learned after the confirmation
    again = call(click(button))  # the same button pressed again (or the click replayed)
    assert again == first and front.invoker.calls == []  # the first answer, and no second job
    assert held(front, "abcde", "bcdef", "cdefg") == ["cdefg"]
    deletes = [e for e in changes(front) if e.action is Action.DELETE]
    assert sorted(e.memory_ids for e in deletes) == [("abcde",), ("bcdef",)]

    # A new confirmation is a new button: it works.
    later = call(click(f"{FORGET_ALL_BUTTON}:{ALICE}:{int(datetime.now(UTC).timestamp()) + 1}"))
    assert later["data"]["content"].startswith("Forgetting every memory")
    assert run_jobs(front) == [{"forgotten": 1}]


def test_a_second_forget_all_while_the_first_job_runs_starts_nothing(front):
    seed(front.memory_store, ALICE, "abcde", "Likes kites")
    now = int(datetime.now(UTC).timestamp())
    first = call(click(f"{FORGET_ALL_BUTTON}:{ALICE}:{now}"))
    assert first["data"]["content"].startswith("Forgetting every memory")
    other = call(click(f"{FORGET_ALL_BUTTON}:{ALICE}:{now + 1}"))  # asked again and confirmed, job not done
    assert other["data"]["content"] == text("forget_all_running", where=_where(first))
    assert len(front.invoker.calls) == 1  # one job
    run_jobs(front)
    assert held(front, "abcde") == []
    # Done: a new forget-all may start again.
    assert call(click(f"{FORGET_ALL_BUTTON}:{ALICE}:{now + 2}"))["data"]["content"].startswith("Forgetting")


def _where(answer: dict) -> str:
    return answer["data"]["content"].removeprefix("Forgetting every memory I have about you ").split(":")[0]


@pytest.mark.parametrize(
    "asked_at",
    [
        253402300800,  # 10000-01-01T00:00:00Z: past datetime's last year
        999999999999,  # the largest time the custom_id's pattern admits
        0,
    ],
)
def test_a_confirmation_time_out_of_range_is_answered_as_expired(front, asked_at):
    seed(front.memory_store, ALICE, "abcde", "Likes kites")
    answer = call(click(f"{FORGET_ALL_BUTTON}:{ALICE}:{asked_at}"))
    assert answer["data"]["content"] == text("forget_all_expired")
    assert held(front, "abcde") == ["abcde"]


def test_lone_surrogates_in_a_name_and_a_message_are_stored_replaced_not_refused_by_the_store(front):
    payload = chat("I like \ud83c tea \udfff", user_name="Ann\ud800e")
    payload["member"]["nick"] = "Ann\ud800e \U0001f600"  # a valid pair stays as it is
    answer = call(payload)  # json.dumps writes the lone halves as "\ud800" escapes, as a client could
    assert answer == {"type": interactions.DEFERRED_CHANNEL_MESSAGE}
    [stored] = front.message_store.recent(CHANNEL, 10)
    assert stored.author_name == "Ann\ufffde \U0001f600"
    assert stored.content == "I like \ufffd tea \ufffd"
    [(worker, job)] = front.invoker.calls
    assert worker == "reply" and job["user_name"] == "Ann\ufffde \U0001f600"


def test_a_replayed_chat_is_answered_the_same_and_not_handed_on_again(front):
    payload = chat("I started learning the violin")
    first = call(payload)
    replay = call(payload)  # the same signed interaction again, inside the signature window
    assert first == replay == {"type": interactions.DEFERRED_CHANNEL_MESSAGE}
    assert len(front.invoker.calls) == 1  # one reply job: a second would only find the first in progress
    assert len(front.message_store.recent(CHANNEL, 10)) == 1


def test_the_forget_all_prompt_logs_its_count_as_a_count_not_as_a_show(front):
    seed(front.memory_store, ALICE, "abcde", "Likes kites")
    seed(front.memory_store, ALICE, "bcdef", "Drinks tea")
    asked = call(forget_all())
    assert "Forget all 2 memories" in asked["data"]["content"]
    [row] = reads(front)
    assert (row.actor, row.reason) == (Actor.COMMAND, FORGET_ALL_COUNT_REASON)
    assert sorted(row.memory_ids) == ["abcde", "bcdef"]  # what was read to count, said as such
    assert all(e.reason != "memory show" for e in reads(front))
