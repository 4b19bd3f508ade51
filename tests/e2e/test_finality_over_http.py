"""Erasure and the forget-all confirmation tried as an attacker and an unlucky operator would, over
HTTP against the local stack in its own process. The chat model is a slow stand-in on loopback
(OpenAI-compatible), so a reply can be held in flight; the tables are on a moto server this test
reads too, to see what is stored."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import httpx
import pytest
from stack_process import StackOnMoto, loopback_models, stack_on_moto

from loopback.jev_server import JevServer
from loopback.openai_server import OpenAIServer
from memorybot.core.record.catalog import text
from memorybot.core.record.domain import is_memory_id
from memorybot.core.rights.commands import FORGET_ALL_COUNT_REASON
from memorybot.discord.requests import FORGET_ALL_BUTTON
from memorybot.local.client import LocalClient

ADMIN_SECRET = "finality-admin-secret-3"
PREFIX = "finality-"
COMPLETIONS = OpenAIServer.COMPLETIONS_PATH
HELD_SECONDS = 4.0  # how long (under the model timeout, 8 s) the slow chat model holds a reply open
_channels = itertools.count(1700000000000000001)


class Stack(StackOnMoto):
    jev: JevServer
    llm: OpenAIServer

    def erase(self, user_id: str) -> httpx.Response:
        return self.post("/memory/erase", {"userId": user_id})

    def stored_about(self, user_id: str) -> list[dict]:
        """Every stored message the person wrote or that answers them."""
        return [
            i
            for i in self.scan("messages")
            if i["author_id"]["S"] == user_id or i.get("conversation_of", {}).get("S") == user_id
        ]


@pytest.fixture(scope="module")
def stack(moto_server, tmp_path_factory):
    state_dir = tmp_path_factory.mktemp("finality-state")
    with JevServer(worth=0.9, add=0.9, verdict="keep", review="keep") as jev, OpenAIServer() as llm:
        models = loopback_models(jev.url, llm.url, chat=True)
        with stack_on_moto(
            Stack, moto_server, state_dir, models, _channels, prefix=PREFIX, admin_secret=ADMIN_SECRET
        ) as stack:
            stack.jev, stack.llm = jev, llm
            yield stack


@pytest.fixture(autouse=True)
def fresh_models(stack):
    stack.jev.clear()
    stack.llm.clear()
    yield
    stack.llm.set_delay(0.0, path=COMPLETIONS)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def hold_a_reply_open(stack: Stack, client: LocalClient, text: str) -> dict:
    """Send /chat and return once its reply is at the (slow) chat model: the turn is in flight."""
    asked = len(stack.llm.requests_to(COMPLETIONS))
    stack.llm.set_delay(HELD_SECONDS, path=COMPLETIONS)
    payload = client._payload("chat", [{"type": 3, "name": "message", "value": text}])
    assert client.send(payload) == (200, {"type": 5})
    wait_for(lambda: len(stack.llm.requests_to(COMPLETIONS)) > asked, "the reply to reach the chat model")
    return payload


# ---- replies found by the person they answer ------------------------------------------------------------


def test_an_erasure_finds_the_bots_reply_stored_after_an_earlier_erasure(stack):
    """The person chats; the operator erases them while the reply is in flight (their own line goes);
    the reply is then stored. A later erasure must find it by the person it answers: nothing the
    person wrote or was told stays in the messages table."""
    una = stack.person("una-inflight")
    hold_a_reply_open(stack, una, "I keep three beehives on my roof")
    first = stack.erase(una.user_id)
    assert first.status_code == 200, first.text
    assert stack.stored_about(una.user_id) == []  # her line is gone; the reply is still at the model
    stack.llm.set_delay(0.0, path=COMPLETIONS)
    stack.llm.release()  # the erasure is done: the reply need not be held any longer
    stack.drain()  # the reply posts and is stored after the erasure, with no line of hers left
    assert [e for e in stack.events() if e["kind"] == "edit"], "the reply was posted"

    again = stack.erase(una.user_id)
    assert again.status_code in (200, 404), again.text  # 404: nothing of hers was left to find
    assert stack.stored_about(una.user_id) == []


# ---- a replayed /chat ---------------------------------------------------------------------------------------


def test_a_replayed_chat_while_its_reply_is_in_flight_is_a_quiet_no_op(stack):
    vic = stack.person("vic-replay")
    failed_before = stack.drain()["failedInvocations"]
    seen = max([0] + [e["seq"] for e in stack.events()])
    payload = hold_a_reply_open(stack, vic, "I play the oboe in a small orchestra")
    assert vic.send(payload) == (200, {"type": 5})  # the same signed interaction again
    assert vic.send(payload) == (200, {"type": 5})
    stack.llm.set_delay(0.0, path=COMPLETIONS)
    stack.llm.release()  # both replays were answered (and found the line already heard) meanwhile
    assert stack.drain()["failedInvocations"] == failed_before  # no job failed, none was retried to death
    edits = [e for e in stack.events(seen) if e["kind"] == "edit" and e["interaction_token"] == payload["token"]]
    assert len(edits) == 1  # one reply
    stored = stack.stored_about(vic.user_id)
    assert sorted(i["is_bot"]["BOOL"] for i in stored) == [False, True]  # one line, one reply


# ---- names with invalid Unicode -----------------------------------------------------------------------------


def test_a_display_name_with_lone_surrogates_is_stored_cleaned_not_refused(stack):
    wes = stack.person("wes-surrogate")
    failed_before = stack.drain()["failedInvocations"]
    payload = wes._payload("chat", [{"type": 3, "name": "message", "value": "I grow chillies \udc00 on my balcony"}])
    payload["member"]["nick"] = "W\ud800es"  # sent as the JSON escape "\ud800", which nothing can encode
    assert wes.send(payload) == (200, {"type": 5})
    assert stack.drain()["failedInvocations"] == failed_before
    [line] = [i for i in stack.stored_about(wes.user_id) if not i["is_bot"]["BOOL"]]
    assert line["author_name"] == {"S": "W\ufffdes"}
    assert line["content"] == {"S": "I grow chillies \ufffd on my balcony"}


# ---- the forget-all confirmation ----------------------------------------------------------------------------


def memory_ids(stack: Stack, user_id: str) -> set[str]:
    """The person's memories (not the other items beside them: the record of forgotten sources)."""
    return {
        i["memory_id"]["S"]
        for i in stack.scan("memories")
        if i.get("user_id", {}).get("S") == user_id and is_memory_id(i["memory_id"]["S"])
    }


def test_the_forget_all_confirmation_works_once(stack):
    xan = stack.person("xan-once")
    xan.chat("I like kites")
    xan.chat("I drink green tea")
    before = memory_ids(stack, xan.user_id)
    asked = "\n".join(xan.forget_all())
    assert f"Forget all {len(before)} memories" in asked and len(before) == 2
    button = xan.last_button
    done = xan.click(button)
    assert f"Forgotten: {len(before)} memories" in "\n".join(done)

    xan.chat("I started learning the cello")  # learned after the confirmation
    learned_since = memory_ids(stack, xan.user_id)
    assert len(learned_since) == 1
    # Pressed again: the first answer again (the job it started has updated that message since), and nothing more.
    assert xan.click(button) == done[:1] and "Forgetting every memory" in done[0]
    assert memory_ids(stack, xan.user_id) == learned_since


@pytest.mark.parametrize("asked_at", [253402300800, 999999999999])  # 10000-01-01, and the pattern's largest
def test_a_confirmation_time_out_of_range_is_answered_as_expired(stack, asked_at):
    yul = stack.person("yul-year-10000")
    yul.chat("I collect old maps")
    kept = memory_ids(stack, yul.user_id)
    answer = "\n".join(yul.click(f"{FORGET_ALL_BUTTON}:{yul.user_id}:{asked_at}"))
    assert text("forget_all_expired") in answer
    assert kept and memory_ids(stack, yul.user_id) == kept


def test_the_forget_all_prompts_count_is_logged_as_a_count_not_as_a_show(stack):
    zed = stack.person("zed-count")
    zed.chat("I love hiking in the Alps")
    owner = f"guild:{zed.guild_id}#{zed.user_id}"

    def reads() -> list[str]:
        rows = [i for i in stack.scan("memory_log") if i["owner"]["S"] == owner and i["action"]["S"] == "read"]
        return sorted(r["reason"]["S"] for r in rows)

    before = reads()
    assert "Forget all 1 memories" in "\n".join(zed.forget_all())
    assert reads() == sorted([*before, FORGET_ALL_COUNT_REASON])  # one read, named for what it was
    assert "memory show" not in reads()
