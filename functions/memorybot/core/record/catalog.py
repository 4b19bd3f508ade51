"""Every text a person sees from the bot, in English and Japanese: one catalog.

``text(key, locale, **fields)`` picks the language from Discord's ``locale`` of the interaction
that caused the answer ("ja" → Japanese, anything else → English; a DM follows the interaction
that sent it) and fills the fields. Every key has both languages and both take the same fields
(tests/unit/test_catalog.py), and no answer is worded outside this module and the two whose
tables it merges (texts_receipts.py, texts_admins.py).

Command names stay English in both languages (the texts name them: "/memory show"); their
descriptions are localized (``command_description``).
"""

from __future__ import annotations

import string

from .language import DEFAULT_LANGUAGE, Language, language_of
from .terms import DM_SCOPE, EVERYWHERE_SCOPE, GLOBAL_SCOPE
from .texts_admins import ADMINS_DESCRIPTIONS, ADMINS_TEXTS, SETTING_CHOICES
from .texts_receipts import RECEIPTS_DESCRIPTIONS, RECEIPTS_TEXTS

__all__ = [
    "COMMAND_DESCRIPTIONS",
    "COMMAND_NAMES",
    "DEFAULT_LANGUAGE",
    "REMEMBER_THIS",
    "SETTING_CHOICES",
    "TEXTS",
    "Language",
    "fields_of",
    "one_table",
    "language_of",
    "text",
    "where_label",
]


# key -> {language: text}; fields in braces, str.format style.
_OWN_TEXTS: dict[str, dict[Language, str]] = {
    # ---- where a person's memories live (the {where} of the texts below)
    "where_everywhere": {
        Language.EN: "everywhere I talk with you",
        Language.JA: "あなたと話すすべての場所で",
    },
    "where_dm": {
        Language.EN: "in our direct messages",
        Language.JA: "わたしとのダイレクトメッセージで",
    },
    "where_server": {
        Language.EN: "in the server {name}",
        Language.JA: "サーバー「{name}」で",
    },
    "where_group": {
        Language.EN: "in the group chat {name}",
        Language.JA: "グループチャット {name} で",
    },
    # ---- /memory show and its DMs
    "nothing_remembered": {
        Language.EN: "I don't remember anything about you {where} yet.",
        Language.JA: "{where}あなたについて覚えていることは、まだありません。",
    },
    "dm_sent": {
        Language.EN: "I sent you a DM with what I remember about you.",
        Language.JA: "あなたについて覚えていることを DM で送りました。",
    },
    "dm_failed": {
        Language.EN: (
            "I couldn't send you a DM, so I won't show your memories here. "
            "Allow direct messages from this server's members and try again."
        ),
        Language.JA: (
            "DM を送れなかったので、ここには記憶を表示しません。"
            "このサーバーのメンバーからのダイレクトメッセージを許可してから、もう一度お試しください。"
        ),
    },
    # Where there is no server (the bot's DM, a group DM with a user-installed app) the fix is in
    # the person's own Discord settings; with one profile everywhere we cannot tell where they are.
    "dm_failed_no_server": {
        Language.EN: (
            "I couldn't send you a DM, so I won't show your memories here. "
            "Check that you have not blocked me and that your Discord privacy settings allow direct "
            "messages from apps, then try again."
        ),
        Language.JA: (
            "DM を送れなかったので、ここには記憶を表示しません。"
            "わたしをブロックしていないか、Discord のプライバシー設定でアプリからのダイレクトメッセージが"
            "許可されているかを確認してから、もう一度お試しください。"
        ),
    },
    "dm_failed_anywhere": {
        Language.EN: (
            "I couldn't send you a DM, so I won't show your memories here. "
            'Allow direct messages from me (in a server: its privacy settings, "Direct Messages"; '
            "elsewhere: your Discord privacy settings) and try again."
        ),
        Language.JA: (
            "DM を送れなかったので、ここには記憶を表示しません。"
            "わたしからのダイレクトメッセージを許可してから（サーバーではそのサーバーのプライバシー設定の"
            "「ダイレクトメッセージ」、それ以外では Discord のプライバシー設定）、もう一度お試しください。"
        ),
    },
    "dm_partial": {
        Language.EN: (
            "I sent you {sent} of {total} DMs with your memories; the rest could not be sent just now. "
            "/memory export sends them all as one file."
        ),
        Language.JA: (
            "記憶の DM {total} 通のうち {sent} 通を送りました。残りは今は送れませんでした。"
            "/memory export ならすべてをひとつのファイルで送ります。"
        ),
    },
    "dm_header": {
        Language.EN: "Here is what I remember about you {where} (id, then the start of each memory):",
        Language.JA: "{where}あなたについて覚えていること（ID と、各記憶の書き出し）：",
    },
    "preview_until": {  # after a listed memory that has an end (validUntil)
        Language.EN: " (until {until})",
        Language.JA: "（{until} まで）",
    },
    "dm_footer": {
        Language.EN: "To make me forget one: /memory forget id:<id>",
        Language.JA: "ひとつ忘れてほしいとき：/memory forget id:<id>",
    },
    # ---- /memory forget and why
    "forget_which": {
        Language.EN: "Which memory should I forget? Give its id: /memory forget id:<id> (/memory show lists the ids).",
        Language.JA: (
            "どの記憶を忘れましょうか？ ID を指定してください：/memory forget id:<id>"
            "（ID は /memory show で一覧できます）。"
        ),
    },
    "forgotten": {
        Language.EN: "Forgotten: memory {memory_id} is deleted.",
        Language.JA: "忘れました：記憶 {memory_id} を削除しました。",
    },
    "not_found": {
        Language.EN: "Memory {memory_id} was not found among your memories.",
        Language.JA: "記憶 {memory_id} は、あなたの記憶の中に見つかりませんでした。",
    },
    "no_memory_id": {  # the {memory_id} of not_found when nothing was typed
        Language.EN: "(none)",
        Language.JA: "（なし）",
    },
    "why": {
        Language.EN: "Memory {memory_id} was {verb} on {at}, from these messages of yours:\n{links}",
        Language.JA: "記憶 {memory_id} は {at} に{verb}。元になったあなたのメッセージ：\n{links}",
    },
    "why_no_sources": {
        Language.EN: (
            "Memory {memory_id} was {verb} on {at}; I have no record of which messages (it predates provenance)."
        ),
        Language.JA: (
            "記憶 {memory_id} は {at} に{verb}。どのメッセージからかの記録はありません（出典を記録する前の記憶です）。"
        ),
    },
    "why_until": {  # a memory with an end (validUntil)
        Language.EN: "It holds until {until}; after that I no longer use it in my replies.",
        Language.JA: "この記憶は {until} までのものです。それ以降は返事に使いません。",
    },
    "why_verb_learned": {
        Language.EN: "learned",
        Language.JA: "覚えました",
    },
    "why_verb_changed": {
        Language.EN: "last changed",
        Language.JA: "最後に変更しました",
    },
    # ---- /memory export
    "export_sent": {
        Language.EN: "I sent you a DM with a JSON file of everything I remember about you, and its history.",
        Language.JA: "あなたについて覚えていることすべてと、その履歴を JSON ファイルにして DM で送りました。",
    },
    "export_failed": {
        Language.EN: (
            "I couldn't send you a DM, so I won't export your memories here. "
            "Allow direct messages from this server's members and try again."
        ),
        Language.JA: (
            "DM を送れなかったので、ここには記憶をエクスポートしません。"
            "このサーバーのメンバーからのダイレクトメッセージを許可してから、もう一度お試しください。"
        ),
    },
    "export_dm": {  # the DM that carries the file
        Language.EN: "Your memorybot export (every scope).",
        Language.JA: "memorybot のエクスポートです（すべての場所の分）。",
    },
    "nothing_to_export": {
        Language.EN: "I don't remember anything about you, anywhere.",
        Language.JA: "どこでも、あなたについて覚えていることはありません。",
    },
    # ---- /memory forget-all and its button
    "forget_all_ask": {
        Language.EN: (
            "Forget all {count} memories I have about you {where}? This cannot be undone. "
            "Only you can confirm, within 15 minutes."
        ),
        Language.JA: (
            "{where}覚えているあなたの記憶 {count} 件を、すべて忘れますか？ 元には戻せません。"
            "確認できるのはあなただけで、15 分以内です。"
        ),
    },
    "forget_all_button": {
        Language.EN: "Forget everything",
        Language.JA: "すべて忘れる",
    },
    "forget_all_done": {
        Language.EN: "Forgotten: {count} memories about you {where} are deleted.",
        Language.JA: "忘れました：{where}覚えていたあなたの記憶 {count} 件を削除しました。",
    },
    "forget_all_started": {
        Language.EN: (
            "Forgetting every memory I have about you {where}: nothing said before now will be learned "
            "again. I'll update this message when it's done."
        ),
        Language.JA: (
            "{where}覚えているあなたの記憶をすべて忘れています。今より前に言われたことから、"
            "もう学ぶことはありません。終わったら、このメッセージを書き換えてお知らせします。"
        ),
    },
    "forget_all_running": {
        Language.EN: (
            "I'm already forgetting everything about you {where}; that message will say when it's done. "
            "Nothing more was started."
        ),
        Language.JA: (
            "{where}覚えているあなたの記憶は、すでに忘れている最中です。終わったら、そのメッセージでお知らせします。"
            "新しく始めたことはありません。"
        ),
    },
    "forget_all_not_yours": {
        Language.EN: "Sorry, only the person who asked can confirm this. Nothing was deleted.",
        Language.JA: "ごめんなさい、これを確認できるのは頼んだ本人だけです。何も削除していません。",
    },
    "forget_all_expired": {
        Language.EN: "Sorry, this confirmation expired. Nothing was deleted; ask again with /memory forget-all.",
        Language.JA: (
            "ごめんなさい、この確認は期限切れです。何も削除していません。/memory forget-all でもう一度どうぞ。"
        ),
    },
    # ---- /memory pause and resume
    "paused": {
        Language.EN: (
            "Paused: from now on I won't learn from you or use what I remember about you, anywhere. "
            "Nothing is deleted: /memory show, export and forget still work. /memory resume turns it back on."
        ),
        Language.JA: (
            "一時停止しました：これからは、どこでも、あなたから学ぶことも、覚えていることを使うこともしません。"
            "何も削除していません。/memory show、export、forget はそのまま使えます。/memory resume で再開します。"
        ),
    },
    "already_paused": {
        Language.EN: "Memory was already paused. /memory resume turns it back on.",
        Language.JA: "記憶はすでに一時停止中です。/memory resume で再開します。",
    },
    "resumed": {
        Language.EN: (
            "Resumed: I'll learn from you and use what I remember again, from your next message. "
            "Nothing you said while memory was paused will be learned."
        ),
        Language.JA: (
            "再開しました：次のメッセージから、また学び、覚えていることを使います。一時停止中に話したことは学びません。"
        ),
    },
    "not_paused": {
        Language.EN: "Memory is not paused: I'm learning as usual. /memory pause stops it.",
        Language.JA: "記憶は一時停止していません。いつもどおり学んでいます。/memory pause で止められます。",
    },
    "paused_note": {  # added to /memory show's answer while paused
        Language.EN: (
            "Memory is paused (since {since}): I'm not learning from you or using what I remember, "
            "anywhere. /memory resume turns it back on."
        ),
        Language.JA: (
            "記憶は一時停止中です（{since} から）。どこでも、あなたから学ぶことも、覚えていることを使うことも"
            "していません。/memory resume で再開します。"
        ),
    },
    # ---- the first-use notice: once per person and scope
    "notice": {
        Language.EN: (
            "Just so you know: I remember things people tell me, to answer them better. "
            "/memory show lists what I remember about you, /memory pause stops me learning from you "
            "and using it, and /memory forget-all deletes it."
        ),
        Language.JA: (
            "お知らせ：わたしは話してもらったことを覚えて、返事に活かします。"
            "覚えていることは /memory show で確認でき、/memory pause で覚えるのも使うのも止められ、"
            "/memory forget-all ですべて消せます。"
        ),
    },
    # ---- /memory history and its buttons (discord/history_view.py)
    "history_header": {
        Language.EN: "Your newest changes {where}, newest first:",
        Language.JA: "{where}の最近の変更（新しい順）：",
    },
    "history_header_older": {
        Language.EN: "Older changes {where}:",
        Language.JA: "{where}の、それより前の変更：",
    },
    "history_nothing": {
        Language.EN: "Nothing about you has changed {where} yet.",
        Language.JA: "{where}は、あなたについてまだ何も変わっていません。",
    },
    "history_nothing_older": {
        Language.EN: "There are no older changes {where}.",
        Language.JA: "{where}は、これより前の変更はありません。",
    },
    "history_line": {
        Language.EN: "{n}. {at} · memory {memory_id} {kind} by {who}",
        Language.JA: "{n}. {at} · 記憶 {memory_id} を{who}が{kind}",
    },
    "history_quoted": {  # the start of a state, before → after
        Language.EN: "“{text}”",
        Language.JA: "「{text}」",
    },
    "history_erased_text": {
        Language.EN: "(its text was erased)",
        Language.JA: "（本文は消去済み）",
    },
    "history_footer": {
        Language.EN: "Undo N puts one change back as it was before (only while nothing changed it since).",
        Language.JA: "「取り消し N」で、その変更の前の状態に戻します（その後に変わっていない場合のみ）。",
    },
    "history_undo_label": {
        Language.EN: "Undo {n}",
        Language.JA: "取り消し {n}",
    },
    "history_older_label": {
        Language.EN: "Older",
        Language.JA: "前へ",
    },
    "history_not_yours": {
        Language.EN: "Sorry, only the person whose history this is can use its buttons. Nothing was changed.",
        Language.JA: "この履歴のボタンを使えるのは本人だけです。何も変更していません。",
    },
    "undo_done": {
        Language.EN: "Undone: memory {memory_id} is back as it was before that change ({kind}).",
        Language.JA: "取り消しました：記憶 {memory_id} はその変更（{kind}）の前の状態に戻りました。",
    },
    "undo_changed": {
        Language.EN: (
            "Not undone: memory {memory_id} has changed since then, so nothing was changed. "
            "/memory history shows what happened after."
        ),
        Language.JA: (
            "取り消せませんでした：記憶 {memory_id} はその後に変わっているため、何も変更していません。"
            "その後の経緯は /memory history で確認できます。"
        ),
    },
    "undo_final": {
        Language.EN: "Not undone: what a forget-all or an erasure removed is never brought back. Nothing was changed.",
        Language.JA: "取り消せませんでした：forget-all や消去で消したものは二度と戻りません。何も変更していません。",
    },
    "undo_not_found": {
        Language.EN: "That change is not one of yours I can undo. Nothing was changed.",
        Language.JA: "その変更は、あなたの取り消せる変更ではありません。何も変更していません。",
    },
    # what kind of change (history_line's {kind}), by core.rights.history.ChangeKind
    "change_added": {Language.EN: "added", Language.JA: "追加"},
    "change_updated": {Language.EN: "updated", Language.JA: "更新"},
    "change_deleted": {Language.EN: "deleted", Language.JA: "削除"},
    "change_decayed": {Language.EN: "decayed", Language.JA: "整理で削除"},
    "change_forgotten": {Language.EN: "forgotten", Language.JA: "忘却"},
    "change_erased": {Language.EN: "erased", Language.JA: "消去"},
    "change_rolled_back": {Language.EN: "rolled back", Language.JA: "ロールバック"},
    "change_imported": {Language.EN: "imported", Language.JA: "インポート"},
    "change_undone": {Language.EN: "undone", Language.JA: "取り消し"},
    # who made it (history_line's {who}), by core.rights.history.Who
    "who_you": {Language.EN: "you", Language.JA: "あなた"},
    "who_conversation": {Language.EN: "a conversation", Language.JA: "会話"},
    "who_night": {Language.EN: "the night", Language.JA: "夜間処理"},
    "who_operator": {Language.EN: "an operator", Language.JA: "運用者"},
    # An import is an operator's (the admin secret); its kind already says "imported".
    "who_import": {Language.EN: "an operator", Language.JA: "運用者"},
    # ---- "Remember this" (the message command)
    "remember_will": {
        Language.EN: "I'll remember that.",
        Language.JA: "覚えておきます。",
    },
    "remember_already": {
        Language.EN: (
            "I've already remembered that message: I take each message in once. /memory show lists what I remember."
        ),
        Language.JA: (
            "そのメッセージはもう覚えています。同じメッセージを覚えるのは一度だけです。"
            "/memory show で一覧を見られます。"
        ),
    },
    "remember_nothing": {
        Language.EN: "There's nothing there for me to remember.",
        Language.JA: "そこには、覚えておくことはありませんでした。",
    },
    "remember_paused": {
        Language.EN: "Memory is paused, so I won't learn from that. /memory resume turns it back on.",
        Language.JA: "記憶は一時停止中なので、そこからは学びません。/memory resume で再開します。",
    },
    "remember_not_yours": {
        Language.EN: (
            "I can only remember your own messages: only a person's own words decide what I remember "
            "about them. Nothing was remembered."
        ),
        Language.JA: (
            "覚えられるのは、あなた自身のメッセージだけです。その人について何を覚えるかを決めるのは、"
            "その人自身の言葉だけだからです。何も覚えていません。"
        ),
    },
    "remember_unreadable": {
        Language.EN: "Sorry, I couldn't read that message, so I remembered nothing. Please try again.",
        Language.JA: "ごめんなさい、そのメッセージを読み取れなかったので、何も覚えていません。もう一度お試しください。",
    },
    "remember_no_text": {
        Language.EN: "That message has no text I could remember.",
        Language.JA: "そのメッセージには、覚えられる文章がありません。",
    },
    "remember_not_now": {
        Language.EN: "I couldn't decide about that just now, so I remembered nothing. Please try again later.",
        Language.JA: "今は判断できなかったので、何も覚えていません。しばらくしてからもう一度お試しください。",
    },
    "remember_failed": {  # the job failed for good (not the model's "not yet"): some of it may be done
        Language.EN: "Sorry, something went wrong on my side with that. Please try again later.",
        Language.JA: "ごめんなさい、こちら側で問題が起きました。しばらくしてからもう一度お試しください。",
    },
    # ---- /chat and everything else
    "empty_chat": {
        Language.EN: "Say something after /chat and I'll answer.",
        Language.JA: "/chat のあとに何か書いてくれたら、お返事します。",
    },
    "apology": {  # the reply when the chat model could not answer
        Language.EN: "Sorry, I couldn't think of an answer just now. Please try again in a moment.",
        Language.JA: "ごめんなさい、今はうまく答えられませんでした。少ししてからもう一度お試しください。",
    },
    "stale_component": {
        Language.EN: (
            "That button or form is not one I can act on (it may be from an older message). "
            "Use /memory or /chat instead."
        ),
        Language.JA: (
            "そのボタンやフォームには対応できません（古いメッセージのものかもしれません）。"
            "/memory か /chat をお使いください。"
        ),
    },
    "unsupported": {
        Language.EN: "Sorry, I don't know that command.",
        Language.JA: "ごめんなさい、そのコマンドはわかりません。",
    },
    "busy": {
        Language.EN: "Sorry, I can't answer right now. Please try again in a moment.",
        Language.JA: "ごめんなさい、今はお答えできません。少ししてからもう一度お試しください。",
    },
    "error": {
        Language.EN: "Sorry, something went wrong on my side.",
        Language.JA: "ごめんなさい、こちらで問題が起きました。",
    },
}

# The commands' descriptions (Discord: 1-100 characters), by the command's path ("memory forget id").
_OWN_DESCRIPTIONS: dict[str, dict[Language, str]] = {
    "chat": {Language.EN: "Talk to memorybot", Language.JA: "memorybot と話す"},
    "chat message": {Language.EN: "What you want to say", Language.JA: "話したいこと"},
    "memory": {
        Language.EN: "What memorybot remembers about you",
        Language.JA: "memorybot があなたについて覚えていること",
    },
    "memory show": {
        Language.EN: "DM me everything you remember about me here",
        Language.JA: "ここで覚えていることを、すべて DM で送ってもらう",
    },
    "memory forget": {Language.EN: "Forget one of my memories", Language.JA: "記憶をひとつ忘れてもらう"},
    "memory forget id": {Language.EN: "The memory's id", Language.JA: "記憶の ID"},
    "memory why": {
        Language.EN: "When and from which of my messages you learned a memory",
        Language.JA: "ある記憶を、いつ、わたしのどのメッセージから覚えたか",
    },
    "memory why id": {Language.EN: "The memory's id", Language.JA: "記憶の ID"},
    "memory export": {
        Language.EN: "DM me a JSON file of all my memories and their history",
        Language.JA: "すべての記憶とその履歴を、JSON ファイルで DM に送ってもらう",
    },
    "memory forget-all": {
        Language.EN: "Forget everything you remember about me here",
        Language.JA: "ここで覚えていることを、すべて忘れてもらう",
    },
    "memory pause": {
        Language.EN: "Stop learning from me and using what you remember, everywhere (nothing is deleted)",
        Language.JA: "どこでも、わたしから学ぶことも覚えたことを使うことも止める（何も消えません）",
    },
    "memory resume": {
        Language.EN: "Start learning from me again, from now on",
        Language.JA: "今から、また学ぶようにする",
    },
    "memory history": {
        Language.EN: "What changed about me here lately, with an Undo for each change (only I see it)",
        Language.JA: "ここで最近わたしについて変わったこと（変更ごとに取り消しボタン付き、自分にだけ表示）",
    },
}


def one_table(*tables: dict[str, dict[Language, str]]) -> dict[str, dict[Language, str]]:
    """The tables as one; a key in two of them is an error (one would silently win over the other)."""
    merged: dict[str, dict[Language, str]] = {}
    for table in tables:
        if twice := sorted(merged.keys() & table.keys()):
            raise ValueError(f"catalog keys written twice: {twice}")
        merged.update(table)
    return merged


# The texts of receipts, "Why?" and "everywhere" (texts_receipts.py) and of a server's admins
# (texts_admins.py) live in modules of their own; read, they are one table.
TEXTS = one_table(_OWN_TEXTS, RECEIPTS_TEXTS, ADMINS_TEXTS)
COMMAND_DESCRIPTIONS = one_table(_OWN_DESCRIPTIONS, RECEIPTS_DESCRIPTIONS, ADMINS_DESCRIPTIONS)

# The message command's name: what Discord sends back, whichever language its menu showed.
REMEMBER_THIS = "Remember this"
# Names a person sees in Discord's menus where a Japanese name reads better (the message command).
COMMAND_NAMES: dict[str, dict[Language, str]] = {
    REMEMBER_THIS: {Language.EN: REMEMBER_THIS, Language.JA: "これを覚えて"},
}


def where_label(scope: str, locale: str = "", name: str = "") -> str:
    """Where memories live, in words: a server by its ``name`` where it is known, else by its id."""
    if scope == GLOBAL_SCOPE:
        return text("where_everywhere", locale)
    if scope == DM_SCOPE:
        return text("where_dm", locale)
    if scope == EVERYWHERE_SCOPE:
        return text("where_yours", locale)
    kind, _, ident = scope.partition(":")
    return text("where_server" if kind == "guild" else "where_group", locale, name=name or ident or scope)


def text(key: str, locale: str = "", **fields: object) -> str:
    """The text ``key`` in the language of ``locale``, its fields filled (a missing one raises KeyError)."""
    return TEXTS[key][language_of(locale)].format(**fields)


def fields_of(template: str) -> frozenset[str]:
    """The names of a template's fields: what both languages of a key must take."""
    return frozenset(name for _, name, _, _ in string.Formatter().parse(template) if name)
