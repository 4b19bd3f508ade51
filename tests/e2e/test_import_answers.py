"""What the import answers, over HTTP against the local stack in its own process: a repeated id
is a 400 naming both rows and writes nothing; rows an erasure under way turns down are counted
as refused, not as imported before. (An export imported where it came from is "already there":
test_rights_over_http.py; the command naming its stack: test_operator_import.py.)"""

from __future__ import annotations

import threading
import time

import httpx

from memorybot.core.rights.importing import MAX_IMPORT_ROWS


def test_a_repeated_id_is_a_400_naming_both_rows_and_nothing_is_written(stack, person, admin):
    url, _ = stack
    rae = person("rae-import-answers")
    scope = f"guild:{rae.guild_id}"
    rows = [
        {"userId": rae.user_id, "scope": scope, "text": "Plays the oboe", "createdAt": "2026-01-01", "id": "old-1"},
        {"userId": rae.user_id, "scope": scope, "text": "Keeps bees", "createdAt": "2026-01-01", "id": "old-2"},
        {"userId": rae.user_id, "scope": scope, "text": "Plays the viola", "createdAt": "2026-01-01", "id": "old-1"},
    ]
    answer = httpx.post(f"{url}/memory/import", json={"memories": rows}, headers=admin, timeout=60)
    assert answer.status_code == 400, answer.text
    refused = answer.json()
    assert refused["rows"] == [0, 2] and refused["row"] == 2 and refused["field"] == "id", refused
    assert "memories[2].id" in refused["error"] and "memories[0]" in refused["error"], refused
    assert "viola" not in answer.text and "oboe" not in answer.text  # no memory text in the answer
    assert "don't remember anything" in "\n".join(rae.show())


def test_rows_an_erasure_under_way_turns_down_are_counted_refused(stack, person, admin):
    url, _ = stack
    eve = person("eve-import-answers")
    scope = f"guild:{eve.guild_id}"
    rows = [
        {"userId": eve.user_id, "scope": scope, "text": f"Fact {n}", "createdAt": "2026-01-01", "id": f"f-{n}"}
        for n in range(MAX_IMPORT_ROWS)
    ]
    answers: list[httpx.Response] = []
    importing = threading.Thread(
        target=lambda: answers.append(
            httpx.post(f"{url}/memory/import", json={"memories": rows}, headers=admin, timeout=300)
        )
    )
    importing.start()
    # Once the import has written some of the rows, the operator erases the person.
    preview = {"userId": eve.user_id, "dryRun": True}
    deadline = time.monotonic() + 60

    def written() -> int:
        """How many of the rows the import has written (404: none yet, the person is unknown)."""
        previewed = httpx.post(f"{url}/memory/erase", json=preview, headers=admin, timeout=60)
        if previewed.status_code == 404:
            return 0
        assert previewed.status_code == 200, previewed.text
        return previewed.json()["memoriesDeleted"]

    while written() < 3:
        assert time.monotonic() < deadline and importing.is_alive(), "the import ended before any erasure"
        time.sleep(0.05)
    erased = httpx.post(f"{url}/memory/erase", json={"userId": eve.user_id}, headers=admin, timeout=120)
    assert erased.status_code == 200, erased.text
    importing.join()
    [answer] = answers
    assert answer.status_code == 200, answer.text
    counts = answer.json()
    assert counts["unchanged"] == 0 and counts["refused"] > 0, counts  # none of them was imported before
    assert counts["imported"] + counts["refused"] == MAX_IMPORT_ROWS, counts
    assert "don't remember anything" in "\n".join(eve.show())  # the erasure stands
