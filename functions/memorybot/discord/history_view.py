"""``/memory history`` on Discord: the page of changes (only the caller sees it), its Undo and
"Older" buttons, and the Undo's answer, in English or Japanese by the interaction's locale
(the words are the catalog's: core/record/catalog.py).

Button custom_ids name the person and a ledger row's key, never any text:
``memory-undo:<user id>:<key>`` and ``memory-history:<user id>:<key to page on from>``.
"""

from __future__ import annotations

import re
from datetime import tzinfo

from ..core.record.catalog import text, where_label
from ..core.record.dates import local_stamp
from ..core.rights.history import ChangeKind, HistoryLine, HistoryPage, UndoOutcome, UndoResult
from .formats import markdown_escaped

UNDO_BUTTON = "memory-undo"
HISTORY_BUTTON = "memory-history"
# A ledger row's key: "<fixed-width ISO time>#<entry id>" (changes.LedgerEntry.key).
_KEY = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{15}Z#[0-9A-Za-z_-]{1,32}"
UNDO_ID = re.compile(rf"^{UNDO_BUTTON}:([0-9]{{1,20}}):({_KEY})$")
HISTORY_ID = re.compile(rf"^{HISTORY_BUTTON}:([0-9]{{1,20}}):({_KEY})$")

ACTION_ROW, BUTTON, SECONDARY_STYLE = 1, 2, 2
BUTTONS_PER_ROW = 5
MESSAGE_MAX_CHARS = 2000


def undo_button(user_id: str, key: str) -> str:
    return f"{UNDO_BUTTON}:{user_id}:{key}"


def older_button(user_id: str, key: str) -> str:
    return f"{HISTORY_BUTTON}:{user_id}:{key}"


# An escaped start of a text (80 characters, up to twice that escaped) is cut to this, so a page's
# six lines with two each stay inside one message however much of the text is markup.
QUOTED_MAX_CHARS = 120


def quoted(state: str, locale: str) -> str:
    """The start of a memory's text, shown as written (never as markup)."""
    if not state:
        return "—"
    shown = markdown_escaped(state)
    while len(shown) > QUOTED_MAX_CHARS:  # cut the text, never an escape in two
        state = state[: len(state) - max(1, (len(shown) - QUOTED_MAX_CHARS) // 2)]
        shown = markdown_escaped(state)
    return text("history_quoted", locale, text=shown)


def line_text(n: int, line: HistoryLine, zone: tzinfo, locale: str) -> str:
    head = text(
        "history_line",
        locale,
        n=n,
        at=local_stamp(line.at, zone),
        memory_id=markdown_escaped(line.memory_id),
        kind=kind_text(line.kind, locale),
        who=text(f"who_{line.who.value}", locale),
    )
    if line.redacted:
        return f"{head}\n   {text('history_erased_text', locale)}"
    return f"{head}\n   {quoted(line.before, locale)} → {quoted(line.after, locale)}"


def kind_text(kind: ChangeKind, locale: str) -> str:
    return text("change_" + kind.value.replace(" ", "_"), locale)


def page_answer(
    page: HistoryPage, user_id: str, scope: str, zone: tzinfo, locale: str, *, older: bool, place: str = ""
) -> dict:
    """The message data (content and buttons) of one page of history; ``place`` names the scope
    (the server by its name), else its label from the scope alone."""
    place = place or where_label(scope, locale)
    if not page.lines:
        return {
            "content": text("history_nothing_older" if older else "history_nothing", locale, where=place),
            "components": [],
        }
    parts = [text("history_header_older" if older else "history_header", locale, where=place)]
    parts += [line_text(n, line, zone, locale) for n, line in enumerate(page.lines, 1)]
    buttons = undo_buttons(user_id, [(n, line.key) for n, line in enumerate(page.lines, 1) if line.undoable], locale)
    if buttons:
        parts.append(text("history_footer", locale))
    if page.older:
        buttons.append(
            {
                "type": BUTTON,
                "style": SECONDARY_STYLE,
                "label": text("history_older_label", locale),
                "custom_id": older_button(user_id, page.older),
            }
        )
    return {"content": "\n".join(parts)[:MESSAGE_MAX_CHARS], "components": button_rows(buttons)}


def button_rows(buttons: list[dict]) -> list[dict]:
    """Buttons in Discord's action rows, five to a row."""
    return [
        {"type": ACTION_ROW, "components": buttons[i : i + BUTTONS_PER_ROW]}
        for i in range(0, len(buttons), BUTTONS_PER_ROW)
    ]


def undo_buttons(user_id: str, keys: list[tuple[int, str]], locale: str) -> list[dict]:
    """ "Undo n" for each (n, ledger key): the history's Undo, on a page or on a receipt."""
    return [
        {
            "type": BUTTON,
            "style": SECONDARY_STYLE,
            "label": text("history_undo_label", locale, n=n),
            "custom_id": undo_button(user_id, key),
        }
        for n, key in keys
    ]


UNDO_ANSWERS = {
    UndoOutcome.UNDONE: "undo_done",
    UndoOutcome.CHANGED: "undo_changed",
    UndoOutcome.FINAL: "undo_final",
    UndoOutcome.NOT_FOUND: "undo_not_found",
}


def undo_text(result: UndoResult, locale: str) -> str:
    kind = kind_text(result.kind, locale) if result.kind is not None else ""
    return text(UNDO_ANSWERS[result.outcome], locale, memory_id=result.memory_id, kind=kind)


def not_yours_text(locale: str) -> str:
    return text("history_not_yours", locale)
