"""Operator import (``POST /memory/import``, read by ``admin_api``): memories moved in from a
person's ``/memory export`` file, the original system, or another bot.

The body is either a list of rows::

    {"memories": [{"userId": "<snowflake>", "scope": "guild:<id>" | "dm" | "channel:<id>" | "global",
                   "text": "...", "createdAt": "<ISO 8601>", "updatedAt": "<ISO 8601>", "id": "<optional>",
                   "validUntil": "<YYYY-MM-DD, optional>"}],
     "dryRun": false}

or an export file as ``/memory export`` writes it (``{"userId", "scopes": [{"scope", "memories",
"ledger", "forgottenSourceMessageIds"}]}``): its memories are the rows (their export id is the
source id), its ledger (and the ids of messages it no longer learns from) is history of the
other deployment and is not imported; nor is its memory switch (``memorySwitch``).

Every row is checked before anything is written: one bad row (or a scope this deployment
does not use) refuses the whole request, naming the row and the field. Each imported
memory gets an id of its own and commits with its ledger row (actor ``import``, the source
id kept) and the owner's import marker in one transaction (``ImportWriter.add_once``): the
marker is keyed by a hash of (user, scope, source id), or of (user, scope, text, createdAt)
for a row without one, so importing the same rows again (at once or later, after a forget
too) writes nothing and counts them as unchanged.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from enum import Enum
from typing import Any, Protocol

from ..record import memory_record
from ..record.changes import LedgerEntry
from ..record.dates import parse_day
from ..record.domain import (
    DM_SCOPE,
    EVERYWHERE_SCOPE,
    GLOBAL_SCOPE,
    MEMORY_TEXT_MAX_CHARS,
    Actor,
    Memory,
    Owner,
    ScopeMode,
    end_holds,
    is_memory_id,
    is_snowflake,
    iso,
    new_memory_id,
    one_line,
    text_problem,
    utcnow,
)
from ..record.memory_record import Kind, RecordField, Shape
from ..record.person import Basis, PersonCheck
from ..record.ports import ConflictError, ImportWriter, Ledger, PersonRefused

logger = logging.getLogger(__name__)

# The documented size of one request: at most this many rows and this many bytes of body (413
# past either). Each row is one transaction, so a full request stays well inside the admin
# function's 29 s; ``memorybot import`` splits a bigger file into requests of this size.
MAX_IMPORT_ROWS = 200
MAX_IMPORT_BODY_BYTES = 1024 * 1024
SOURCE_ID_MAX_CHARS = 64
# The times an import accepts (docs/import.md): from the Unix epoch to a little ahead of this
# clock (a time slightly ahead is another machine's clock, not a fact from the future).
EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)
CLOCK_SKEW = timedelta(minutes=5)
TIME_EXAMPLE = 'an ISO 8601 time, e.g. "2026-11-20T18:00:00Z"'
EARLIEST = "1970-01-01T00:00:00Z"
TIME_RANGE = f"{EARLIEST} to now"
ID_ATTEMPTS = 5  # a fresh memory id that is taken already: draw another
IMPORT_REASON = "operator import"
TAKEN_BACK_REASON = "operator import failed part way: taken back"

# A row's keys are the memory record's (core/record/memory_record.py), and "id": the memory's id in the
# system it came from (an export's own "id"), kept as provenance, never used as this one's id.
SOURCE_ID = "id"
ROW_FIELDS = memory_record.keys_of(Shape.ROW) | {SOURCE_ID}
REQUIRED_ROW_FIELDS = tuple(key for f, key in memory_record.fields_of(Shape.ROW) if f.row_required)
# memorySwitch: an export file's memory switch (docs/consent.md). Accepted and not imported: a
# pause or a notice given elsewhere is the person's to give again here.
BODY_FIELDS = frozenset({"memories", "dryRun", "userId", "scopes", "memorySwitch"})
# An export file (core/rights/commands.py export): what each of its scopes and memories carries.
# Its ledger and its list of forgotten message ids are left out, as rows are all an import adds.
EXPORT_SCOPE_FIELDS = frozenset({"scope", "memories", "ledger", "forgottenSourceMessageIds"})
EXPORT_MEMORY_FIELDS = memory_record.keys_of(Shape.EXPORT)
# What an export file's memory brings to its row: the keys both shapes have, and its id as the source id.
EXPORT_TO_ROW = tuple(sorted((EXPORT_MEMORY_FIELDS & ROW_FIELDS) | {memory_record.key_of("memory_id", Shape.EXPORT)}))


class BadImport(ValueError):
    """A request the import refuses, naming the row (its index among the request's rows; None
    for the body itself) and the field. The message is safe to show: it never repeats a text."""

    def __init__(
        self, row: int | None, field: str, problem: str, where: str = "", *, rows: tuple[int, ...] = ()
    ) -> None:
        self.row, self.field, self.problem = row, field, problem
        self.rows = rows  # every row the problem is about, when it is more than one (a repeated id)
        self.where = where or (f"memories[{row}]" if row is not None else "")
        super().__init__(f"{self.where}.{field}: {problem}" if self.where else f"{field}: {problem}")


class TooManyRows(ValueError):
    """More rows than one request may carry (413)."""


@dataclass(frozen=True)
class ImportRow:
    index: int  # among the request's rows (an export file's rows in file order)
    where: str  # where it is in the body, e.g. "memories[3]" or "scopes[0].memories[2]"
    template: Memory  # the memory as the row gives it, but for its id (drawn when it is added)
    source_id: str | None = None

    @property
    def owner(self) -> Owner:
        return self.template.owner

    @property
    def once(self) -> str:
        """The idempotency key: a hash of (user, scope, source id), or of (user, scope, text,
        createdAt) without one. A hash, so that the marker holds no text."""
        memory = self.template
        basis = ["id", self.source_id] if self.source_id is not None else ["text", memory.text, iso(memory.created_at)]
        canonical = json.dumps([memory.user_id, memory.scope, *basis], ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]

    def memory(self, memory_id: str) -> Memory:
        return replace(self.template, memory_id=memory_id)


@dataclass(frozen=True)
class ImportRequest:
    rows: tuple[ImportRow, ...]
    dry_run: bool = False


class RowOutcome(str, Enum):
    """What became of one row (the answer counts each)."""

    IMPORTED = "imported"
    UNCHANGED = "unchanged"
    ALREADY_HERE = "already_here"
    REFUSED = "refused"


@dataclass(frozen=True)
class ImportResult:
    imported: int
    unchanged: int  # imported before: the owner has the row's marker (or an identical row came first)
    dry_run: bool
    already_here: int = 0  # this deployment's own memories, come back in its own export file
    refused: int = 0  # the person's erasure is under way (or ran since the import began): not written


# ---- reading a request


def source_rows(data: dict) -> list[tuple[str, dict]]:
    """The rows of a body (``{"memories": [...]}``) or of an export file, in order, each with
    where it is, as rows of the ``memories`` form; an export's ledger is left out."""
    if ("memories" in data) == ("scopes" in data):
        raise BadImport(None, "memories", 'give "memories" (a list of rows) or an export file ("userId", "scopes")')
    if "memories" in data:
        if "userId" in data:
            raise BadImport(None, "userId", "only an export file has a top-level userId; a row names its own")
        rows = data["memories"]
        if not isinstance(rows, list):
            raise BadImport(None, "memories", "must be a list of rows")
        return [(f"memories[{i}]", row) for i, row in enumerate(rows)]
    return _export_rows(data)


def _export_rows(data: dict) -> list[tuple[str, dict]]:
    user_id, groups = data.get("userId"), data["scopes"]
    if not is_snowflake(user_id):
        raise BadImport(None, "userId", "must be a Discord user id (a string of digits)")
    if not isinstance(groups, list):
        raise BadImport(None, "scopes", "must be a list (as /memory export writes it)")
    rows: list[tuple[str, dict]] = []
    for i, group in enumerate(groups):
        where = f"scopes[{i}]"
        if not isinstance(group, dict):
            raise BadImport(None, where, "must be an object")
        for name in sorted(set(group) - EXPORT_SCOPE_FIELDS):
            raise BadImport(None, f"{where}.{name}", "unknown field")
        memories = group.get("memories", [])
        if not isinstance(memories, list):
            raise BadImport(None, f"{where}.memories", "must be a list")
        for j, exported in enumerate(memories):
            place = f"{where}.memories[{j}]"
            if not isinstance(exported, dict):
                raise BadImport(len(rows), "row", "must be an object", place)
            for name in sorted(set(exported) - EXPORT_MEMORY_FIELDS):
                raise BadImport(len(rows), name, "unknown field", place)
            # sourceMessageIds are left out: an export names message ids without their
            # channels, so they cannot be linked, and they are not this deployment's messages.
            row = {"userId": user_id, "scope": group.get("scope")}
            row |= {k: exported[k] for k in EXPORT_TO_ROW if k in exported}
            rows.append((place, row))
    return rows


def parse_import(data: dict | None, *, now: datetime, max_rows: int | None = MAX_IMPORT_ROWS) -> ImportRequest:
    """The typed request; BadImport for the first bad row or field, TooManyRows past ``max_rows``."""
    if data is None:
        raise BadImport(None, "memories", 'the body is empty: send {"memories": [...]} or an export file')
    for name in sorted(set(data) - BODY_FIELDS):
        raise BadImport(None, name, f"unknown field; expected {', '.join(sorted(BODY_FIELDS))}")
    dry_run = data.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise BadImport(None, "dryRun", "must be true or false")
    found = source_rows(data)
    if max_rows is not None and len(found) > max_rows:
        raise TooManyRows(f"{len(found)} rows; at most {max_rows} per request (memorybot import splits a file)")
    rows = tuple(parse_row(i, where, raw, now=now) for i, (where, raw) in enumerate(found))
    _no_repeated_ids(rows)
    return ImportRequest(rows, dry_run)


def _no_repeated_ids(rows: Sequence[ImportRow]) -> None:
    """One source id names one memory of one person in one scope: a second row with it (whatever
    its text) is a mistake in the file, refused naming both rows, rather than one of them dropped."""
    first: dict[tuple[Owner, str], ImportRow] = {}
    for row in rows:
        if row.source_id is None:
            continue
        earlier = first.setdefault((row.owner, row.source_id), row)
        if earlier is not row:
            problem = f"repeats the id of {earlier.where} (the same person and scope); each memory has its own id"
            raise BadImport(row.index, SOURCE_ID, problem, row.where, rows=(earlier.index, row.index))


def parse_row(index: int, where: str, raw: object, *, now: datetime) -> ImportRow:
    def bad(field: str, problem: str) -> BadImport:
        return BadImport(index, field, problem, where)

    if not isinstance(raw, dict):
        raise bad("row", "must be an object")
    for name in sorted(set(raw) - ROW_FIELDS):
        raise bad(name, f"unknown field; a row has {', '.join(sorted(ROW_FIELDS))}")
    for name in REQUIRED_ROW_FIELDS:
        if name not in raw:
            raise bad(name, "missing")
    # Each of the record's fields the row gives, by its kind and the import's rule for it.
    values: dict[str, Any] = {
        f.name: _row_value(f, key, raw[key], bad, now) for f, key in memory_record.fields_of(Shape.ROW) if key in raw
    }
    values.setdefault("updated_at", values["created_at"])
    if values["updated_at"] < values["created_at"]:
        raise bad("updatedAt", "is before createdAt")
    until = values.get("valid_until")
    if until is not None and end_holds(until, values["created_at"], UTC) is None:  # its last day, before it was said
        raise bad(memory_record.key_of("valid_until", Shape.ROW), "is before createdAt")
    source_id = raw.get(SOURCE_ID)
    if source_id is not None and not (
        isinstance(source_id, str) and 1 <= len(source_id) <= SOURCE_ID_MAX_CHARS and source_id.isprintable()
    ):
        raise bad(SOURCE_ID, f"must be printable text of 1 to {SOURCE_ID_MAX_CHARS} characters")
    return ImportRow(index, where, Memory(memory_id="", **values), source_id)


# Times a row gives of what already happened (said, last changed): never ahead of this clock.
_PAST_TIMES = frozenset({"created_at", "updated_at"})


def _row_value(f: RecordField, key: str, value: object, bad: Callable[[str, str], BadImport], now: datetime) -> Any:
    """One field of a row, read by its kind and checked by the import's rule for it."""
    if f.kind is Kind.TEXT:
        return _row_text(f.name, key, value, bad)
    if f.kind in (Kind.OPTIONAL_TIME, Kind.OPTIONAL_DATE) and value is None:
        return None
    if f.kind is Kind.OPTIONAL_DATE:
        return _date(value, key, bad)
    if f.kind not in (Kind.TIME, Kind.OPTIONAL_TIME):
        raise TypeError(f"an import row cannot carry {f.name} ({f.kind.value})")
    at = _time(value, key, bad)
    if f.name in _PAST_TIMES and at > now + CLOCK_SKEW:
        raise bad(key, "is in the future")
    return at


# A row's ids and scope, each with its rule and the problem named when it fails it.
_ROW_TEXT_RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "user_id": (is_snowflake, "must be a Discord user id (a string of digits)"),
    "scope": (lambda value: is_scope(value), 'must be "guild:<id>", "dm", "channel:<id>", "global" or "everywhere"'),
}


def _row_text(name: str, key: str, value: object, bad: Callable[[str, str], BadImport]) -> str:
    rule, problem = _ROW_TEXT_RULES.get(name, (lambda v: isinstance(v, str), "must be a string"))
    if not rule(value):
        raise bad(key, problem)
    assert isinstance(value, str)
    if name != "text":
        return value
    problem = text_problem(value)
    if problem:
        raise bad(key, problem)
    text = one_line(value)  # a memory is one line, as extraction writes it
    if len(text) > MEMORY_TEXT_MAX_CHARS:
        raise bad(key, f"is {len(text)} characters; a memory has at most {MEMORY_TEXT_MAX_CHARS}")
    return text


def _time(value: object, field: str, bad: Callable[[str, str], BadImport]) -> datetime:
    """An ISO 8601 time (no zone means UTC, as everywhere in the stack), not before EARLIEST_TIME."""
    if not isinstance(value, str):
        raise bad(field, f"must be {TIME_EXAMPLE}")
    try:
        at = datetime.fromisoformat(value)  # as given: " 2026-11-20" with a space is no time
    except ValueError:
        raise bad(field, f"must be {TIME_EXAMPLE}") from None
    try:
        at = (at if at.tzinfo else at.replace(tzinfo=UTC)).astimezone(UTC)
    except OverflowError:  # near year 1 or 9999, an offset leaves the calendar: no UTC time
        raise bad(field, f"is outside {TIME_RANGE}") from None
    if at < EARLIEST_TIME:
        raise bad(field, f"is before {EARLIEST}; times go from {TIME_RANGE}")
    return at


def _date(value: object, field: str, bad: Callable[[str, str], BadImport]) -> date:
    """A calendar date, exactly "YYYY-MM-DD" (the last day a memory holds)."""
    day = parse_day(value)
    if day is None:
        raise bad(field, 'must be a date, e.g. "2026-12-31", or null')
    return day


def is_scope(scope: object) -> bool:
    """A scope as ``domain.scope_for`` forms them, or the person's own ("everywhere", as an export
    carries their moved memories)."""
    if not isinstance(scope, str):
        return False
    if scope in (GLOBAL_SCOPE, DM_SCOPE, EVERYWHERE_SCOPE):
        return True
    kind, colon, ident = scope.partition(":")
    return kind in ("guild", "channel") and bool(colon) and is_snowflake(ident)


def scope_unused(scope: str, mode: ScopeMode) -> str | None:
    """Why this deployment keeps no memories in ``scope`` (None: it does)."""
    if mode is ScopeMode.GLOBAL and scope not in (GLOBAL_SCOPE, EVERYWHERE_SCOPE):
        return f'{scope} is not used here: this deployment keeps one profile per person ("global")'
    if mode is ScopeMode.GUILD and scope == GLOBAL_SCOPE:
        return "global is not used here: this deployment keeps memories per server (guild:<id>, dm, channel:<id>)"
    return None


# ---- the use case


@dataclass(frozen=True)
class Held:
    """What an owner's ledger says they hold or held here: each memory id with every text it
    had (an add's or an update's after state). An erasure redacts those states, so after one an
    export file brings the memories back (docs/import.md)."""

    texts: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, ledger: list[LedgerEntry]) -> Held:
        return cls(frozenset((e.after.memory_id, one_line(e.after.text)) for e in ledger if e.after is not None))

    def holds(self, memory_id: str, text: str) -> bool:
        return (memory_id, text) in self.texts


class ImportMemories(ImportWriter, Ledger, Protocol):
    """The roles of the memory store an import uses: adding once per key, and the owner's rows (what
    this deployment held)."""


class Importer:
    def __init__(
        self,
        memories: ImportMemories,
        mode: ScopeMode,
        *,
        new_id: Callable[[], str] = new_memory_id,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._memories = memories
        self._mode = mode
        self._new_id = new_id
        self._clock = clock

    def run(self, request: ImportRequest) -> ImportResult:
        """Every row checked against this deployment's scopes first (BadImport, nothing
        written), then each row added once; a dry run only counts. A failure part way takes back
        what this request had added before it is raised (the caller answers 503: send it again)."""
        for row in request.rows:
            problem = scope_unused(row.owner.scope, self._mode)
            if problem:
                raise BadImport(row.index, "scope", problem, row.where)
        counts = dict.fromkeys(RowOutcome, 0)
        seen: set[tuple[Owner, str]] = set()
        started = self._clock()  # a person erased after this moment gets nothing from this import
        held: dict[Owner, Held] = {}
        added: list[tuple[ImportRow, LedgerEntry]] = []
        try:
            for row in request.rows:
                key = (row.owner, row.once)
                if self._held(row, held):
                    outcome = RowOutcome.ALREADY_HERE  # one of this deployment's own, come back in an export
                elif request.dry_run:
                    new = key not in seen and not self._memories.has_marker(row.owner, row.once)
                    outcome = RowOutcome.IMPORTED if new else RowOutcome.UNCHANGED
                else:
                    outcome, entry = self._add(
                        row, PersonCheck(row.owner.user_id, started, Basis.IMPORT, row.owner.scope)
                    )
                    if entry is not None:
                        added.append((row, entry))
                seen.add(key)
                counts[outcome] += 1
        except Exception:
            self._take_back(added)
            raise
        logger.info(
            "import done",
            extra={"rows": len(request.rows), **{o.value: n for o, n in counts.items()}, "dry_run": request.dry_run},
        )
        return ImportResult(
            counts[RowOutcome.IMPORTED],
            counts[RowOutcome.UNCHANGED],
            request.dry_run,
            already_here=counts[RowOutcome.ALREADY_HERE],
            refused=counts[RowOutcome.REFUSED],
        )

    def _take_back(self, added: list[tuple[ImportRow, LedgerEntry]]) -> None:
        """The request failed part way: delete what it added (each memory with its marker and a
        ledger row, in one transaction), newest first, so that none of it stays and sending it
        again imports it whole. If this fails too, what is left is idempotent: sending the
        request again counts those rows as imported before and adds the rest."""
        taken = 0
        try:
            for row, entry in reversed(added):
                self._memories.take_back(entry, row.once, reason=TAKEN_BACK_REASON)
                taken += 1
        except Exception as exc:  # noqa: BLE001 - the request's own failure is the one raised
            logger.warning(
                "import not taken back", extra={"taken": taken, "left": len(added) - taken, "error": type(exc).__name__}
            )
            return
        logger.info("import taken back", extra={"taken": taken})

    def _held(self, row: ImportRow, held: dict[Owner, Held]) -> bool:
        """Whether the row is a memory this deployment holds or held for its owner (its id, with
        that text): an export file imported into the stack it came from. The owner's ledger says,
        read once per owner and request, and only for rows whose source id is a memory id."""
        if row.source_id is None or not is_memory_id(row.source_id):
            return False
        if row.owner not in held:
            held[row.owner] = Held.of(self._memories.ledger_for(row.owner, limit=None))
        return held[row.owner].holds(row.source_id, row.template.text)

    def _add(self, row: ImportRow, check: PersonCheck) -> tuple[RowOutcome, LedgerEntry | None]:
        """IMPORTED with its ledger row; UNCHANGED when the owner has it from an earlier import;
        REFUSED when the person was erased since this import began (the erasure stands)."""
        for _ in range(ID_ATTEMPTS):
            try:
                entry = self._memories.add_once(
                    row.memory(self._new_id()),
                    row.once,
                    actor=Actor.IMPORT,
                    reason=IMPORT_REASON,
                    import_id=row.source_id,
                    check=check,
                )
            except PersonRefused:
                logger.info("import row refused: the person was erased", extra={"user_id": row.owner.user_id})
                return RowOutcome.REFUSED, None
            except ConflictError:
                continue  # the fresh id is one the owner has: draw another
            return (RowOutcome.IMPORTED, entry) if entry is not None else (RowOutcome.UNCHANGED, None)
        raise ConflictError(f"no free memory id after {ID_ATTEMPTS} attempts")
