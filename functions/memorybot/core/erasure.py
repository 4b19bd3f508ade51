"""Erasure for operators: ``POST /memory/erase {"userId": "...", "dryRun": bool}``.

Deletes the person's memories in every scope (each delete with its ledger row, written
without text), deletes their stored messages (their own lines and the bot's replies to them),
and redacts the text of their ledger rows: before/after go, the skeleton (ids, actions,
actors, times, source message ids) stays. Then one row of its own records the erasure.

A later rollback cannot restore what was erased: it skips redacted rows and says so.
Answers carry counts and ids only, never text.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..discord.formats import is_snowflake
from .domain import Action, Actor, Change, LedgerEntry, Owner, utcnow
from .ports import ConflictError, MemoryStore, MessageStore
from .rollback import BadRequest, authorized

logger = logging.getLogger(__name__)

ERASURE_SCOPE = "erasure"  # the erasure's own row: Owner(ERASURE_SCOPE, user).key, never a real scope
_BODY_KEYS = frozenset({"userId", "dryRun"})
DELETE_ATTEMPTS = 3


@dataclass(frozen=True)
class EraseRequest:
    user_id: str
    dry_run: bool = False


@dataclass(frozen=True)
class ErasureResult:
    found: bool
    user_id: str
    dry_run: bool = False
    memories: int = 0
    ledger_rows: int = 0
    messages: int = 0
    scopes: int = 0

    def answer(self) -> dict:
        return {
            "userId": self.user_id,
            "dryRun": self.dry_run,
            "scopes": self.scopes,
            "memoriesDeleted": self.memories,
            "ledgerRowsRedacted": self.ledger_rows,
            "messagesDeleted": self.messages,
        }


class Erasure:
    def __init__(self, memories: MemoryStore, messages: MessageStore, *, clock: Callable = utcnow) -> None:
        self._memories = memories
        self._messages = messages
        self._clock = clock

    def run(self, user_id: str, *, dry_run: bool = False) -> ErasureResult:
        owners = [o for o in self._memories.owners_of(user_id) if o.user_id == user_id and o.scope != ERASURE_SCOPE]
        stored = self._messages.of_person(user_id)
        if not owners and not stored:
            return ErasureResult(False, user_id, dry_run)
        memories = rows = 0
        for owner in owners:
            profile = self._memories.read_profile(owner, actor=Actor.OPERATOR, reason="erasure", limit=None)
            memories += len(profile)
            if not dry_run:
                for memory in profile:
                    self._delete(owner, memory.memory_id)
            # Read after the deletes: a consistent read of the owner's partition, every row.
            texts = [
                e for e in self._memories.ledger_for(owner, limit=None) if e.before is not None or e.after is not None
            ]
            rows += len(texts)
            if not dry_run:
                for entry in texts:
                    self._memories.redact(entry)
        if not dry_run:
            for message in stored:
                self._messages.delete(message)
        result = ErasureResult(True, user_id, dry_run, memories, rows, len(stored), len(owners))
        if not dry_run:
            self._memories.record(
                LedgerEntry(
                    user_id,
                    Action.ERASE,
                    Actor.OPERATOR,
                    f"erasure: {memories} memories deleted, {rows} ledger rows redacted, "
                    f"{len(stored)} messages deleted",
                    self._clock(),
                    scope=ERASURE_SCOPE,
                )
            )
        logger.info("erasure answered", extra={"user_id": user_id, **result.answer()})
        return result

    def _delete(self, owner: Owner, memory_id: str) -> None:
        for _ in range(DELETE_ATTEMPTS):
            current = self._memories.get(owner, memory_id)
            if current is None:
                return
            try:
                self._memories.apply(
                    Change(Action.DELETE, current, None, "erasure"), actor=Actor.OPERATOR, redacted=True
                )
                return
            except ConflictError:
                continue
        raise ConflictError(memory_id)


def parse_request(body: str | bytes | None, *, base64_encoded: bool = False) -> EraseRequest:
    """``{"userId": "<snowflake>", "dryRun": bool}``, nothing else."""
    import base64
    import binascii

    if body is None:
        raise BadRequest("body must name userId")
    try:
        raw = base64.b64decode(body, validate=True) if base64_encoded else body
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text)
    except (binascii.Error, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadRequest("body is not valid JSON") from exc
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object")
    if set(data) - _BODY_KEYS:
        raise BadRequest("unknown field in body")
    user_id = data.get("userId")
    if not isinstance(user_id, str) or not is_snowflake(user_id):
        raise BadRequest("userId must be a Discord user id (a string of digits)")
    dry_run = data.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise BadRequest("dryRun must be true or false")
    return EraseRequest(user_id, dry_run)


def handle(
    erasure: Erasure,
    authorization: str | None,
    body: str | bytes | None,
    admin_secret: Callable[[], str],
    *,
    base64_encoded: bool = False,
) -> tuple[int, dict]:
    """Authorise first (nothing is read before), parse, erase, answer with counts."""
    if not authorization or not authorized(authorization, admin_secret()):
        return 401, {"error": "unauthorized"}
    try:
        request = parse_request(body, base64_encoded=base64_encoded)
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    result = erasure.run(request.user_id, dry_run=request.dry_run)
    if not result.found:
        return 404, {"error": "no such user"}
    return 200, result.answer()
