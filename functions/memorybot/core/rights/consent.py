"""The person's say over being remembered: the memory switch (pause, resume), the first-use
notice, and what /memory show says about the switch.

The record behind it is one per person, everywhere (``person.Person``, ``ports.PeopleStore``).
While paused nothing is learned from them (``Person.learnable``, checked at the start of every
extraction and again in each write's transaction: ``PersonCheck``) and the reply prompt carries
none of their memories; nothing is deleted, and the commands keep working.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

from ..record.catalog import text
from ..record.changes import LedgerEntry
from ..record.dates import local_stamp
from ..record.domain import Action, Actor
from ..record.person import PERSON_SCOPE
from ..record.ports import PeopleStore


@dataclass(frozen=True)
class Switched:
    changed: bool  # False: it was already so (paused twice, resumed while not paused)
    at: datetime | None  # when it was paused (for a pause that was already on: since when)


def pause(people: PeopleStore, user_id: str, now: datetime) -> Switched:
    """Stop learning from the person and using their memories, everywhere; its own ledger row."""
    entry = LedgerEntry(user_id, Action.PAUSE, Actor.COMMAND, "memory pause: everywhere", now, scope=PERSON_SCOPE)
    if people.pause(user_id, entry):
        return Switched(True, now)
    return Switched(False, people.get(user_id).paused_at)


def resume(people: PeopleStore, user_id: str, now: datetime) -> Switched:
    """Learning and use start again from the next turn; nothing said before now is learned."""
    entry = LedgerEntry(user_id, Action.RESUME, Actor.COMMAND, "memory resume: everywhere", now, scope=PERSON_SCOPE)
    return Switched(people.resume(user_id, entry), now)


def switch_json(people: PeopleStore, user_id: str) -> dict:
    """The switch as /memory export gives it (times only; the scopes where the notice was given)."""
    person = people.get(user_id)
    return {
        "paused": person.paused,
        "pausedAt": _iso(person.paused_at),
        "resumedAt": _iso(person.resumed_at),
        "noticeGivenIn": sorted(person.noticed),
        "forgetAllAt": {scope: _iso(at) for scope, at in person.forgot_all_at},
        "receipts": person.receipts,  # /memory receipts (on unless turned off)
    }


def _iso(at: datetime | None) -> str | None:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if at else None


# ---- the first-use notice (once per person and scope) and the switch's note, in their language


def notice_text(locale: str) -> str:
    """The notice in the language of Discord's ``locale`` ("ja", "en-US", ...); English otherwise."""
    return text("notice", locale)


def paused_note(paused_at: datetime, zone: tzinfo, locale: str = "") -> str:
    """The note /memory show adds while paused: since when, in the deployment's zone, labelled."""
    return text("paused_note", locale, since=local_stamp(paused_at, zone))
