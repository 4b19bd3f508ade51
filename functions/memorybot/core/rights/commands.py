"""What a person can do with their own memories: show, forget, why, export, forget all,
and pick one by id.

Every function takes the caller's Owner (the person, in the scope they asked from) and
touches nothing else: another person's id, or the same person's memory in another
server, is simply not found.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import Enum
from typing import Protocol

from ..record import memory_record
from ..record.catalog import text
from ..record.changes import Change, LedgerEntry
from ..record.domain import Action, Actor, Memory, Owner, is_memory_id, iso, parse_iso, utcnow
from ..record.jobs import ForgetAllJob
from ..record.memory_record import Shape
from ..record.person import PERSON_SCOPE
from ..record.ports import (
    ConflictError,
    DiscordApi,
    ForgottenSources,
    Ledger,
    MemoryWriter,
    PeopleStore,
    ProfileReader,
    ReadLog,
)
from .consent import switch_json

logger = logging.getLogger(__name__)

FORGET_ATTEMPTS = 3  # a concurrent change between read and delete: read again


class CommandMemories(ProfileReader, ReadLog, MemoryWriter, Ledger, ForgottenSources, Protocol):
    """The roles of the memory store a person's commands use (show, why, export, forget...)."""


def preview(memory: Memory, locale: str = "", quote: Callable[[str], str] = str) -> str:
    """A memory as a listing or a choice shows it, its end (if it has one) in the reader's language;
    ``quote`` shows its text as written where the listing is read (Discord's markdown escaped)."""
    until = memory.valid_until
    return memory.preview(text("preview_until", locale, until=until.isoformat()) if until is not None else "", quote)


def show(memories: ProfileReader, owner: Owner, locale: str = "", quote: Callable[[str], str] = str) -> list[str]:
    """Every memory of the owner, newest first: the id, a space, and the first 80 characters.
    (The reply prompt and extraction still read only the newest ten.)"""
    profile = memories.read_profile(owner, actor=Actor.COMMAND, reason="memory show", limit=None)
    return [preview(m, locale, quote) for m in profile]


FORGET_ALL_COUNT_REASON = "memory forget-all count"


def count(memories: ProfileReader, owner: Owner) -> int:
    """How many memories the owner has in this scope: the number the forget-all prompt asks about.
    The profile is read to count it, and the ledger says so (not a ``show`` nobody asked for)."""
    return len(memories.read_profile(owner, actor=Actor.COMMAND, reason=FORGET_ALL_COUNT_REASON, limit=None))


SUGGESTIONS = 25  # Discord's limit on autocomplete choices


def suggest(memories: ProfileReader, owner: Owner, typed: str, locale: str = "") -> list[tuple[str, str]]:
    """Autocomplete for forget and why: (id, label) of the caller's own memories, all of them
    searched, matching what was typed (the newest 25)."""
    profile = memories.read_profile(owner, actor=Actor.COMMAND, reason=SUGGEST_REASON, limit=None)
    return matching(profile, typed, locale)


SUGGEST_REASON = "memory autocomplete"


def matching(profile: list[Memory], typed: str, locale: str = "") -> list[tuple[str, str]]:
    """(id, label) of the memories matching what was typed, by id or text (the first 25)."""
    typed = typed.strip().lower()
    return [(m.memory_id, preview(m, locale)) for m in profile if typed in m.memory_id or typed in m.text.lower()][
        :SUGGESTIONS
    ]


@dataclass(frozen=True)
class Provenance:
    """When a memory was learned or last changed, and from which of the person's own messages."""

    memory_id: str
    action: Action  # add or update: the change that set its current text
    at: datetime
    links: tuple[str, ...]
    valid_until: date | None = None  # the last day it holds, if it has an end


def why(memories: CommandMemories, owner: Owner, memory_id: str) -> Provenance | None:
    """The caller's own memory's provenance; None when it is not theirs (or not there)."""
    memory_id = memory_id.strip().lower()
    if not is_memory_id(memory_id):
        return None
    current = memories.get(owner, memory_id)
    if current is None:
        return None
    memories.log_read(owner, (memory_id,), actor=Actor.COMMAND, reason="memory why")
    at = current.updated_at
    action = Action.ADD if current.updated_at == current.created_at else Action.UPDATE
    # Only the owner's own messages are ever sources (Exchange.sources); links name ids, no text.
    links = tuple(ref.link(owner.scope) for ref in current.sources)
    return Provenance(memory_id, action, at, links, current.valid_until)


def export(memories: CommandMemories, user_id: str, people: PeopleStore | None = None) -> dict:
    """Every memory of the person in every scope, and the ledger rows about their memories
    (reads excluded), as JSON-ready data; with ``people``, their memory switch too (its own
    ledger rows with it). Only rows keyed by this person are read."""
    scopes = []
    switch = switch_json(people, user_id) if people is not None else None
    for owner in memories.owners_of(user_id):
        if owner.user_id != user_id:
            continue  # defence in depth: the index is keyed by user id
        if owner.scope == PERSON_SCOPE:  # pause and resume: rows about the person, not a scope
            if switch is not None:
                switch["ledger"] = [_entry_json(e) for e in reversed(memories.ledger_for(owner, limit=None))]
            continue
        profile = memories.read_profile(owner, actor=Actor.COMMAND, reason="memory export", limit=None)
        changes = [e for e in reversed(memories.ledger_for(owner, limit=None)) if e.action is not Action.READ]
        scopes.append(
            {
                "scope": owner.scope,
                "memories": [_memory_json(m) for m in profile],
                "ledger": [_entry_json(e) for e in changes],
                # the messages of theirs never learned from again, because they forgot what was
                "forgottenSourceMessageIds": sorted(memories.forgotten_sources(owner)),
            }
        )
    return {"userId": user_id, "scopes": scopes, **({"memorySwitch": switch} if switch is not None else {})}


def _memory_json(memory: Memory | None) -> dict | None:
    return None if memory is None else memory_record.encode(memory, Shape.EXPORT)


def _entry_json(entry: LedgerEntry) -> dict:
    return {
        "action": entry.action.value,
        "actor": entry.actor.value,
        "reason": entry.reason,
        "at": iso(entry.at),
        "memoryIds": list(entry.memory_ids),
        "before": _memory_json(entry.before),
        "after": _memory_json(entry.after),
        "sourceMessageIds": [ref.message_id for ref in entry.sources],
        "redacted": entry.redacted,
        # An imported memory's id in the system it came from (POST /memory/import).
        **({"importId": entry.import_id} if entry.import_id is not None else {}),
    }


# A forget-all job still marked running after this long has lost its worker (three attempts of
# the extraction function's 5 minutes, and Lambda's waits between them): a new one may start.
FORGET_ALL_STALE = timedelta(minutes=30)
FORGET_ALL_REASON = "user asked to forget everything"
# Deletes at once in a forget-all's job: each is its own transaction on the person's partitions
# (their memories', their ledger's), so a few keep 2,000 well inside the function's minutes without
# pressing one partition's write limit; a throttle is retried by the client.
FORGET_ALL_CONCURRENCY = 4


def begin_forget_all(people: PeopleStore, owner: Owner, job_id: str, at: datetime | None = None) -> datetime | None:
    """Stamp a forget-all in the owner's scope, its job ``job_id`` running; when it began, or None
    (nothing written) while another forget-all's job runs there."""
    at = at or utcnow()
    started = people.start_forget_all(owner.user_id, owner.scope, at, job_id, at - FORGET_ALL_STALE)
    return at if started else None


def forget_all(
    memories: CommandMemories,
    owner: Owner,
    people: PeopleStore | None = None,
    *,
    started: datetime | None = None,
    clock: Callable[[], datetime] = utcnow,
) -> list[str]:
    """Delete every memory of the owner in this scope, each with its own ledger row; the ids deleted.

    With ``people``: the job of the forget-all begun ``started`` (stamped now when None), marked
    done on the person's record once everything is deleted. Idempotent and resumable: run again,
    it deletes what is left. Until it is marked done, no Undo or rollback restores anything in
    the scope; after, nothing current before it was done (``PersonCheck``, RESTORE)."""
    if people is not None and started is None:
        started = begin_forget_all(people, owner, "in-process", clock())
    from concurrent.futures import ThreadPoolExecutor  # the job's only: the interactions function never runs it

    profile = memories.read_profile(owner, actor=Actor.COMMAND, reason="memory forget-all", limit=None)
    with ThreadPoolExecutor(FORGET_ALL_CONCURRENCY, thread_name_prefix="forget-all") as pool:
        gone = list(pool.map(lambda memory: _forget_read(memories, owner, memory), profile))
    deleted = [memory.memory_id for memory, forgotten in zip(profile, gone, strict=True) if forgotten]
    if people is not None and started is not None:
        people.finish_forget_all(owner.user_id, owner.scope, started, clock())
    return deleted


def _forget_read(memories: MemoryWriter, owner: Owner, memory: Memory) -> bool:
    """Delete ``memory`` as the profile read it (one transaction, no second read); read again only
    if it changed since. True when this call deleted it."""
    try:
        memories.apply(Change(Action.DELETE, memory, None, FORGET_ALL_REASON), actor=Actor.COMMAND)
        return True
    except ConflictError:
        return forget(memories, owner, memory.memory_id, reason=FORGET_ALL_REASON).outcome is ForgetOutcome.FORGOTTEN


class ForgetAllDeps(Protocol):
    @property
    def memory_store(self) -> CommandMemories: ...

    @property
    def people_store(self) -> PeopleStore: ...

    @property
    def discord_webhooks(self) -> DiscordApi: ...


def forget_all_job(deps: ForgetAllDeps, job: ForgetAllJob, *, then: Callable[[], str] | None = None) -> dict:
    """The confirmed forget-all's job (the extraction worker): the deletes, the scope marked done,
    then the confirmation rewritten to say so. Ids and counts only in its answer."""
    owner = Owner(job.scope, job.user_id)
    deleted = forget_all(deps.memory_store, owner, deps.people_store, started=parse_iso(job.forget_all_started))
    logger.info("forget-all done", extra={**job.ids(), "deleted": len(deleted)})
    done = text("forget_all_done", job.locale, count=len(deleted), where=job.where)
    done += then() if then is not None else ""  # what follows in the same answer (the everywhere memories)
    try:
        deps.discord_webhooks.edit_original(job.application_id, job.token, done)
    except Exception as exc:  # noqa: BLE001 - what was deleted stays deleted; the message is a courtesy
        logger.warning("forget-all answer not sent", extra={**job.ids(), "error": type(exc).__name__})
    return {"forgotten": len(deleted)}


class ForgetOutcome(str, Enum):
    FORGOTTEN = "forgotten"
    NOT_FOUND = "not_found"


@dataclass(frozen=True)
class ForgetResult:
    outcome: ForgetOutcome
    memory_id: str


def forget(
    memories: MemoryWriter, owner: Owner, memory_id: str, *, reason: str = "user asked to forget"
) -> ForgetResult:
    """Delete the caller's memory for real. Someone else's id is simply not found."""
    memory_id = memory_id.strip().lower()
    if is_memory_id(memory_id):
        for _ in range(FORGET_ATTEMPTS):
            current = memories.get(owner, memory_id)
            if current is None:
                break
            try:
                memories.apply(Change(Action.DELETE, current, None, reason), actor=Actor.COMMAND)
            except ConflictError:
                continue
            return ForgetResult(ForgetOutcome.FORGOTTEN, memory_id)
    return ForgetResult(ForgetOutcome.NOT_FOUND, memory_id)
