"""Operator import over HTTP against the local stack in its own process: a person's
``/memory export`` file, taken as it is, brings their memories back after an erasure (seen
with ``/memory show``), through the route and through ``memorybot import``; the same file
again imports nothing; the refusals (401, 400, 413) write nothing."""

from __future__ import annotations

import json

import httpx

from memorybot import cli
from memorybot.core.record.domain import is_memory_id
from memorybot.core.rights.importing import MAX_IMPORT_ROWS
from memorybot.local.client import LocalClient

DM_CHANNEL = "1699999999999999991"


def dm_texts(output: list[str]) -> list[str]:
    """The memory lines of /memory show's DMs, without their ids."""
    lines = [line for text in output if text.startswith("[DM") for line in text.splitlines()[1:]]
    return sorted(line.split(" ", 1)[1] for line in lines if line.split() and is_memory_id(line.split()[0]))


def shown(client: LocalClient) -> list[str]:
    """What /memory show DMs the person now (the same person's other client may have had DMs since)."""
    client.catch_up()
    return dm_texts(client.show())


def exported(client: LocalClient) -> dict:
    client.catch_up()
    [attached] = [t for t in client.export() if t.startswith("[attached file memorybot-export.json]")]
    return json.loads(attached.split("\n", 1)[1])


def test_an_export_file_restores_the_persons_memories_after_an_erasure_and_a_second_import_adds_nothing(
    stack, person, admin, tmp_path, monkeypatch, capsys
):
    url, state_dir = stack
    ann = person("ann-import")
    ann_dm = LocalClient(
        url, "ann-import", ann.signing_key, DM_CHANNEL, None, http=ann.http, admin_secret=ann.admin_secret
    )
    ann.chat("I love hiking in the Alps")
    ann.chat("My sister Yuki lives in Osaka")
    ann_dm.chat("I play the shamisen")
    before, before_dm = shown(ann), shown(ann_dm)
    assert len(before) >= 2 and len(before_dm) >= 1, (before, before_dm)
    export = exported(ann)
    assert {s["scope"] for s in export["scopes"]} == {f"guild:{ann.guild_id}", "dm"}
    count = sum(len(s["memories"]) for s in export["scopes"])
    assert count == len(before) + len(before_dm)
    path = tmp_path / "memorybot-export.json"
    path.write_text(json.dumps(export, ensure_ascii=False))

    erased = httpx.post(f"{url}/memory/erase", json={"userId": ann.user_id}, headers=admin, timeout=60)
    assert erased.status_code == 200, erased.text
    assert "don't remember anything" in "\n".join(ann.show())

    route = f"{url}/memory/import"
    # The refusals first: none of them writes anything.
    assert httpx.post(route, json=export, timeout=60).status_code == 401
    assert httpx.post(route, json=export, headers={"Authorization": "Bearer nope"}, timeout=60).status_code == 401
    wrong_scope = {"memories": [{"userId": ann.user_id, "scope": "global", "text": "x", "createdAt": "2026-01-01"}]}
    refused = httpx.post(route, json=wrong_scope, headers=admin, timeout=60)
    assert refused.status_code == 400 and refused.json()["field"] == "scope" and refused.json()["row"] == 0
    bad_row = json.loads(json.dumps(export))
    bad_row["scopes"][0]["memories"][-1]["createdAt"] = "not a time"
    refused = httpx.post(route, json=bad_row, headers=admin, timeout=60)
    assert refused.status_code == 400 and refused.json()["field"] == "createdAt", refused.text
    rows = [{"userId": ann.user_id, "scope": "dm", "text": f"fact {n}", "createdAt": "2026-01-01"} for n in range(201)]
    assert len(rows) > MAX_IMPORT_ROWS
    assert httpx.post(route, json={"memories": rows}, headers=admin, timeout=60).status_code == 413
    assert "don't remember anything" in "\n".join(ann.show())

    # The export file as it is, straight to the route: a dry run counts and writes nothing.
    preview = httpx.post(route, json=export | {"dryRun": True}, headers=admin, timeout=60)
    assert preview.json() == {"imported": count, "unchanged": 0, "alreadyHere": 0, "refused": 0, "dryRun": True}, (
        preview.text
    )
    assert "don't remember anything" in "\n".join(ann.show())

    # The operator's command, with the admin secret from the stack's state dir.
    monkeypatch.delenv("MEMORYBOT_ADMIN_SECRET", raising=False)
    assert cli.main(["import", str(path), "--url", url, "--state-dir", str(state_dir)]) == 0
    assert f"Imported {count} memories into the stack at {url}." in capsys.readouterr().out
    assert shown(ann) == before and shown(ann_dm) == before_dm

    assert cli.main(["import", str(path), "--url", url, "--state-dir", str(state_dir)]) == 0
    assert f"Imported 0 memories into the stack at {url}, {count} unchanged (imported before)." in (
        capsys.readouterr().out
    )
    again = httpx.post(route, json=export, headers=admin, timeout=60).json()
    assert again == {"imported": 0, "unchanged": count, "alreadyHere": 0, "refused": 0, "dryRun": False}
    assert shown(ann) == before and shown(ann_dm) == before_dm

    # The ledger says who brought them in and what they were called where they came from.
    old_ids = {m["id"] for s in export["scopes"] for m in s["memories"]}
    restored = exported(ann)
    imports = [r for s in restored["scopes"] for r in s["ledger"] if r["actor"] == "import"]
    assert len(imports) == count and {r["importId"] for r in imports} == old_ids
    new_ids = {m["id"] for s in restored["scopes"] for m in s["memories"]}
    assert len(new_ids) == count and all(is_memory_id(i) for i in new_ids)


def test_the_command_refuses_a_bad_file_naming_the_row_and_writes_nothing(stack, person, tmp_path, monkeypatch, capsys):
    url, state_dir = stack
    bo = person("bo-import")
    monkeypatch.delenv("MEMORYBOT_ADMIN_SECRET", raising=False)
    rows = [
        {"userId": bo.user_id, "scope": f"guild:{bo.guild_id}", "text": "Collects stamps", "createdAt": "2026-01-01"},
        {"userId": bo.user_id, "scope": "global", "text": "Keeps bees", "createdAt": "2026-01-01"},  # not used here
    ]
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"memories": rows * 60}))  # two batches; the first bad row is the second
    assert cli.main(["import", str(path), "--url", url, "--state-dir", str(state_dir)]) == 1
    error = capsys.readouterr().err
    assert "memories[1].scope" in error and "nothing was imported" in error
    assert "don't remember anything" in "\n".join(bo.show())

    path.write_text(json.dumps({"memories": [rows[0] | {"text": ""}]}))
    assert cli.main(["import", str(path), "--url", url, "--state-dir", str(state_dir)]) == 2
    assert "memories[0].text: is empty" in capsys.readouterr().err

    path.write_text(json.dumps({"memories": [rows[0]] * 3}))
    assert cli.main(["import", str(path), "--url", url, "--state-dir", str(state_dir), "--dry-run"]) == 0
    assert "1 would be imported, 2 unchanged" in capsys.readouterr().out
    assert "don't remember anything" in "\n".join(bo.show())


def test_other_methods_on_the_route_are_405(stack, admin):
    url, _ = stack
    assert httpx.get(f"{url}/memory/import", headers=admin).status_code == 405
