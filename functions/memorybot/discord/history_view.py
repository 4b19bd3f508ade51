"""``/memory history`` on Discord: the page of changes (only the caller sees it), its Undo and
"Older" buttons, and the Undo's answer, in English or Japanese by the interaction's locale.

Button custom_ids name the person and a ledger row's key, never any text:
``memory-undo:<user id>:<key>`` and ``memory-history:<user id>:<key to page on from>``.
"""

from __future__ import annotations

import re
from datetime import tzinfo

from ..core.dates import local_stamp
from ..core.history import ChangeKind, HistoryLine, HistoryPage, UndoOutcome, UndoResult, Who

UNDO_BUTTON = "memory-undo"
HISTORY_BUTTON = "memory-history"
# A ledger row's key: "<fixed-width ISO time>#<entry id>" (domain.LedgerEntry.key).
_KEY = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{15}Z#[0-9A-Za-z_-]{1,32}"
UNDO_ID = re.compile(rf"^{UNDO_BUTTON}:([0-9]{{1,20}}):({_KEY})$")
HISTORY_ID = re.compile(rf"^{HISTORY_BUTTON}:([0-9]{{1,20}}):({_KEY})$")

ACTION_ROW, BUTTON, SECONDARY_STYLE = 1, 2, 2
BUTTONS_PER_ROW = 5
MESSAGE_MAX_CHARS = 2000

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "header": "Your newest changes {where}, newest first:",
        "header_older": "Older changes {where}:",
        "nothing": "Nothing about you has changed {where} yet.",
        "nothing_older": "There are no older changes {where}.",
        "line": "{n}. {at} · memory {memory_id} {kind} by {who}",
        "erased_text": "(its text was erased)",
        "footer": "Undo N puts one change back as it was before (only while nothing changed it since).",
        "undo_label": "Undo {n}",
        "older_label": "Older",
        "undone": "Undone: memory {memory_id} is back as it was before that change ({kind}).",
        "changed": "Not undone: memory {memory_id} has changed since then, so nothing was changed. "
        "/memory history shows what happened after.",
        "final": "Not undone: what a forget-all or an erasure removed is never brought back. Nothing was changed.",
        "not_found": "That change is not one of yours I can undo. Nothing was changed.",
        "not_yours": "Sorry, only the person whose history this is can use its buttons. Nothing was changed.",
    },
    "ja": {
        "header": "{where}での最近の変更（新しい順）：",
        "header_older": "{where}でのそれより前の変更：",
        "nothing": "{where}では、あなたについてまだ何も変わっていません。",
        "nothing_older": "{where}では、これより前の変更はありません。",
        "line": "{n}. {at} · メモ {memory_id} を{who}が{kind}",
        "erased_text": "（本文は消去済み）",
        "footer": "「取り消し N」で、その変更の前の状態に戻します（その後に変わっていない場合のみ）。",
        "undo_label": "取り消し {n}",
        "older_label": "前へ",
        "undone": "取り消しました：メモ {memory_id} はその変更（{kind}）の前の状態に戻りました。",
        "changed": "取り消せませんでした：メモ {memory_id} はその後に変わっているため、何も変更していません。"
        "その後の経緯は /memory history で確認できます。",
        "final": "取り消せませんでした：forget-all や消去で消したものは二度と戻りません。何も変更していません。",
        "not_found": "その変更は、あなたの取り消せる変更ではありません。何も変更していません。",
        "not_yours": "この履歴のボタンを使えるのは本人だけです。何も変更していません。",
    },
}
KINDS: dict[str, dict[ChangeKind, str]] = {
    "en": {
        ChangeKind.ADDED: "added",
        ChangeKind.UPDATED: "updated",
        ChangeKind.DELETED: "deleted",
        ChangeKind.DECAYED: "decayed",
        ChangeKind.FORGOTTEN: "forgotten",
        ChangeKind.ERASED: "erased",
        ChangeKind.ROLLED_BACK: "rolled back",
        ChangeKind.IMPORTED: "imported",
        ChangeKind.UNDONE: "undone",
    },
    "ja": {
        ChangeKind.ADDED: "追加",
        ChangeKind.UPDATED: "更新",
        ChangeKind.DELETED: "削除",
        ChangeKind.DECAYED: "整理で削除",
        ChangeKind.FORGOTTEN: "忘却",
        ChangeKind.ERASED: "消去",
        ChangeKind.ROLLED_BACK: "ロールバック",
        ChangeKind.IMPORTED: "インポート",
        ChangeKind.UNDONE: "取り消し",
    },
}
WHO: dict[str, dict[Who, str]] = {
    "en": {
        Who.YOU: "you",
        Who.CONVERSATION: "a conversation",
        Who.NIGHT: "the night",
        Who.OPERATOR: "an operator",
        Who.IMPORT: "an import",
    },
    "ja": {
        Who.YOU: "あなた",
        Who.CONVERSATION: "会話",
        Who.NIGHT: "夜間処理",
        Who.OPERATOR: "運用者",
        Who.IMPORT: "インポート",
    },
}
WHERE: dict[str, dict[str, str]] = {
    "en": {"global": "everywhere I talk with you", "dm": "in our direct messages", "guild": "in the server {id}"},
    "ja": {"global": "すべての場所", "dm": "このDM", "guild": "サーバー {id}"},
}
WHERE_GROUP = {"en": "in the group chat {id}", "ja": "グループチャット {id}"}


def language(locale: str) -> str:
    """ "ja" for a Japanese Discord locale, English for everything else."""
    lang = locale.split("-")[0].strip().lower()
    return lang if lang in TEXTS else "en"


def where(scope: str, lang: str) -> str:
    kind, _, ident = scope.partition(":")
    if kind in WHERE[lang] and (kind != "guild" or ident):
        return WHERE[lang][kind].format(id=ident)
    return WHERE_GROUP[lang].format(id=ident or scope)


def undo_button(user_id: str, key: str) -> str:
    return f"{UNDO_BUTTON}:{user_id}:{key}"


def older_button(user_id: str, key: str) -> str:
    return f"{HISTORY_BUTTON}:{user_id}:{key}"


def _quote(text: str, lang: str) -> str:
    return f"「{text}」" if lang == "ja" else f"“{text}”"


def line_text(n: int, line: HistoryLine, zone: tzinfo, lang: str) -> str:
    head = TEXTS[lang]["line"].format(
        n=n,
        at=local_stamp(line.at, zone),
        memory_id=line.memory_id,
        kind=KINDS[lang][line.kind],
        who=WHO[lang][line.who],
    )
    if line.redacted:
        return f"{head}\n   {TEXTS[lang]['erased_text']}"
    states = [_quote(s, lang) if s else "—" for s in (line.before, line.after)]
    return f"{head}\n   {states[0]} → {states[1]}"


def page_answer(page: HistoryPage, user_id: str, scope: str, zone: tzinfo, locale: str, *, older: bool) -> dict:
    """The message data (content and buttons) of one page of history."""
    lang = language(locale)
    place = where(scope, lang)
    texts = TEXTS[lang]
    if not page.lines:
        return {"content": texts["nothing_older" if older else "nothing"].format(where=place), "components": []}
    parts = [texts["header_older" if older else "header"].format(where=place)]
    parts += [line_text(n, line, zone, lang) for n, line in enumerate(page.lines, 1)]
    buttons = [
        {
            "type": BUTTON,
            "style": SECONDARY_STYLE,
            "label": texts["undo_label"].format(n=n),
            "custom_id": undo_button(user_id, line.key),
        }
        for n, line in enumerate(page.lines, 1)
        if line.undoable
    ]
    if buttons:
        parts.append(texts["footer"])
    if page.older:
        buttons.append(
            {
                "type": BUTTON,
                "style": SECONDARY_STYLE,
                "label": texts["older_label"],
                "custom_id": older_button(user_id, page.older),
            }
        )
    rows = [
        {"type": ACTION_ROW, "components": buttons[i : i + BUTTONS_PER_ROW]}
        for i in range(0, len(buttons), BUTTONS_PER_ROW)
    ]
    return {"content": "\n".join(parts)[:MESSAGE_MAX_CHARS], "components": rows}


def undo_text(result: UndoResult, locale: str) -> str:
    lang = language(locale)
    key = {
        UndoOutcome.UNDONE: "undone",
        UndoOutcome.CHANGED: "changed",
        UndoOutcome.FINAL: "final",
        UndoOutcome.NOT_FOUND: "not_found",
    }[result.outcome]
    kind = KINDS[lang][result.kind] if result.kind is not None else ""
    return TEXTS[lang][key].format(memory_id=result.memory_id, kind=kind)


def not_yours_text(locale: str) -> str:
    return TEXTS[language(locale)]["not_yours"]
