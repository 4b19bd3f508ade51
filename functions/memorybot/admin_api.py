"""The operator's HTTP edge: ``POST /memory/rollback``, ``POST /memory/erase`` and ``POST /memory/import``.

Each route checks the Bearer admin secret before it reads anything, turns the JSON body into
the core's typed request, runs the use case, and answers (HTTP status, JSON) with ids and
counts, never memory text. The Lambda handlers and the local stack answer through here; the
core's use cases know nothing of HTTP.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .core.record.changes import NightlyRun
from .core.record.domain import iso, utcnow
from .core.rights.erasure import EraseRequest, Erasure, ErasureResult
from .core.rights.importing import (
    BODY_FIELDS,
    MAX_IMPORT_BODY_BYTES,
    BadImport,
    Importer,
    ImportRequest,
    ImportResult,
    TooManyRows,
    parse_import,
)
from .core.rights.rollback import Outcome, Rollback, RollbackRequest, RollbackResult
from .discord.formats import is_snowflake

MAX_RUN_ID = 2**53 - 1  # the largest integer every JSON client reads exactly


class BadRequest(ValueError):
    """The body is not one the route accepts (the message is safe to show; ``details`` go
    into the answer beside it)."""

    status = 400

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.details = details


class TooLarge(BadRequest):
    """The body is bigger than the route takes (413)."""

    status = 413


def authorized(authorization: str | None, admin_secret: str) -> bool:
    """``Authorization: Bearer <secret>``, compared in constant time; no secret set: nobody."""
    if not admin_secret or not authorization:
        return False
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(token.strip().encode("utf-8"), admin_secret.encode("utf-8"))


def json_object(
    body: str | bytes | None, fields: frozenset[str], *, base64_encoded: bool = False, max_bytes: int | None = None
) -> dict | None:
    """The body as a JSON object with no field outside ``fields``; None when there is no body.

    An unknown field is refused rather than ignored: a typo such as "runid" must not silently
    act on the latest run instead. Past ``max_bytes`` (of the decoded body): TooLarge, unparsed.
    """
    if body is None:
        return None
    try:
        raw = base64.b64decode(body, validate=True) if base64_encoded else body
    except (binascii.Error, ValueError) as exc:
        raise BadRequest("body is not valid UTF-8") from exc
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if max_bytes is not None and size > max_bytes:
        raise TooLarge(f"body is {size} bytes; at most {max_bytes} per request")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest("body is not valid UTF-8") from exc
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BadRequest("body is not valid JSON") from exc
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object")
    unknown = set(data) - fields
    if unknown:
        raise BadRequest(f"unknown field(s): {', '.join(sorted(unknown))}; expected {', '.join(sorted(fields))}")
    return data


def _dry_run(data: dict) -> bool:
    dry_run = data.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise BadRequest("dryRun must be true or false")
    return dry_run


# ---- rollback


ROLLBACK_FIELDS = frozenset({"runId", "dryRun"})


def rollback_request(data: dict | None) -> RollbackRequest:
    """No body or ``{}``: the latest run. ``{"runId": n, "dryRun": bool}``, nothing else."""
    if data is None:
        return RollbackRequest()
    run_id = data.get("runId")
    if "runId" in data and (isinstance(run_id, bool) or not isinstance(run_id, int) or not 1 <= run_id <= MAX_RUN_ID):
        raise BadRequest("runId must be a positive integer")
    return RollbackRequest(run_id, _dry_run(data))


def rollback_answer(result: RollbackResult) -> tuple[int, dict]:
    if result.outcome is Outcome.NOT_FOUND:
        return 404, {"error": "no such run" if result.run_id is not None else "no nightly run yet"}
    if result.outcome is Outcome.ALREADY:
        return 409, {"runId": result.run_id, "alreadyRolledBack": True}
    if result.outcome is Outcome.BUSY:
        return 409, {"runId": result.run_id, "alreadyRolledBack": False, "inProgress": True}
    return 200, {
        "runId": result.run_id,
        "dryRun": result.outcome is Outcome.PREVIEW,
        "reverted": result.reverted,
        "skipped": result.skipped,
        # Rows an erasure redacted: skipped, and nothing can restore them.
        "erased": result.erased,
    }


# ---- erasure


ERASE_FIELDS = frozenset({"userId", "dryRun"})


def erase_request(data: dict | None) -> EraseRequest:
    """``{"userId": "<snowflake>", "dryRun": bool}``, nothing else."""
    user_id = (data or {}).get("userId")
    if not isinstance(user_id, str) or not is_snowflake(user_id):
        raise BadRequest("userId must be a Discord user id (a string of digits)")
    return EraseRequest(user_id, _dry_run(data or {}))


def erasure_answer(result: ErasureResult) -> tuple[int, dict]:
    if not result.found:
        return 404, {"error": "no such user"}
    return 200, {
        "userId": result.user_id,
        "dryRun": result.dry_run,
        "scopes": result.scopes,
        "memoriesDeleted": result.memories,
        "ledgerRowsRedacted": result.ledger_rows,
        "messagesDeleted": result.messages,
        # The memory switch and the notices given (the person record), replaced by the erasure's marker.
        "switchErased": result.switch,
    }


# ---- import


def import_request(data: dict | None) -> ImportRequest:
    """``{"memories": [...], "dryRun": bool}`` or an export file; see core/rights/importing.py."""
    try:
        return parse_import(data, now=utcnow())
    except TooManyRows as exc:
        raise TooLarge(str(exc)) from None
    except BadImport as exc:
        raise BadRequest(str(exc), **bad_import_details(exc)) from None


def bad_import_details(exc: BadImport) -> dict[str, Any]:
    """What a 400 says beside its message: the row and the field, and every row it is about when
    it is more than one (a repeated id names both)."""
    return {"row": exc.row, "field": exc.field, **({"rows": list(exc.rows)} if exc.rows else {})}


def import_answer(importer: Importer, request: ImportRequest) -> tuple[int, dict]:
    try:
        result: ImportResult = importer.run(request)
    except BadImport as exc:  # a scope this deployment does not use: nothing was written
        return 400, {"error": str(exc), **bad_import_details(exc)}
    return 200, {
        "imported": result.imported,
        "unchanged": result.unchanged,
        "alreadyHere": result.already_here,
        "refused": result.refused,
        "dryRun": result.dry_run,
    }


# ---- the routes

UseCase = TypeVar("UseCase")
Request = TypeVar("Request")


@dataclass(frozen=True)
class AdminRoute(Generic[UseCase, Request]):
    """One admin route: its body's fields, the typed request they make, and how the use case answers it."""

    name: str
    fields: frozenset[str]
    parse: Callable[[dict | None], Request]
    run: Callable[[UseCase, Request], tuple[int, dict]]
    max_body_bytes: int | None = None  # past it: 413, before the body is parsed

    def answer(
        self,
        use_case: UseCase,
        authorization: str | None,
        body: str | bytes | None,
        admin_secret: Callable[[], str],
        *,
        base64_encoded: bool = False,
    ) -> tuple[int, dict]:
        """Authorise first (nothing is read before; ``admin_secret`` is fetched only when a
        credential was sent at all), parse, run, answer."""
        if not authorization or not authorized(authorization, admin_secret()):
            return 401, {"error": "unauthorized"}
        try:
            data = json_object(body, self.fields, base64_encoded=base64_encoded, max_bytes=self.max_body_bytes)
            request = self.parse(data)
        except BadRequest as exc:
            return exc.status, {"error": str(exc), **exc.details}
        return self.run(use_case, request)


ROLLBACK: AdminRoute[Rollback, RollbackRequest] = AdminRoute(
    "rollback", ROLLBACK_FIELDS, rollback_request, lambda r, q: rollback_answer(r.run(q.run_id, dry_run=q.dry_run))
)
ERASE: AdminRoute[Erasure, EraseRequest] = AdminRoute(
    "erasure", ERASE_FIELDS, erase_request, lambda e, q: erasure_answer(e.run(q.user_id, dry_run=q.dry_run))
)

IMPORT: AdminRoute[Importer, ImportRequest] = AdminRoute(
    "import", BODY_FIELDS, import_request, import_answer, max_body_bytes=MAX_IMPORT_BODY_BYTES
)


def run_record(run: NightlyRun) -> dict[str, Any]:
    """A nightly run as the operator sees it (the local stack's ``/local/nightly`` answer)."""
    return {
        "runId": run.run_id,
        "dayLabel": run.day_label,
        "startedAt": iso(run.started_at),
        "finishedAt": iso(run.finished_at) if run.finished_at else None,
        "diary": run.diary,
        "summary": run.summary.to_dict(),
        "rolledBack": run.rolled_back,
        "rolledBackAt": iso(run.rolled_back_at) if run.rolled_back_at else None,
        "rollback": run.rollback_counts or None,
    }
