"""Dates to the calendar's end over HTTP, against the local stack in its own process: an end of
9999-12-31 written by the writer (the offline stand-in echoes the date it is told) is stored,
shown, exported, undone and reviewed at night; one imported is stored the same; a date with
spaces around it is refused; and an import that fails on any row writes none of it."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta

import httpx
import pytest
from stack_process import stack_with_jev

from memorybot.core.night.window import window_for
from memorybot.core.record.domain import is_memory_id, iso, utcnow

ADMIN_SECRET = "calendar-end-admin-secret-3"
_channels = itertools.count(1610000000000000001)
LAST_DAY = "9999-12-31"


@pytest.fixture(scope="module")
def end_stack(tmp_path_factory):
    with stack_with_jev(tmp_path_factory.mktemp("calendar-end-state"), ADMIN_SECRET, _channels) as stack:
        yield stack


ADMIN = {"Authorization": f"Bearer {ADMIN_SECRET}"}


def dm_lines(output: list[str]) -> list[str]:
    """The memory lines of /memory show's DMs (each starts with the memory's id)."""
    lines = [line for text in output if text.startswith("[DM") for line in text.splitlines()[2:]]
    return [line for line in lines if line.split() and is_memory_id(line.split()[0])]


def exported_memories(client) -> list[dict]:
    [attached] = [t for t in client.export() if t.startswith("[attached file")]
    return [m for scope in json.loads(attached.split("\n", 1)[1])["scopes"] for m in scope["memories"]]


def no_failures(running) -> None:
    logged = "".join(running.output)
    assert "OverflowError" not in logged and "Traceback" not in logged, logged[-3000:]


def test_an_end_on_the_calendars_last_day_from_the_writer_is_stored_shown_exported_and_undone(end_stack):
    running, jev, person, http = end_stack
    fumi = person("fumi-calendar-end")
    said = "\n".join(fumi.chat(f"I'm in Fukuoka until {LAST_DAY}"))
    assert "something went wrong" not in said, said
    [line] = [line for line in dm_lines(fumi.show()) if "Fukuoka" in line]
    assert line.endswith(f"(until {LAST_DAY})"), line
    memory_id = line.split()[0]
    assert [m["validUntil"] for m in exported_memories(fumi)] == [LAST_DAY]
    assert LAST_DAY in "\n".join(fumi.why(memory_id))

    # "Remember this" on a message with the same end: remembered, not "something went wrong".
    answer = "\n".join(fumi.remember(f"I'm in Kyoto until {LAST_DAY}"))
    assert "What I just changed" in answer and f"until {LAST_DAY}" in answer, answer  # the receipt
    assert sorted(m["validUntil"] for m in exported_memories(fumi)) == [LAST_DAY, LAST_DAY]

    # Forgotten, then undone from /memory history: the memory comes back with its end.
    assert "Forgotten" in "\n".join(fumi.forget(memory_id))
    fumi.history()
    answer = "\n".join(fumi.handle_line("/undo 1") or [])
    assert f"Undone: memory {memory_id} is back" in answer, answer
    [line] = [line for line in dm_lines(fumi.show()) if line.startswith(memory_id)]
    assert line.endswith(f"(until {LAST_DAY})"), line
    no_failures(running)


def test_the_nightly_run_learns_and_rolls_back_an_end_on_the_calendars_last_day(end_stack):
    running, jev, person, http = end_stack
    nori = person("nori-calendar-end")
    nori.chat(f"I'm staying in Sapporo until {LAST_DAY}")
    nori.chat(f"My office is in Hakata until {LAST_DAY}")
    before = {line.split()[0] for line in dm_lines(nori.show())}
    assert before, "the live extraction should have remembered something"

    # The night that covers today's lines: the writer's rewrite keeps the end (verdict update).
    jev.set_verdict("update")
    try:
        now = iso(window_for(utcnow()).end + timedelta(days=1))
        answer = http.post(f"{running.url}/local/nightly", json={"now": now}, headers=ADMIN, timeout=300)
    finally:
        jev.set_verdict("keep")
    assert answer.status_code == 200, answer.text
    run = answer.json()
    assert run["summary"]["failed_speakers"] == [], run["summary"]
    assert run["summary"]["updated"] or run["summary"]["added"], run["summary"]
    ends = [m["validUntil"] for m in exported_memories(nori)]
    assert ends and set(ends) == {LAST_DAY}, ends

    # Its rollback puts each memory back as it was, the end included.
    rolled = http.post(f"{running.url}/memory/rollback", json={"runId": run["runId"]}, headers=ADMIN, timeout=300)
    assert rolled.status_code == 200, rolled.text
    assert {line.split()[0] for line in dm_lines(nori.show())} == before
    assert {m["validUntil"] for m in exported_memories(nori)} == {LAST_DAY}
    no_failures(running)


def import_rows(http: httpx.Client, url: str, rows: list[dict]) -> httpx.Response:
    return http.post(f"{url}/memory/import", json={"memories": rows}, headers=ADMIN, timeout=120)


def row(user_id: str, text: str, **fields: object) -> dict:
    return {"userId": user_id, "scope": "dm", "text": text, "createdAt": "2026-01-01T00:00:00Z", **fields}


def test_an_import_holds_to_the_calendars_end_and_refuses_dates_with_spaces(end_stack):
    running, jev, person, http = end_stack
    ines_dm = person("ines-calendar-end", "1619999999999999991", guild_id=None)  # the DM: scope "dm"
    uid = ines_dm.user_id

    for field, value in (
        ("validUntil", " 2026-06-01"),
        ("validUntil", "2026-06-01 "),
        ("validUntil", "2026-W23-1"),
        ("validUntil", "20260601"),
        ("createdAt", " 2026-01-01T00:00:00Z"),
        ("updatedAt", "2026-01-02T00:00:00Z "),
    ):
        refused = import_rows(http, running.url, [row(uid, "Reads sci-fi"), row(uid, "Keeps bees", **{field: value})])
        assert refused.status_code == 400, (field, value, refused.text)
        assert refused.json()["row"] == 1 and refused.json()["field"] == field, refused.text
    assert "don't remember anything" in "\n".join(ines_dm.show())

    answer = import_rows(http, running.url, [row(uid, "Lives in Oslo", validUntil=LAST_DAY)])
    assert answer.status_code == 200 and answer.json()["imported"] == 1, answer.text
    [line] = dm_lines(ines_dm.show())
    assert line.endswith(f"(until {LAST_DAY})"), line
    assert [m["validUntil"] for m in exported_memories(ines_dm)] == [LAST_DAY]
    no_failures(running)


def test_an_import_with_a_bad_row_after_good_rows_writes_nothing(end_stack):
    running, jev, person, http = end_stack
    juno_dm = person("juno-calendar-end", "1619999999999999992", guild_id=None)
    uid = juno_dm.user_id
    good = [row(uid, f"Collects stamps from {place}") for place in ("Peru", "Chad", "Fiji")]
    for bad in (
        row(uid, "Has a cat", validUntil=" 2026-06-01"),  # a date with a space
        row(uid, "Has a dog", id=""),  # an id that is no id
        {**row(uid, "Has a fox"), "createdAt": "2026-01-01T00:00:00+99:00"},  # an offset that is none
    ):
        answer = import_rows(http, running.url, [*good, bad])
        assert answer.status_code == 400 and answer.json()["row"] == 3, answer.text
        assert "don't remember anything" in "\n".join(juno_dm.show())
    # The row that failed at its write after the good ones had been written (an end on the
    # calendar's last day, a 503 on every retry) is now a row like any other: all four, once.
    answer = import_rows(http, running.url, [*good, row(uid, "Has an owl", validUntil=LAST_DAY)])
    assert answer.status_code == 200 and answer.json()["imported"] == 4, answer.text
    assert len(dm_lines(juno_dm.show())) == 4
    no_failures(running)
