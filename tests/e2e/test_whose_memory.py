"""Whose memory is it? Two people in one busy channel, over HTTP against the local stack.

The stack's decision model is a deliberately NAIVE Jev on loopback: it reads only the legacy
``exchange`` string and says "worth / add" for any exchange containing ADD and "delete" for
any containing DEL, whoever wrote it. Its chat model (OpenAI-compatible, on loopback) holds
every call for a while, so each person's reply lands after the other person has spoken, and
writes a memory as the whole exchange it was shown. So if another person's line ever entered
someone's exchange, the naive models would act on it: the checks below would see it.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
from datetime import timedelta

import httpx
import pytest
from stack_process import StackProcess, loopback_models

from loopback import Answer, LoopbackServer, Recorded
from loopback.openai_server import OpenAIServer
from memorybot.core.night.window import window_for
from memorybot.core.record.domain import iso, utcnow
from memorybot.local.client import LocalClient, find_admin_secret, find_signing_key
from memorybot.local.people import user_id_for

ADD, DEL = "ZEBRAADD", "ZEBRADEL"
CHAT_DELAY_SECONDS = 0.3  # every chat-model call: replies land after the other person spoke
# Each trial is one race in one order; the closing figure comes from a longer run
# (MEMORYBOT_RACE_TRIALS=20).
TRIALS = int(os.environ.get("MEMORYBOT_RACE_TRIALS", "4"))
REPLY_MAX_TOKENS = 800  # the reply is the one completion asked for this many tokens

_channels = itertools.count(1400000000000000001)


class NaiveJev(LoopbackServer):
    """Judges the exchange string by marker words, and nothing else."""

    def default_answer(self, request: Recorded) -> Answer:
        exchange = str(request.json.get("exchange", ""))
        if request.path == "/worth":
            return Answer(body={"probability": 0.9 if ADD in exchange or DEL in exchange else 0.1})
        if request.path == "/verdict":
            return Answer(body={"verdict": "delete" if DEL in exchange else "keep"})
        if request.path == "/add":
            return Answer(body={"probability": 0.9 if ADD in exchange else 0.1})
        if request.path == "/review":
            return Answer(body={"verdict": "keep"})
        return Answer(status=404, body={"error": "not found"})


def echo_writer(body: dict) -> str:
    """A naive writer: a memory is everything in the prompt's user message, on one line."""
    if body.get("max_tokens") == REPLY_MAX_TOKENS:
        return "noted"
    user = " ".join(m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user")
    return " ".join(user.split())[:480]


@pytest.fixture(scope="module")
def race_stack(tmp_path_factory):
    with NaiveJev() as jev, OpenAIServer() as llm:
        llm.responder = echo_writer
        llm.set_delay(CHAT_DELAY_SECONDS)
        state_dir = tmp_path_factory.mktemp("memorybot-race")
        running = StackProcess(
            state_dir,
            {
                **loopback_models(jev.url, llm.url, chat=True),
                "OPENAI_MODEL": "loopback",
                "MEMORYBOT_FETCH_CHANNEL_HISTORY": "true",
            },
        )
        try:
            yield running.url, state_dir, jev, llm
        finally:
            running.stop()


def person(race_stack, name: str, channel: str, guild: str | None = "1200000000000000001") -> LocalClient:
    url, state_dir, _, _ = race_stack
    client = LocalClient(
        url,
        name,
        find_signing_key(state_dir),
        channel,
        guild,
        http=httpx.Client(timeout=60),
        admin_secret=find_admin_secret(state_dir),
    )
    client.catch_up()
    return client


def profile(client: LocalClient) -> dict[str, str]:
    """memory id -> text start, read the way the person reads it: /memory show, by DM."""
    lines = "\n".join(client.show())
    return dict(re.findall(r"^([23456789a-hjkmnp-z]{5}) (.*)$", lines, re.MULTILINE))


def send_at_once(*sends) -> None:
    """Each (client, text) as a /chat, all in flight together, without waiting for replies."""
    threads = [
        threading.Thread(target=c.send, args=(c._payload("chat", [{"type": 3, "name": "message", "value": t}]),))
        for c, t in sends
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def drain(client: LocalClient) -> None:
    assert client.http.post(f"{client.url}/local/drain", headers=client._admin).json()["drained"]


def test_interleaved_people_never_change_each_others_profiles(race_stack):
    _, _, jev, _ = race_stack
    cross_person = 0
    for trial in range(TRIALS):
        channel = str(next(_channels))
        alice, bob = person(race_stack, "race-alice", channel), person(race_stack, "race-bob", channel)
        adder, deleter = (alice, bob) if trial % 2 == 0 else (bob, alice)
        # The deleter has something to lose, learned in a channel of their own.
        seeded = person(race_stack, deleter.user_name, str(next(_channels)))
        seeded.chat(f"I love {ADD} kites seed {trial}")
        before = {p.user_name: profile(p) for p in (adder, deleter)}
        assert before[deleter.user_name], "the seed gave the deleter a memory to lose"
        jev.clear()

        fact = f"I love {ADD} tea {adder.user_name} {trial}"
        first, second = (
            ((adder, fact), (deleter, f"please forget {DEL} everything"))
            if trial % 4 < 2
            else ((deleter, f"please forget {DEL} everything"), (adder, fact))
        )
        send_at_once(first, second)
        drain(alice)
        after = {p.user_name: profile(p) for p in (adder, deleter)}

        # The adder lost nothing to the other person's "forget everything"...
        lost = set(before[adder.user_name]) - set(after[adder.user_name])
        # ...and the deleter gained nothing from the other person's fact.
        gained = set(after[deleter.user_name]) - set(before[deleter.user_name])
        cross_person += len(lost) + len(gained)
        assert not lost, f"trial {trial}: {adder.user_name} lost memories to someone else's words"
        assert not gained, f"trial {trial}: {deleter.user_name} gained memories from someone else's words"
        # The naive models did act on each person's OWN words: the test can see a change.
        new = set(after[adder.user_name]) - set(before[adder.user_name])
        assert new and all(adder.user_name in after[adder.user_name][i] for i in new)
        assert not set(before[deleter.user_name]) & set(after[deleter.user_name]), [
            (r.path, r.json.get("speaker"), r.json.get("exchange")) for r in jev.requests
        ]

        # Every decision named its speaker, and carried only that speaker's and the bot's lines.
        for request in jev.requests:
            body = request.json
            speaker = body["speaker"]["id"]
            assert speaker in (alice.user_id, bob.user_id)
            other = bob if speaker == alice.user_id else alice
            assert all(m["is_bot"] or m["author_id"] == speaker for m in body.get("messages", []))
            assert other.user_name not in body.get("exchange", "")
    print(f"\n{TRIALS} interleaved trials: {cross_person} cross-person changes")


def test_a_fact_learned_in_one_server_stays_there(race_stack):
    _, _, _, llm = race_stack
    channel_a, channel_b, dm = (str(next(_channels)) for _ in range(3))
    in_a = person(race_stack, "scope-carol", channel_a, guild="1200000000000000101")
    in_b = person(race_stack, "scope-carol", channel_b, guild="1200000000000000202")
    in_dm = person(race_stack, "scope-carol", dm, guild=None)
    secret = f"I love {ADD} sailing secretly"
    in_a.chat(secret)
    learned = profile(in_a)
    assert learned, "the fact was learned in server A"
    assert any("sailing" in str(c["messages"]) for c in llm.completions()), "the memory's text holds the fact"

    for elsewhere in (in_b, in_dm):
        elsewhere.catch_up()  # the DM server A's listing sent is not this scope's answer
        shown = "\n".join(elsewhere.show())
        assert "sailing" not in shown and not set(learned) & set(re.findall(r"\b[23456789a-hjkmnp-z]{5}\b", shown))
        suggestions = "\n".join(elsewhere.suggest("sail") + elsewhere.suggest(next(iter(learned))))
        assert "sailing" not in suggestions and "(no suggestions)" in suggestions
        # The reply prompt in the other scope holds none of it.
        llm.clear()
        llm.responder = echo_writer
        elsewhere.chat("hello again")
        prompts = llm.completions()
        assert prompts and not any("sailing" in str(p["messages"]) for p in prompts)
        assert "was not found" in "\n".join(elsewhere.forget(next(iter(learned))))
    assert profile(in_a) == learned, "the memory is still there, in its own server"


def test_people_who_never_used_the_bot_get_no_profile(race_stack):
    """With channel history on, other people's ordinary messages reach the channel log (and
    the reply's context), but the nightly run never extracts for them or from their words."""
    url, _, jev, _ = race_stack
    channel = str(next(_channels))
    erin = person(race_stack, "history-erin", channel)
    lurker = person(race_stack, "history-dave", channel)  # never sends a command before the night
    said = {
        "channel_id": channel,
        "author_id": lurker.user_id,
        "author_name": "history-dave",
        "content": f"I love {ADD} knives and my sister is in Osaka",
    }
    assert erin.http.post(f"{url}/local/discord/someone-said", json=said, headers=erin._admin).status_code == 200
    erin.chat(f"I love {ADD} origami")  # the reply worker fetches the channel history here
    jev.clear()

    # The run that covers today's messages: the next 03:00 JST, as the schedule would fire it.
    now = iso(window_for(utcnow()).end + timedelta(days=1))
    answer = httpx.post(f"{url}/local/nightly", json={"now": now}, headers=erin._admin, timeout=300)
    assert answer.status_code == 200, answer.text
    named = {r.json["speaker"]["id"] for r in jev.requests}
    assert erin.user_id in named, "the night did consolidate the person who used the bot"
    assert user_id_for("history-dave") not in named
    assert all("knives" not in r.body.decode() for r in jev.requests)
    assert profile(lurker) == {}
    assert not any("knives" in text for text in profile(erin).values())
