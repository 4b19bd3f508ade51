""" "Remember this" over HTTP against the local stack in its own process, signed as Discord signs:
a message is learned once per person (five clicks at once store one memory, and the other four,
and any later click, are told it is remembered already, with no model asked again); a message
with nothing visible is refused before any model call (the loopback Jev counts its requests)."""

from __future__ import annotations

import threading

import httpx

from memorybot.core.record.catalog import text
from memorybot.core.record.domain import is_memory_id

ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"


def shown_ids(client) -> list[str]:
    lines = [line for t in client.show() if t.startswith("[DM") for line in t.splitlines()[2:]]
    return [line.split()[0] for line in lines if line.split() and is_memory_id(line.split()[0])]


def test_five_clicks_at_once_store_one_memory_and_the_others_are_told_it_is_remembered(stack, person, admin, jev):
    url, _ = stack
    kai = person("kai-remember-once")
    message = kai.post_message("I have three goats named after painters")
    answers: list[tuple[int, dict]] = []
    clicks = [kai.remember_payload(message) for _ in range(5)]
    threads = [threading.Thread(target=lambda p=p: answers.append(kai.send(p))) for p in clicks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [status for status, _ in answers] == [200] * 5
    deferred = [a for _, a in answers if a["type"] == 5]
    told = [a["data"]["content"] for _, a in answers if a["type"] == 4]
    assert len(deferred) == 1 and told == [text("remember_already", "en-US")] * 4, answers
    assert httpx.post(f"{url}/local/drain", headers=admin, timeout=120).json()["drained"]
    [memory_id] = shown_ids(kai)
    worth_asked = jev.questions().count("worth")
    assert worth_asked == 1, jev.questions()

    # Later, the same message again: remembered already, nothing asked, nothing written.
    status, again = kai.send(kai.remember_payload(message))
    assert status == 200 and again["data"]["content"] == text("remember_already", "en-US"), again
    assert jev.questions().count("worth") == worth_asked
    assert shown_ids(kai) == [memory_id]
    [attached] = [t for t in kai.export() if t.startswith("[attached file")]
    assert attached.count('"action": "add"') == 1


def test_a_message_with_nothing_visible_is_refused_before_any_model_call(stack, person, jev):
    zoe = person("zoe-remember-once")
    jev.clear()
    answer = "\n".join(zoe.remember(ZERO_WIDTH))
    assert text("remember_no_text", "en-US") in answer, answer
    assert jev.questions() == []  # the loopback model server was never asked
    assert shown_ids(zoe) == []
