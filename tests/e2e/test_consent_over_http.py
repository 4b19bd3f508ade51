"""Consent you can see, and forgetting that is final, over HTTP against the local stack in its own
process: /memory pause and resume, the first-use notice, and the two ways an erasure or a
forget-all used to be undone (a turn already in flight; a rollback of an earlier night). The
timing is held open by a slow stand-in for Jev (loopback, ``set_delay``)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from datetime import timedelta

import httpx
import pytest
from stack_process import stack_with_jev

from loopback.jev_server import JevServer
from memorybot.core.night.window import window_for
from memorybot.core.record.catalog import text
from memorybot.core.record.domain import is_memory_id, iso, utcnow
from memorybot.local.client import LOCAL_GUILD_ID, LocalClient, night_about_to_end

ADMIN_SECRET = "consent-admin-secret-3"
ADMIN = {"Authorization": f"Bearer {ADMIN_SECRET}"}
_channels = itertools.count(1700000000000000001)
MARKER = "quincemarker"  # in every text said below: any log line carrying it leaks text


@pytest.fixture(scope="module")
def consent_stack(tmp_path_factory):
    with stack_with_jev(tmp_path_factory.mktemp("consent-state"), ADMIN_SECRET, _channels) as stack:
        running, jev, make, http = stack

        def person(name: str, channel: str | None = None, *, locale: str = "en-US", dm: bool = False) -> LocalClient:
            return make(name, channel, guild_id=None if dm else LOCAL_GUILD_ID, locale=locale)

        yield running, jev, person, http


def listed_ids(output: list[str]) -> list[str]:
    lines = [line for text in output if text.startswith("[DM") for line in text.splitlines()[1:]]
    return [line.split()[0] for line in lines if line.split() and is_memory_id(line.split()[0])]


def events(http: httpx.Client, url: str, after: int = 0) -> list[dict]:
    return http.get(f"{url}/local/discord/events", params={"after": after}, headers=ADMIN).json()["events"]


def last_seq(http: httpx.Client, url: str) -> int:
    return max([0] + [e["seq"] for e in events(http, url)])


def drain(http: httpx.Client, url: str) -> None:
    assert http.post(f"{url}/local/drain", headers=ADMIN).json()["drained"]


def wait_until(condition: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def replied(http: httpx.Client, url: str, after: int, token: str) -> bool:
    return any(e["kind"] == "edit" and e["interaction_token"] == token for e in events(http, url, after))


def exported(client: LocalClient) -> dict:
    [attached] = [t for t in client.export() if t.startswith("[attached file")]
    return json.loads(attached.split("\n", 1)[1])


def worth_exchanges(jev: JevServer) -> list[str]:
    return [b["exchange"] for b in jev.bodies("/worth")]


def run_night(http: httpx.Client, url: str, now) -> dict:
    response = http.post(f"{url}/local/nightly", json={"now": iso(now)}, headers=ADMIN)
    assert response.status_code == 200, response.text
    return response.json()


# ---- final means final: a rollback (first in this module: the night 40 days on reviews every
# memory the stack holds, at most 20 of them)


def test_a_rollback_does_not_undo_a_forget_all(consent_stack):
    running, jev, person, http = consent_stack
    jev.clear()
    max_ = person("max-rollback")
    max_.chat(f"I love {MARKER} tangerines")
    [decayed] = listed_ids(max_.show())
    max_.chat(f"I play the {MARKER} tuba")
    kept = [i for i in listed_ids(max_.show()) if i != decayed]
    assert len(kept) == 1
    # A night 40 days on: both are stale; Jev's review deletes one (decay) and keeps the other.
    jev.set_review("delete", memory_id=decayed)
    later = window_for(utcnow()).end + timedelta(days=40)
    run = run_night(http, running.url, later)
    assert decayed in run["summary"]["decayed"], run
    assert listed_ids(max_.show()) == kept

    assert "Forget all 1 memories" in "\n".join(max_.forget_all())
    assert "Forgotten: 1 memories" in "\n".join(max_.click())
    rollback = http.post(f"{running.url}/memory/rollback", json={"runId": run["runId"]}, headers=ADMIN)
    assert rollback.status_code == 200, rollback.text
    assert decayed in rollback.json()["skipped"] and decayed not in rollback.json()["reverted"]
    assert "don't remember anything" in "\n".join(max_.show())  # the decayed memory is not back


# ---- pause and resume ------------------------------------------------------------------------


def test_pause_stops_learning_and_use_everywhere_deletes_nothing_and_resume_does_not_reach_back(consent_stack):
    running, jev, person, http = consent_stack
    kai = person("kai-pause")
    kai_dm = person("kai-pause", dm=True)  # the same person in another scope
    lea = person("lea-pause", kai.channel_id)  # someone else in the same channel
    kai.chat(f"I love {MARKER} origami")
    kai_dm.chat(f"I play {MARKER} shogi")
    before = listed_ids(kai.show())
    assert len(before) == 1

    assert "Paused" in "\n".join(kai.pause())
    assert "already paused" in "\n".join(kai.pause())
    jev.clear()
    for client, line in ((kai, f"I adopted a {MARKER} ferret"), (kai_dm, f"I am {MARKER} learning the harp")):
        reply = "\n".join(client.chat(line))
        assert "don't remember anything" in reply, reply  # none of their memories in the prompt
    assert jev.requests == []  # no question about them at all, in either scope
    lea.chat(f"I like {MARKER} lanterns")  # another person's pause changes nothing for anyone else
    assert any("lanterns" in e for e in worth_exchanges(jev))
    assert "I remember 1 thing" in "\n".join(lea.chat(f"I have {MARKER} two cats"))

    shown = kai.show()  # nothing deleted; show says memory is paused
    assert listed_ids(shown) == before and "Memory is paused" in shown[0], shown
    switch = exported(kai)["memorySwitch"]
    assert switch["paused"] and switch["pausedAt"] and [r["action"] for r in switch["ledger"]] == ["pause"]
    assert switch["ledger"][0]["actor"] == "command"

    assert "Resumed" in "\n".join(kai.resume())
    assert "not paused" in "\n".join(kai.resume())
    jev.clear()
    reply = "\n".join(kai.chat(f"I am {MARKER} building a kayak"))
    assert "I remember 1 thing" in reply  # their memories are used again
    said = worth_exchanges(jev)
    assert said and all("kayak" in e for e in said)
    assert not any("ferret" in e or "harp" in e for e in said)  # resuming does not reach back
    assert len(listed_ids(kai.show())) == 2  # learning again

    # The night learns nothing said while paused, in either scope, and learns what came after.
    jev.clear()
    run_night(http, running.url, night_about_to_end(utcnow()))
    night = worth_exchanges(jev)
    assert any("kayak" in e for e in night) and any("lanterns" in e for e in night)
    assert not any("ferret" in e or "harp" in e for e in night), night
    assert [r["action"] for r in exported(kai)["memorySwitch"]["ledger"]] == ["pause", "resume"]


# ---- the first-use notice --------------------------------------------------------------------


def test_the_notice_comes_once_per_person_and_scope_only_to_them_in_their_language(consent_stack):
    running, jev, person, http = consent_stack
    yui = person("yui-notice", locale="ja")
    ben = person("ben-notice", yui.channel_id)
    seq = last_seq(http, running.url)
    first = yui.chat("こんにちは")
    assert f"memorybot: (only you can see this) {text('notice', 'ja')}" in first
    for name in ("/memory show", "/memory pause", "/memory forget-all"):
        assert name in text("notice", "ja") and name in text("notice", "en")
    yui.chat("今日はいい天気ですね")
    person("yui-notice", locale="ja", dm=True).chat("また話しましょう")  # another scope: once more there
    ben.chat("hello there")
    ben.chat("and again")
    notices = [e for e in events(http, running.url, seq) if e["kind"] == "followup"]
    assert [(e["body"]["content"], e["body"]["flags"]) for e in notices] == [
        (text("notice", "ja"), 64),
        (text("notice", "ja"), 64),
        (text("notice", "en"), 64),
    ]
    # Each went to the person's own /chat interaction (its token), never to someone else's.
    edits = {e["interaction_token"]: e for e in events(http, running.url, seq) if e["kind"] == "edit"}
    assert all(n["interaction_token"] in edits for n in notices)


def test_two_first_turns_at_once_give_the_notice_once(consent_stack):
    running, jev, person, http = consent_stack
    zoe = person("zoe-race")
    seq = last_seq(http, running.url)
    payloads = [zoe._payload("chat", [{"type": 3, "name": "message", "value": f"hi {n}"}]) for n in range(4)]
    for payload in payloads:  # four first turns whose reply workers run at once
        assert zoe.send(payload)[0] == 200
    drain(http, running.url)
    notices = [e for e in events(http, running.url, seq) if e["kind"] == "followup"]
    assert len(notices) == 1 and notices[0]["body"]["content"] == text("notice", "en")


# ---- final means final -----------------------------------------------------------------------


def test_an_erasure_wins_over_a_turn_already_in_flight_five_times_in_five(consent_stack):
    running, jev, person, http = consent_stack
    for n in range(5):
        jev.clear()
        jev.set_delay(1.5, path="/worth")  # the extraction is held open while the operator erases
        ann = person(f"ann-inflight-{n}")
        seq = last_seq(http, running.url)
        payload = ann._payload("chat", [{"type": 3, "name": "message", "value": f"I love {MARKER} kayaks {n}"}])
        assert ann.send(payload)[1]["type"] == 5
        token = payload["token"]
        wait_until(lambda s=seq, t=token: replied(http, running.url, s, t), "the reply to be posted")
        wait_until(lambda: jev.requests_to("/worth"), "the extraction to ask Jev")
        erased = http.post(f"{running.url}/memory/erase", json={"userId": ann.user_id}, headers=ADMIN)
        assert erased.status_code == 200, erased.text
        jev.release()  # the erasure is done: the held extraction need not wait out its delay
        drain(http, running.url)  # the extraction already running finishes now
        assert "don't remember anything" in "\n".join(ann.show()), n
        data = exported(ann)
        assert [m for s in data["scopes"] for m in s["memories"]] == []
        actions = [r["action"] for s in data["scopes"] for r in s["ledger"]]
        assert "add" not in actions and MARKER not in json.dumps(data), data
        # A second erasure finds nothing stored after the first: the in-flight reply was not kept.
        again = http.post(f"{running.url}/memory/erase", json={"userId": ann.user_id}, headers=ADMIN).json()
        assert again["messagesDeleted"] == 0 and again["memoriesDeleted"] == 0, again


def test_export_and_erasure_include_the_switch(consent_stack):
    running, jev, person, http = consent_stack
    ida = person("ida-switch", locale="ja")
    ida.chat("こんにちは")  # the notice is given: the record holds that scope
    assert text("paused", "ja") in "\n".join(ida.pause())  # in the person's language
    switch = exported(ida)["memorySwitch"]
    assert switch["paused"] and switch["noticeGivenIn"] == ["guild:1200000000000000001"]
    erased = http.post(f"{running.url}/memory/erase", json={"userId": ida.user_id}, headers=ADMIN).json()
    assert erased["switchErased"] is True, erased
    assert "一時停止中" not in "\n".join(ida.show())  # the paused note (paused_note), in Japanese
    after = exported(ida)["memorySwitch"]
    assert (after["paused"], after["noticeGivenIn"]) == (False, [])
    # Unknown until now: a person with nothing but a switch is erasable (not a 404).
    only = person("joe-switch-only")
    only.pause()
    answer = http.post(f"{running.url}/memory/erase", json={"userId": only.user_id}, headers=ADMIN)
    assert answer.status_code == 200 and answer.json()["switchErased"] is True


def test_nothing_said_reached_a_log_line(consent_stack):
    running, jev, person, http = consent_stack
    drain(http, running.url)
    assert [line for line in running.output if MARKER in line] == []
