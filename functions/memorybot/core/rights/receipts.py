"""Receipts: a turn that changed the person's memories tells them so, at once and only them.

After a live turn (the extraction worker) or "Remember this", the changes the turn committed are
listed in ONE ephemeral message on the same interaction, inside its 15 minutes: added, updated,
deleted, the first 80 characters of each state, each with an Undo that is the history's Undo (the
same ledger row, the same conditions: ``history.undo``). No receipt when nothing changed, when the
person turned receipts off (``/memory receipts``), or when the interaction's token is too old.
No model call: the ledger rows the turn wrote are the whole receipt.

The night's changes are told on the next use in a scope: one line, "Overnight I changed N of your
memories", with a button that opens ``/memory history`` (``overnight_count``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from ..record.changes import LedgerEntry
from ..record.domain import CHANGE_ACTIONS, Owner, snowflake_time, utcnow
from ..record.ports import DiscordApi, OvernightNotes, PeopleStore
from .history import ChangeKind, kind_of, state_preview

logger = logging.getLogger(__name__)

# An interaction's token takes follow-ups for 15 minutes; a receipt is not attempted in the last one
# (a late retry of the job would only get Discord's 401 for an expired token).
RECEIPT_WINDOW = timedelta(minutes=14)


@dataclass(frozen=True)
class ReceiptLine:
    key: str  # the ledger row's key: what its Undo names (as the history's)
    memory_id: str
    kind: ChangeKind
    before: str  # the first 80 characters before ("" for an add)
    after: str  # ... and after ("" for a delete)


@dataclass(frozen=True)
class Receipt:
    user_id: str
    locale: str
    lines: tuple[ReceiptLine, ...]


def receipt_of(user_id: str, locale: str, changes: Sequence[LedgerEntry]) -> Receipt:
    """The person's own changes among ``changes``, each a line (anyone else's never: defence in depth)."""
    lines = tuple(
        ReceiptLine(e.key, e.memory_ids[0], kind_of(e), state_preview(e.before), state_preview(e.after))
        for e in changes
        if e.user_id == user_id and e.memory_ids and e.action in CHANGE_ACTIONS
    )
    return Receipt(user_id, locale, lines)


def note_overnight(memories: OvernightNotes, changes: Sequence[LedgerEntry]) -> None:
    """Note what a nightly step changed, by owner, for the line on their next use. A courtesy: a
    failed note loses the line, never a change (each is in the ledger and /memory history)."""
    by_owner: dict[tuple[str, str], list[str]] = {}
    for entry in changes:
        if entry.memory_ids and entry.action in CHANGE_ACTIONS:
            by_owner.setdefault((entry.scope, entry.user_id), []).extend(entry.memory_ids)
    for (scope, user_id), ids in by_owner.items():
        try:
            memories.note_overnight(Owner(scope, user_id), ids)
        except Exception as exc:  # noqa: BLE001
            logger.warning("overnight note not written", extra={"error": type(exc).__name__})


def tell_overnight(
    memories: OvernightNotes,
    discord: DiscordApi,
    interaction: Interaction,
    owner: Owner,
    view: Callable[[int], tuple[str, Sequence[dict]]],
) -> bool:
    """On the person's use in ``owner``'s scope: if the night changed some of their memories there,
    claim the note (a conditional delete: two turns at once tell it once) and send one ephemeral
    line with its count and a button to their history. A failed send puts the note back."""
    try:
        changed = memories.overnight(owner)
        if not changed or not memories.clear_overnight(owner, changed):
            return False
    except Exception as exc:  # noqa: BLE001 - the line is a courtesy; the next use tries again
        logger.warning("overnight note unread", extra={"error": type(exc).__name__})
        return False
    try:
        content, components = view(len(changed))
        discord.follow_up(interaction.application_id, interaction.token, content, components)
    except Exception as exc:  # noqa: BLE001 - put it back for the next use
        logger.warning("overnight line not sent", extra={"error": type(exc).__name__})
        try:
            memories.note_overnight(owner, sorted(changed))
        except Exception:  # noqa: BLE001
            logger.warning("overnight note not put back")
        return False
    return True


class ReceiptView(Protocol):
    """How a receipt is shown (discord/receipts_view.py): its text and its buttons."""

    def __call__(self, receipt: Receipt) -> tuple[str, Sequence[dict]]: ...


@dataclass(frozen=True)
class Interaction:
    """The interaction a receipt answers on: its id (a snowflake: when it began) and its webhook."""

    interaction_id: str
    application_id: str
    token: str


def in_time(interaction_id: str, now: datetime) -> bool:
    try:
        return now - snowflake_time(interaction_id) < RECEIPT_WINDOW
    except (ValueError, OverflowError):
        return False


def deliver(
    people: PeopleStore,
    discord: DiscordApi,
    view: ReceiptView,
    interaction: Interaction,
    receipt: Receipt,
    *,
    as_answer: bool = False,
    clock: Callable[[], datetime] = utcnow,
) -> bool:
    """Send the receipt (one Discord request): a follow-up, or with ``as_answer`` the deferred
    ephemeral answer itself ("Remember this"). False when none was sent: nothing changed, receipts
    are off, the token is too old, or Discord refused (a courtesy: the changes stay, logged by id)."""
    if not receipt.lines or not interaction.token:
        return False
    if not in_time(interaction.interaction_id, clock()):
        logger.info(
            "receipt not sent: the interaction is too old", extra={"interaction_id": interaction.interaction_id}
        )
        return False
    try:
        if not people.get(receipt.user_id).receipts:
            return False
        content, components = view(receipt)
        if as_answer:
            discord.edit_original(interaction.application_id, interaction.token, content, components)
        else:
            discord.follow_up(interaction.application_id, interaction.token, content, components)
    except Exception as exc:  # noqa: BLE001 - what changed stays changed; the history lists it
        logger.warning(
            "receipt not sent", extra={"interaction_id": interaction.interaction_id, "error": type(exc).__name__}
        )
        return False
    logger.info("receipt sent", extra={"interaction_id": interaction.interaction_id, "changes": len(receipt.lines)})
    return True
