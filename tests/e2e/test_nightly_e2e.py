"""End to end over HTTP: chat, the nightly run (POST /local/nightly), then its preview and rollback
(POST /memory/rollback with the admin secret), against the local stack in its own process."""

from __future__ import annotations

from datetime import timedelta

import httpx

from memorybot.core.night.window import window_for
from memorybot.core.record.domain import iso, jst_day, utcnow


def memory_ids(output: list[str]) -> list[str]:
    """The ids in a /memory show DM: one line per memory after the DM's first two lines."""
    lines = [line for text in output if text.startswith("[DM") for line in text.splitlines()[2:]]
    return [line.split()[0] for line in lines if line and not line.startswith("To make me forget")]


def test_chat_then_nightly_then_preview_and_rollback_over_http(person, stack):
    url, state_dir = stack
    secret = (state_dir / "admin_secret").read_text().strip()
    admin = {"Authorization": f"Bearer {secret}"}

    hana = person("hana-nightly-e2e")
    hana.chat("I practise kendo every Tuesday")
    hana.chat("and I am saving up for a new bogu")
    from_extraction = set(memory_ids(hana.show()))
    assert from_extraction, "the after-reply extraction should have remembered something"

    # The run that covers today's messages: the next 03:00 JST, as EventBridge would fire it.
    now = iso(window_for(utcnow()).end + timedelta(days=1))
    answer = httpx.post(f"{url}/local/nightly", json={"now": now}, timeout=300, headers=admin)
    assert answer.status_code == 200, answer.text
    run = answer.json()
    assert run["dayLabel"] == jst_day(window_for(utcnow()).end)  # labelled by the JST day the window starts on
    assert run["finishedAt"] and run["rolledBack"] is False
    assert set(run["summary"]) >= {"added", "updated", "deleted", "decayed", "failures", "model_calls"}
    after_night = memory_ids(hana.show())
    learned = set(after_night) - from_extraction
    assert from_extraction <= set(after_night) and learned and learned <= set(run["summary"]["added"])

    # A second delivery for the same day does nothing.
    assert httpx.post(f"{url}/local/nightly", json={"now": now}, timeout=300, headers=admin).status_code == 409

    # The endpoint refuses anyone without the secret and any malformed body.
    rollback = f"{url}/memory/rollback"
    assert httpx.post(rollback, json={"runId": run["runId"]}).status_code == 401
    assert (
        httpx.post(rollback, json={"runId": run["runId"]}, headers={"Authorization": "Bearer wrong"}).status_code == 401
    )
    assert httpx.post(rollback, json={"runId": str(run["runId"])}, headers=admin).status_code == 400
    assert httpx.post(rollback, json={"runId": 10**9}, headers=admin).status_code == 404

    # Preview: what would be undone, with nothing changed.
    preview = httpx.post(rollback, json={"runId": run["runId"], "dryRun": True}, headers=admin)
    assert preview.status_code == 200 and preview.json()["dryRun"] is True
    assert learned <= set(preview.json()["reverted"])
    assert memory_ids(hana.show()) == after_night

    # The rollback: the night's memories go, those learned after the replies stay.
    done = httpx.post(rollback, json={"runId": run["runId"]}, headers=admin)
    assert done.status_code == 200, done.text
    body = done.json()
    assert body["runId"] == run["runId"] and sorted(body["reverted"]) == sorted(preview.json()["reverted"])
    assert "kendo" not in done.text and "bogu" not in done.text  # ids only, never memory text
    assert set(memory_ids(hana.show())) == from_extraction

    again = httpx.post(rollback, json={"runId": run["runId"]}, headers=admin)
    assert again.status_code == 409 and again.json()["alreadyRolledBack"] is True
