"""End to end over HTTP: the local stack in its own process, requests signed like Discord's,
the built-in recorder as Discord and a fake Jev on loopback as the decision model."""

from __future__ import annotations

import json
import time

import httpx

from memorybot.core.record.catalog import text
from memorybot.discord.signature import new_key_pair, sign
from memorybot.local.discord_recorder import LOCAL_GUILD_NAME
from memorybot.local.people import user_id_for


def events(url: str, admin: dict, after: int = 0) -> list[dict]:
    return httpx.get(f"{url}/local/discord/events", params={"after": after}, headers=admin).json()["events"]


# The local client talks in one server by default: "nothing remembered" names it.
NOTHING_HERE = text("nothing_remembered", where=text("where_server", name=LOCAL_GUILD_NAME))


def dm_lines(output: list[str]) -> list[str]:
    # After the "[DM ...]" line and the list's header: one line per memory, then the footer.
    return [line for text in output if text.startswith("[DM") for line in text.splitlines()[2:]]


def memory_ids(output: list[str]) -> list[str]:
    return [line.split()[0] for line in dm_lines(output) if not line.startswith("To make me forget")]


def test_chat_reply_memory_show_forget_gone(person, jev, stack):
    url, _ = stack
    alice = person("alice-e2e")
    said = alice.chat("I love hiking in the Alps")
    assert said[0].startswith("memorybot: ")  # the deferred answer was filled in
    assert said[1] == "  [button: Why?] (type /because to click it)"  # the reply's own "Why?"
    assert said[2] == f"memorybot: (only you can see this) {text('notice', 'en')}"  # then the first-use notice
    # then the receipt of what the turn changed, with its Undo (only they see it)
    assert said[3].startswith(f"memorybot: (only you can see this) {text('receipt_header', 'en', count=1)}")
    assert said[4:] == ["  [button: Undo 1] (type /undo 1 to click it)"]
    assert jev.questions()[0] == "worth"  # extraction ran after the reply, through Jev

    shown = alice.show()
    assert shown[0] == f"memorybot: (only you can see this) {text('dm_sent')}"
    [memory_id] = memory_ids(shown)
    assert "Alps" in dm_lines(shown)[0]

    forgot = alice.forget(memory_id)
    assert "Forgotten" in forgot[0] and memory_id in forgot[0]
    assert alice.show() == [f"memorybot: (only you can see this) {NOTHING_HERE}"]


def test_a_plan_said_with_its_length_is_stored_with_its_end_counted_from_the_day_it_was_said(person):
    """The writer's end reaching the stored record through the stack's own extraction path (the
    offline writer, dated in the deployment's zone): show marks it, the export carries it."""
    from datetime import datetime, timedelta

    from memorybot.core.record.domain import JST

    gina = person("gina-e2e")
    before = datetime.now(JST).date()
    gina.chat("I'm in Fukuoka for the next 2 weeks")
    ends = {str(day + timedelta(days=14)) for day in (before, datetime.now(JST).date())}
    [line] = [line for line in dm_lines(gina.show()) if "Fukuoka" in line]
    assert any(line.endswith(f"(until {end})") for end in ends), line
    [exported] = [json.loads(t.split("\n", 1)[1]) for t in gina.export() if t.startswith("[attached file")]
    [memory] = [m for scope in exported["scopes"] for m in scope["memories"]]
    assert memory["validUntil"] in ends


def test_memories_are_per_person_and_forget_cannot_touch_someone_elses(person):
    carol, dave = person("carol-e2e"), person("dave-e2e")
    carol.chat("My cat is called Miso")
    dave.chat("I play the trumpet in a jazz band")
    [carol_memory] = memory_ids(carol.show())
    dave_dm = dm_lines(dave.show())
    assert not any("Miso" in line for line in dave_dm)
    assert "not found" in dave.forget(carol_memory)[0]
    assert memory_ids(carol.show()) == [carol_memory]
    assert dave.suggest("Miso") == ["  (no suggestions)"]
    assert dave.suggest(carol_memory) == ["  (no suggestions)"]  # not even by its id
    assert carol.suggest("miso")[0].startswith(f"  {carol_memory}: ")


def test_closed_dms_fall_back_without_repeating_any_memory(person, stack, admin):
    url, _ = stack
    erin = person("erin-e2e")
    erin.chat("I am allergic to peanuts")
    before = events(url, admin)[-1]["seq"]
    httpx.post(f"{url}/local/discord/close-dms", json={"user": "erin-e2e"}, headers=admin)
    output = erin.show()
    assert output == [f"memorybot: (only you can see this) {text('dm_failed')}"]
    # Nothing posted anywhere after the show carries the memory.
    after = events(url, admin, before)
    assert all("peanut" not in json.dumps(e).lower() for e in after)
    assert [e["kind"] for e in after] == ["dm_open"]


def test_when_jev_is_unavailable_the_bot_still_replies_and_remembers_nothing(person, jev):
    frank = person("frank-e2e")
    jev.answer("/worth", {"error": "down"}, status=503)
    said = frank.chat("I just moved to Sapporo")
    assert said and said[0].startswith("memorybot: ")
    # Every attempt (the first and the worker's two retries) asked again before giving up.
    assert len(jev.requests_to("/worth")) >= 3 * 2
    assert frank.show() == [f"memorybot: (only you can see this) {NOTHING_HERE}"]


def test_every_post_the_bot_made_carries_no_mentions(person, stack, admin):
    url, _ = stack
    gina = person("gina-e2e")
    gina.chat("@everyone my birthday is in May")
    gina.show()
    posts = [e for e in events(url, admin) if e["kind"] in ("message", "edit")]
    assert posts
    assert all(e["body"]["allowed_mentions"] == {"parse": []} for e in posts)


def test_requests_not_signed_by_the_stacks_key_are_refused(stack):
    url, _ = stack
    body = json.dumps({"type": 1}).encode()
    other_key, _ = new_key_pair()
    assert httpx.post(f"{url}/interactions", content=body).status_code == 401
    assert httpx.post(f"{url}/interactions", content=body, headers=sign(other_key, body)).status_code == 401
    stale = sign(other_key, body, int(time.time()) - 3600)
    assert httpx.post(f"{url}/interactions", content=body, headers=stale).status_code == 401


def test_a_signed_ping_is_answered_with_pong(person, stack):
    url, _ = stack
    client = person("ping-e2e")
    assert client.send({"type": 1}) == (200, {"type": 1})


def test_nightly_answers_the_run_record_and_rollback_needs_the_admin_secret(stack, admin):
    url, state_dir = stack
    run = httpx.post(f"{url}/local/nightly", json={"now": "2031-01-01T18:00:00Z"}, timeout=120, headers=admin)
    assert run.status_code == 200
    record = run.json()
    assert record["dayLabel"] and isinstance(record["runId"], int) and "summary" in record
    again = httpx.post(f"{url}/local/nightly", json={"now": "2031-01-01T18:00:00Z"}, timeout=120, headers=admin)
    assert again.status_code == 409
    assert httpx.post(f"{url}/memory/rollback").status_code == 401
    secret = (state_dir / "admin_secret").read_text().strip()
    rolled = httpx.post(
        f"{url}/memory/rollback", headers={"Authorization": f"Bearer {secret}"}, json={"runId": record["runId"]}
    )
    assert rolled.status_code == 200 and rolled.json()["runId"] == record["runId"]


def test_drain_answers_once_background_work_is_done(stack, admin):
    url, _ = stack
    answer = httpx.post(f"{url}/local/drain", timeout=120, headers=admin).json()
    assert answer == {"drained": True, "failedInvocations": 0}


def test_the_terminal_client_can_be_driven_from_the_command_line(stack, jev):
    import subprocess
    import sys

    url, state_dir = stack
    jev.clear()
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "memorybot.cli",
            "chat",
            "--user",
            "hana-e2e",
            "--url",
            url,
            "--state-dir",
            str(state_dir),
            "--channel",
            "1399999999999999999",
            "--say",
            "I love vinyl records",
            "--say",
            "/memory show",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout.splitlines()
    assert out[0] == f"(hana-e2e is user id {user_id_for('hana-e2e')})"
    assert out[1] == "hana-e2e> I love vinyl records"
    assert out[2].startswith("memorybot: ")
    assert f"memorybot: (only you can see this) {text('dm_sent')}" in out
    dm = out[out.index("[DM from memorybot to hana-e2e]") + 1 :]
    assert any("vinyl" in line for line in dm)
