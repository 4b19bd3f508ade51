"""The admin Lambda handler: API Gateway events (v1 and v2) in, JSON answers out, fakes behind."""

from __future__ import annotations

import base64
import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest

from fakes import FakeMemoryStore, FakePeopleStore, FakeRunStore, memory, owner
from memorybot import bootstrap
from memorybot.adapters.invoker import LocalContext
from memorybot.bootstrap import Container
from memorybot.config import Settings
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import Action, Actor
from memorybot.handlers import admin

SECRET = "admin-secret-for-tests"
T = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)


@pytest.fixture
def wired(monkeypatch):
    memories, runs = FakeMemoryStore(), FakeRunStore()
    settings = Settings.from_env({"MEMORYBOT_ADMIN_SECRET": SECRET})
    container = Container(settings, memory_store=memories, run_store=runs, people_store=FakePeopleStore())
    monkeypatch.setattr(bootstrap, "container", lambda: container)
    run = runs.claim("2026-11-29", T)
    memories.apply(
        Change(Action.ADD, None, memory("a", "add00", "plays go", at=T), "jev: add"),
        actor=Actor.NIGHTLY,
        run_id=run.run_id,
    )
    runs.finish(dataclasses.replace(run, finished_at=T + timedelta(minutes=5)))
    return memories, runs, run


def v1(body: str | None, *, auth: str | None = f"Bearer {SECRET}", method: str = "POST") -> dict:
    headers = {"Authorization": auth} if auth is not None else {}
    return {
        "resource": "/memory/rollback",
        "httpMethod": method,
        "headers": headers,
        "body": body,
        "isBase64Encoded": False,
    }


def v2(body: bytes, *, auth: str = f"Bearer {SECRET}") -> dict:
    return {
        "version": "2.0",
        "rawPath": "/memory/rollback",
        "requestContext": {"http": {"method": "POST", "path": "/memory/rollback"}},
        "headers": {"authorization": auth},
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }


def call(event: dict) -> tuple[int, dict]:
    response = admin.handler(event, LocalContext("memorybot-admin"))
    assert response["headers"]["Content-Type"] == "application/json"
    return response["statusCode"], json.loads(response["body"])


def test_v1_no_body_rolls_back_the_latest_run_then_409(wired):
    memories, runs, run = wired
    assert call(v1(None)) == (
        200,
        {"runId": run.run_id, "dryRun": False, "reverted": ["add00"], "skipped": [], "erased": []},
    )
    assert memories.get(owner("a"), "add00") is None and runs.get(run.run_id).rolled_back
    assert call(v1(None)) == (409, {"runId": run.run_id, "alreadyRolledBack": True})


def test_v2_base64_body_with_dry_run(wired):
    memories, runs, run = wired
    status, body = call(v2(json.dumps({"runId": run.run_id, "dryRun": True}).encode()))
    assert (status, body["reverted"], body["dryRun"]) == (200, ["add00"], True)
    assert memories.get(owner("a"), "add00") is not None and not runs.get(run.run_id).rolled_back


def test_wrong_secret_401_and_bad_body_400_and_unknown_run_404(wired):
    memories, runs, run = wired
    ledger = list(memories.ledger)
    assert call(v1(None, auth="Bearer nope"))[0] == 401
    assert call(v1(None, auth=None))[0] == 401
    assert call(v1('{"runId": "1"}'))[0] == 400
    assert call(v1('{"runId": 77}'))[0] == 404
    assert memories.ledger == ledger and not runs.get(run.run_id).rolled_back


def test_other_methods_are_405(wired):
    assert call(v1(None, method="GET"))[0] == 405


def test_a_store_failure_answers_503_and_a_retry_finishes(wired):
    memories, runs, run = wired
    memories.fail_apply = lambda change: True
    assert call(v1(None))[0] == 503
    assert memories.get(owner("a"), "add00") is not None and not runs.get(run.run_id).rolled_back
    memories.fail_apply = lambda change: False
    assert call(v1(None))[0] == 200
    assert memories.get(owner("a"), "add00") is None
