"""Privacy: a full scenario (chat, extraction, show, forget, DM fallback, nightly, rollback)
with every line the stack's functions log captured: no memory or message text appears.

The texts carry marker words that occur nowhere else, so finding one in the output means
a log line (or an error) carried text it must not carry.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from stack_process import StackProcess, loopback_models

from loopback.jev_server import JevServer
from memorybot.core.record.catalog import text
from memorybot.core.record.domain import JST, is_memory_id
from memorybot.local.client import LocalClient, find_signing_key

MARKERS = ("zanzibarmarker", "quokkamarker", "pelicanmarker", "ibexmarker")
ADMIN_SECRET = "privacy-admin-secret-42"


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    state_dir = tmp_path_factory.mktemp("privacy-state")
    with JevServer(worth=0.9, add=0.9, verdict="keep", review="delete") as jev:
        running = StackProcess(
            state_dir,
            {
                **loopback_models(jev.url),
                "MEMORYBOT_ADMIN_SECRET": ADMIN_SECRET,
                "POWERTOOLS_LOG_LEVEL": "DEBUG",  # the most a deployed operator could turn on
            },
        )
        try:
            yield running, state_dir, jev
        finally:
            running.stop()


def test_no_memory_or_message_text_in_any_log_line(scenario):
    running, state_dir, jev = scenario
    http = httpx.Client(timeout=120)
    key = find_signing_key(state_dir)
    channel = itertools.count(1400000000000000001)
    alice = LocalClient(running.url, "alice", key, str(next(channel)), http=http, admin_secret=ADMIN_SECRET)
    bob = LocalClient(running.url, "bob", key, alice.channel_id, http=http, admin_secret=ADMIN_SECRET)
    admin = {"Authorization": f"Bearer {ADMIN_SECRET}"}

    alice.chat(f"I love {MARKERS[0]} pancakes every sunday")
    bob.chat(f"My {MARKERS[1]} is sick today")
    # "Remember this": the message's text travels in the job to the extraction worker, never into a log
    remembered = alice.remember(f"I love {MARKERS[3]} stamps")  # the receipt: its text only to alice
    assert remembered[0].startswith(f"memorybot: (only you can see this) {text('receipt_header', count=1)}")
    assert text("remember_not_yours") in bob.remember(f"I hate {MARKERS[3]} stamps", author="alice")[0]
    shown = alice.show()
    assert any(MARKERS[0] in line for line in shown), shown  # the memory formed and the DM carries it
    jev.set_verdict("update")
    alice.chat(f"Actually I love {MARKERS[2]} waffles now")
    listing = [line for entry in alice.show() for line in entry.splitlines()]
    memory_id = next(line.split()[0] for line in listing if is_memory_id(line.split(" ")[0]))
    alice.forget(memory_id)
    http.post(f"{running.url}/local/discord/close-dms", json={"user_id": bob.user_id}, headers=admin)
    fallback = bob.show()
    assert not any(MARKERS[1] in line for line in fallback)

    now = datetime.now(UTC).astimezone(JST)
    next_run = (now + timedelta(days=1)).replace(hour=3, minute=0, second=0, microsecond=0)
    if next_run - now > timedelta(days=1):
        next_run -= timedelta(days=1)
    run = http.post(f"{running.url}/local/nightly", json={"now": next_run.isoformat()}, headers=admin).json()
    assert run["runId"] >= 1, run
    answer = http.post(f"{running.url}/memory/rollback", headers={"Authorization": f"Bearer {ADMIN_SECRET}"})
    assert answer.status_code == 200, answer.text
    http.post(f"{running.url}/local/drain", headers=admin)

    output = "".join(running.output)
    assert '"level":"INFO"' in output.replace(" ", "") or '"level": "INFO"' in output  # logs were captured
    leaks = [line for line in running.output if any(marker in line for marker in MARKERS)]
    assert leaks == []
    for answer_text in (answer.text, str(run)):
        assert not any(marker in answer_text for marker in MARKERS)
