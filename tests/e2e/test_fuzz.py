"""Abuse: thousands of malformed or hostile requests against the local stack over HTTP.

The stack runs as a real server in a subprocess, on the session's moto server (own table
prefix), so the tables can be read before and after: never a 5xx, never a write, and the
right 4xx (401 for anything not signed by Discord or without the admin secret).
"""

from __future__ import annotations

import json
import random
import time

import httpx
import pytest
from stack_process import StackProcess

from fakes import memory
from faults import scan
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.config import Settings
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import Action, Actor
from memorybot.discord.signature import new_key_pair, sign

REQUESTS_PER_ENDPOINT = 1200
ADMIN_SECRET = "fuzz-admin-secret-0123456789"
PREFIX = "fuzz-"
SECRET_TEXT = "alice is secretly afraid of pigeons"
APP_ID = "1000000000000000001"


@pytest.fixture(scope="module")
def fuzz_stack(moto_server, tmp_path_factory):
    signing_key, public_key = new_key_pair()
    state_dir = tmp_path_factory.mktemp("fuzz-state")
    env = {
        "AWS_ENDPOINT_URL_DYNAMODB": moto_server.endpoint,
        "MEMORYBOT_TABLE_PREFIX": PREFIX,
        "DISCORD_PUBLIC_KEY": public_key,
        "DISCORD_APPLICATION_ID": APP_ID,
        "MEMORYBOT_ADMIN_SECRET": ADMIN_SECRET,
    }
    running = StackProcess(state_dir, env)
    url = running.url
    client = moto_server.client()
    settings = Settings.from_env({"MEMORYBOT_TABLE_PREFIX": PREFIX})
    store = DynamoMemoryStore(client, settings)
    store.apply(
        Change(Action.ADD, None, memory("111111111111111111", "aaaaa", SECRET_TEXT), "seed"), actor=Actor.EXTRACTION
    )
    yield url, signing_key, client, settings
    running.stop()


def everything(client, settings) -> dict[str, list]:
    return {
        # binary attributes (vectors, the selection index's entries) compared by their hex
        name: sorted(json.dumps(i, sort_keys=True, default=bytes.hex) for i in scan(client, table))
        for name, table in settings.table_names.items()
    }


# ---------------------------------------------------------------- hostile inputs

JUNK_VALUES = [
    None,
    True,
    0,
    -1,
    2**70,
    1.5,
    "",
    "x" * 5000,
    "ünïcødé 🧠",
    "\u0000\ud7ff",
    [],
    {},
    [[[]]],
    {"a": {"b": {"c": []}}},
]


def junk(rng: random.Random, depth: int = 0):
    kind = rng.randrange(6 if depth < 4 else 3)
    if kind == 0:
        return rng.choice(JUNK_VALUES)
    if kind == 1:
        return rng.randrange(-(2**40), 2**40)
    if kind == 2:
        return "".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(rng.randrange(0, 40)))
    if kind == 3:
        return [junk(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    return {
        rng.choice(["type", "data", "name", "options", "member", "user", "id", "token", "value", "x"]): junk(
            rng, depth + 1
        )
        for _ in range(rng.randrange(0, 5))
    }


def unusable_text(rng: random.Random):
    """Anything but a non-blank string: what /chat must refuse without storing a message."""
    value = junk(rng)
    return value if not isinstance(value, str) or not value.strip() else rng.choice([None, 7, [], {}, "", "   \n "])


def interaction_bodies(rng: random.Random):
    """Bodies a Discord-signed request might carry that are NOT a usable interaction."""
    user = {"id": str(rng.randrange(10**17, 10**18)), "username": "mallory"}
    base = {"id": str(rng.randrange(10**17, 10**19)), "application_id": APP_ID, "token": "tok", "channel_id": "42"}
    shapes = [
        lambda: rng.choice([b"", b"not json", b"{", b"[]", b"null", b"42", b'"string"', '{"type": 1}\u2028'.encode()]),
        lambda: json.dumps(junk(rng)).encode(),
        lambda: json.dumps({**base, "type": rng.choice([0, 3, 6, 99, -1, "1", None, 1.5, [1]])}).encode(),
        lambda: json.dumps({**base, "type": 2, "data": junk(rng), "member": {"user": user}}).encode(),
        lambda: json.dumps(
            {**base, "type": 2, "data": {"name": rng.choice(["chat", "memory", "nope", "", None, 7])}}
        ).encode(),
        lambda: json.dumps(
            {**base, "type": 2, "member": {"user": user}, "data": {"name": "memory", "options": junk(rng)}}
        ).encode(),
        lambda: json.dumps(
            {
                **base,
                "type": 2,
                "member": {"user": user},
                "data": {"name": "chat", "options": [{"name": "message", "value": unusable_text(rng)}]},
            }
        ).encode(),
        lambda: json.dumps({**base, "type": 4, "data": junk(rng)}).encode(),
        lambda: json.dumps(
            {
                **base,
                "type": 2,
                "data": {"name": "chat", "options": [{"name": "message", "type": 3, "value": "hi"}]},
                "member": junk(rng),
            }
        ).encode(),
    ]
    return rng.choice(shapes)()


def interaction_requests(signing_key: str, rng: random.Random):
    """(method, path, headers, body, allowed statuses)."""
    _, other_key = new_key_pair()
    for _ in range(REQUESTS_PER_ENDPOINT):
        body = interaction_bodies(rng)
        good = sign(signing_key, body)
        kind = rng.randrange(10)
        if kind == 0:
            yield "POST", "/interactions", {}, body, {401}
        elif kind == 1:
            yield (
                "POST",
                "/interactions",
                {**good, "X-Signature-Ed25519": rng.choice(["", "zz", "00" * 63, "g" * 128, "00" * 64, "0" * 129])},
                body,
                {401},
            )
        elif kind == 2:
            yield "POST", "/interactions", sign(new_key_pair()[0], body), body, {401}
        elif kind == 3:
            stale = int(time.time()) - rng.choice([301, 3600, 10**6])
            yield "POST", "/interactions", sign(signing_key, body, stale), body, {401}
        elif kind == 4:
            yield "POST", "/interactions", good, body + b" ", {401}
        elif kind == 5:
            yield (
                "POST",
                "/interactions",
                {**good, "X-Signature-Timestamp": rng.choice(["", "abc", "1e9", str(2**80)])},
                body,
                {401},
            )
        elif kind == 6:
            yield rng.choice(["GET", "PUT", "PATCH", "DELETE"]), "/interactions", good, body, {401, 403, 404, 405}
        elif kind == 7:
            yield (
                "POST",
                rng.choice(["/", "/interaction", "/interactions/x", "/admin", "/interactions/../x"]),
                good,
                body,
                {403, 404, 405},
            )
        else:  # properly signed, but not an interaction we can use
            yield "POST", "/interactions", good, body, {200, 400}


def rollback_requests(rng: random.Random):
    for _ in range(REQUESTS_PER_ENDPOINT):
        kind = rng.randrange(8)
        body_value = rng.choice(
            [
                junk(rng),
                {"runId": junk(rng)},
                {"runId": rng.choice([0, -1, 1.0, "1", True, None, 2**64])},
                {"runId": 1, "extra": 1},
                {"dryRun": junk(rng)},
            ]
        )
        body = (
            json.dumps(body_value).encode() if rng.random() < 0.9 else rng.choice([b"{", b"\xff\xfe", b"null", b"[1]"])
        )
        if kind == 0:
            yield "POST", "/memory/rollback", {}, body, {401}
        elif kind == 1:
            wrong = rng.choice(
                [
                    "",
                    "Bearer",
                    "Bearer x",
                    f"Bearer {ADMIN_SECRET[:-1]}",
                    f"Bearer {ADMIN_SECRET}x",
                    ADMIN_SECRET,
                    f"bearer{ADMIN_SECRET}",
                    f"Basic {ADMIN_SECRET}",
                    "Bearer " + "A" * 10_000,
                    "Bearer \\u2713",
                ]
            )
            yield "POST", "/memory/rollback", {"Authorization": wrong}, body, {401}
        elif kind == 2:
            yield (
                rng.choice(["GET", "PUT", "DELETE", "PATCH"]),
                "/memory/rollback",
                {"Authorization": f"Bearer {ADMIN_SECRET}"},
                body,
                {403, 404, 405},
            )
        elif kind == 3:  # the right secret, a run that does not exist
            yield (
                "POST",
                "/memory/rollback",
                {"Authorization": f"Bearer {ADMIN_SECRET}"},
                json.dumps({"runId": rng.randrange(1, 10**9), "dryRun": rng.choice([True, False])}).encode(),
                {404},
            )
        else:  # the right secret, a body that is not a rollback request (or no run at all)
            yield "POST", "/memory/rollback", {"Authorization": f"Bearer {ADMIN_SECRET}"}, body, {400, 404}


def fire(url: str, requests) -> dict[int, int]:
    statuses: dict[int, int] = {}
    with httpx.Client(timeout=30) as http:
        for method, path, headers, body, allowed in requests:
            response = http.request(method, url + path, headers=headers, content=body)
            assert response.status_code < 500, (method, path, body[:200], response.status_code, response.text[:200])
            assert response.status_code in allowed, (
                method,
                path,
                headers,
                body[:200],
                response.status_code,
                response.text[:200],
            )
            assert SECRET_TEXT not in response.text
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
    return statuses


def test_the_interactions_endpoint_refuses_every_hostile_request_and_writes_nothing(fuzz_stack):
    url, signing_key, client, settings = fuzz_stack
    before = everything(client, settings)
    statuses = fire(url, interaction_requests(signing_key, random.Random(20261129)))
    httpx.post(f"{url}/local/drain", timeout=120, headers={"Authorization": f"Bearer {ADMIN_SECRET}"})
    assert everything(client, settings) == before
    assert sum(statuses.values()) == REQUESTS_PER_ENDPOINT and statuses.get(401, 0) > REQUESTS_PER_ENDPOINT // 2


def test_the_rollback_endpoint_refuses_every_hostile_request_and_writes_nothing(fuzz_stack):
    url, _, client, settings = fuzz_stack
    before = everything(client, settings)
    statuses = fire(url, rollback_requests(random.Random(11291129)))
    assert everything(client, settings) == before
    assert sum(statuses.values()) == REQUESTS_PER_ENDPOINT and {401, 400, 404} <= statuses.keys()
