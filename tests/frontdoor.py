"""Shared pieces for the front-door tests: signed interaction events and the ids they use.
The fixtures built on them (``discord_api``, ``front``) are in tests/conftest.py."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime
from typing import Any

from memorybot.adapters.invoker import LocalContext
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import Action, Actor, Memory, Message, Owner, snowflake_at, utcnow
from memorybot.core.record.jobs import ExtractionJob
from memorybot.discord.signature import new_key_pair, sign

SIGNING_KEY, PUBLIC_KEY = new_key_pair()
APP_ID = "900000000000000001"
CHANNEL = "700000000000000001"
ALICE, BOB = "100000000000000001", "200000000000000002"
GUILD = "800000000000000001"
SCOPE = f"guild:{GUILD}"  # where command()'s interactions happen (the default scope mode: per server)
_seq = itertools.count(1)


def interaction_id() -> str:
    return snowflake_at(datetime.now(UTC), next(_seq))


def command(
    name: str,
    options: list | None = None,
    *,
    user: str = ALICE,
    user_name: str = "alice",
    kind: int = 2,
    locale: str | None = None,
) -> dict:
    return {
        "id": interaction_id(),
        "application_id": APP_ID,
        "type": kind,
        "token": f"token-{next(_seq)}",
        "channel_id": CHANNEL,
        "guild_id": GUILD,
        "member": {"user": {"id": user, "username": user_name}},
        "data": {"name": name, "options": options or []},
        **({"locale": locale} if locale is not None else {}),
    }


def remember_this(content: str, *, author: str = ALICE, message_id: str | None = None, **kw: Any) -> dict:
    """ "Remember this" on a message ``author`` posted in the channel, as Discord sends the message
    command: the target's id and the message itself in ``data.resolved.messages``."""
    target = message_id or interaction_id()
    payload = command("Remember this", **kw)
    message = {"id": target, "channel_id": CHANNEL, "type": 0, "content": content, "author": {"id": author}}
    payload["data"] = {
        "id": "910000000000000001",
        "name": "Remember this",
        "type": 3,
        "target_id": target,
        "resolved": {"messages": {target: message}},
    }
    return payload


def chat(text: str, **kw: Any) -> dict:
    return command("chat", [{"type": 3, "name": "message", "value": text}], **kw)


def show(**kw: Any) -> dict:
    return command("memory", [{"type": 1, "name": "show", "options": []}], **kw)


def forget(memory_id: str, *, kind: int = 2, **kw: Any) -> dict:
    option = {"type": 3, "name": "id", "value": memory_id, **({"focused": True} if kind == 4 else {})}
    return command("memory", [{"type": 1, "name": "forget", "options": [option]}], kind=kind, **kw)


def why(memory_id: str, **kw: Any) -> dict:
    return command(
        "memory", [{"type": 1, "name": "why", "options": [{"type": 3, "name": "id", "value": memory_id}]}], **kw
    )


def export(**kw: Any) -> dict:
    return command("memory", [{"type": 1, "name": "export", "options": []}], **kw)


def forget_all(**kw: Any) -> dict:
    return command("memory", [{"type": 1, "name": "forget-all", "options": []}], **kw)


def pause(**kw: Any) -> dict:
    return command("memory", [{"type": 1, "name": "pause", "options": []}], **kw)


def resume(**kw: Any) -> dict:
    return command("memory", [{"type": 1, "name": "resume", "options": []}], **kw)


def click(custom_id: str, **kw: Any) -> dict:
    """A button click: a MESSAGE_COMPONENT interaction carrying the button's custom_id."""
    payload = command("", **kw, kind=3)
    payload["data"] = {"custom_id": custom_id, "component_type": 2}
    return payload


def event(
    payload: Any, *, key: str = SIGNING_KEY, timestamp: int | None = None, raw: bytes | None = None, v1: bool = False
) -> dict:
    """An API Gateway proxy event (v2 by default) carrying a signed body."""
    body = raw if raw is not None else json.dumps(payload).encode()
    headers = sign(key, body, timestamp)
    if v1:
        return {
            "resource": "/interactions",
            "httpMethod": "POST",
            "headers": headers,
            "body": body.decode(),
            "isBase64Encoded": False,
        }
    import base64

    return {
        "version": "2.0",
        "rawPath": "/interactions",
        "headers": {k.lower(): v for k, v in headers.items()},
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }


def admin_event(path: str, body: dict | None, secret: str) -> dict:
    """An API Gateway proxy event (v1) of an operator's POST to an admin route, with the Bearer secret."""
    return {
        "httpMethod": "POST",
        "path": path,
        "headers": {"Authorization": f"Bearer {secret}"},
        "body": json.dumps(body) if body is not None else None,
        "isBase64Encoded": False,
    }


# EventBridge's event for the 18:00 UTC rule (03:00 JST).
SCHEDULE = {
    "version": "0",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "time": "2026-11-29T18:00:00Z",
    "detail": {},
}


def context(name: str = "memorybot-test") -> LocalContext:
    return LocalContext(name)


def body_of(response: dict) -> Any:
    return json.loads(response["body"])


def owner(user_id: str = ALICE, scope: str = SCOPE) -> Owner:
    return Owner(scope, user_id)


def seed(store, user_id: str, memory_id: str, text: str, *, scope: str = SCOPE) -> Memory:
    now = datetime.now(UTC)
    m = Memory(user_id, memory_id, text, now, now, scope=scope)
    store.apply(Change(Action.ADD, None, m, "test seed"), actor=Actor.EXTRACTION)
    return m


def extraction_job(front, text: str = "I moved to Kyoto last week") -> dict:
    """ALICE's line and the bot's reply to her stored, and the extraction job the reply worker
    would hand on for them (its JSON form)."""
    payload = chat(text, user=ALICE, user_name="alice")
    front.message_store.put(Message(CHANNEL, payload["id"], ALICE, "alice", text, scope=SCOPE, conversation_of=ALICE))
    bot_id = snowflake_at(utcnow(), 999)
    front.message_store.put(
        Message(
            CHANNEL, bot_id, APP_ID, "memorybot", "welcome to Kyoto!", is_bot=True, scope=SCOPE, conversation_of=ALICE
        )
    )
    return ExtractionJob(payload["id"], CHANNEL, ALICE, "alice", SCOPE, bot_id).to_json()


def learned_changes(front) -> list:
    """ALICE's ledger rows of changes made by extraction (a seeded memory's own row is not one)."""
    return [
        e
        for e in front.memory_store.ledger_for(owner(ALICE))
        if e.action is not Action.READ and e.reason != "test seed"
    ]


class RecordingInvoker:
    """Our AsyncInvoker port, remembering hand-offs instead of running them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def invoke(self, job) -> None:
        self.calls.append((job.WORKER, json.loads(json.dumps(job.to_json()))))
