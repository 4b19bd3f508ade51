"""Receipts, "Why?" and the night's line on Discord: their texts (the catalog's) and buttons.

Every button's custom_id names ids only, never text:
- a receipt's Undo is the history's: ``memory-undo:<user id>:<ledger key>``;
- the reply's "Why?": ``memory-because:<user id>:<the reply's interaction id>``;
- the night's line: ``memory-overnight:<user id>`` (opens ``/memory history``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import tzinfo

from ..core.record.catalog import text
from ..core.record.dates import local_stamp
from ..core.record.domain import Owner
from ..core.record.jobs import RememberJob, ReplyJob
from ..core.record.ports import DiscordApi, OvernightNotes
from ..core.rights import receipts
from ..core.rights.receipts import Receipt
from ..core.rights.why import WhyAnswer, WhyState
from .history_view import BUTTON, MESSAGE_MAX_CHARS, SECONDARY_STYLE, button_rows, kind_text, quoted, undo_buttons

BECAUSE_BUTTON = "memory-because"
OVERNIGHT_BUTTON = "memory-overnight"
BECAUSE_ID = re.compile(rf"^{BECAUSE_BUTTON}:([0-9]{{1,20}}):([0-9]{{1,20}})$")
OVERNIGHT_ID = re.compile(rf"^{OVERNIGHT_BUTTON}:([0-9]{{1,20}})$")


def receipt_line(n: int, memory_id: str, kind: str, before: str, after: str, locale: str) -> str:
    head = text("receipt_line", locale, n=n, memory_id=memory_id, kind=kind)
    if before and after:
        return f"{head}\n   {quoted(before, locale)} → {quoted(after, locale)}"
    return f"{head}\n   {quoted(before or after, locale)}"


def receipt_message(receipt: Receipt) -> tuple[str, Sequence[dict]]:
    """The receipt's text (each change, numbered) and an Undo for each."""
    locale = receipt.locale
    parts = [text("receipt_header", locale, count=len(receipt.lines))]
    parts += [
        receipt_line(n, line.memory_id, kind_text(line.kind, locale), line.before, line.after, locale)
        for n, line in enumerate(receipt.lines, 1)
    ]
    parts.append(text("receipt_footer", locale))
    buttons = undo_buttons(receipt.user_id, [(n, line.key) for n, line in enumerate(receipt.lines, 1)], locale)
    return _fitted(parts), button_rows(buttons)


def _fitted(parts: list[str]) -> str:
    """Lines up to Discord's 2,000 characters, the footer kept; a line never split."""
    head, *lines, foot = parts
    kept = head
    for line in lines:
        if len(kept) + len(line) + len(foot) + 2 > MESSAGE_MAX_CHARS:
            break
        kept += "\n" + line
    return f"{kept}\n{foot}"[:MESSAGE_MAX_CHARS]


def because_button(user_id: str, interaction_id: str, locale: str) -> dict:
    return {
        "type": BUTTON,
        "style": SECONDARY_STYLE,
        "label": text("why_button_label", locale),
        "custom_id": f"{BECAUSE_BUTTON}:{user_id}:{interaction_id}",
    }


def overnight_message(user_id: str, count: int, locale: str) -> tuple[str, Sequence[dict]]:
    button = {
        "type": BUTTON,
        "style": SECONDARY_STYLE,
        "label": text("overnight_button_label", locale),
        "custom_id": f"{OVERNIGHT_BUTTON}:{user_id}",
    }
    return text("overnight_line", locale, count=count), button_rows([button])


def tell_the_night(memories: OvernightNotes, discord: DiscordApi, job: ReplyJob | RememberJob) -> bool:
    """The night's line on this use of the bot in the job's scope (core/rights/receipts.py), after its answer."""
    return receipts.tell_overnight(
        memories,
        discord,
        receipts.Interaction(job.interaction_id, job.application_id, job.token),
        Owner(job.scope, job.user_id),
        lambda count: overnight_message(job.user_id, count, job.locale),
    )


_WHY_STATE_KEYS = {
    WhyState.SAME: "why_reply_same",
    WhyState.CHANGED: "why_reply_changed",
    WhyState.GONE: "why_reply_gone",
}


def why_text(answer: WhyAnswer, zone: tzinfo, locale: str) -> str:
    """What was in a reply's prompt, as its asker reads it."""
    if not answer.found:
        return text("why_reply_unknown", locale)
    if not answer.lines:
        return text("why_reply_none", locale)
    parts = [text("why_reply_header", locale, count=len(answer.lines))]
    for line in answer.lines:
        learned = local_stamp(line.learned_at, zone) if line.learned_at is not None else ""
        parts.append(
            text(
                _WHY_STATE_KEYS[line.state],
                locale,
                memory_id=line.memory_id,
                at=learned,
                text=quoted(line.text, locale) if line.text else "",  # the one place a memory's text is quoted
            )
        )
    return "\n".join(parts)[:MESSAGE_MAX_CHARS]
