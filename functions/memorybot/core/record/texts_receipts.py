"""The catalog's texts for receipts, "Why?" and "everywhere" memories, in English and Japanese.

What ``core/rights/receipts.py``, ``why.py`` and ``everywhere.py`` answer; ``catalog`` merges these
tables into its own (``catalog.text`` is the one way to read them).
"""

from __future__ import annotations

from .language import Language

RECEIPTS_TEXTS: dict[str, dict[Language, str]] = {
    "receipt_header": {
        Language.EN: "What I just changed in what I remember about you ({count}), only you see this:",
        Language.JA: "いま、あなたについての記憶を変更しました（{count} 件、あなたにだけ表示）：",
    },
    "receipt_line": {
        Language.EN: "{n}. memory {memory_id} {kind}",
        Language.JA: "{n}. 記憶 {memory_id} を{kind}",
    },
    "receipt_footer": {
        Language.EN: "Undo N puts one change back (as in /memory history). /memory receipts turns these off.",
        Language.JA: (
            "「取り消し N」で変更を戻せます（/memory history と同じ）。/memory receipts でこの通知を止められます。"
        ),
    },
    "receipts_on": {
        Language.EN: "Receipts are on: when a conversation changes what I remember about you, I'll tell you.",
        Language.JA: "通知をオンにしました：会話で記憶が変わったら、お知らせします。",
    },
    "receipts_off": {
        Language.EN: "Receipts are off: I won't tell you after each change. /memory history still lists them.",
        Language.JA: "通知をオフにしました。変更は引き続き /memory history で確認できます。",
    },
    "receipts_already_on": {
        Language.EN: "Receipts were already on.",
        Language.JA: "通知はすでにオンです。",
    },
    "receipts_already_off": {
        Language.EN: "Receipts were already off.",
        Language.JA: "通知はすでにオフです。",
    },
    "show_receipts_on": {
        Language.EN: "Receipts: on (/memory receipts enabled:false turns them off).",
        Language.JA: "変更の通知：オン（/memory receipts enabled:false で止められます）。",
    },
    "show_receipts_off": {
        Language.EN: "Receipts: off (/memory receipts enabled:true turns them on).",
        Language.JA: "変更の通知：オフ（/memory receipts enabled:true で再開できます）。",
    },
    "overnight_line": {
        Language.EN: "Overnight I changed {count} of your memories here.",
        Language.JA: "夜のあいだに、ここでのあなたの記憶を {count} 件変更しました。",
    },
    "overnight_button_label": {
        Language.EN: "Show history",
        Language.JA: "履歴を見る",
    },
    "why_button_label": {
        Language.EN: "Why?",
        Language.JA: "なぜ？",
    },
    "why_reply_not_yours": {
        Language.EN: "Sorry, only the person this reply answered can ask why. Nothing was shown.",
        Language.JA: "「なぜ？」を使えるのは、この返事を受け取った本人だけです。何も表示していません。",
    },
    "why_reply_unknown": {
        Language.EN: "I have no record of what that reply read (it may be too old). Nothing was shown.",
        Language.JA: "その返事が何を読んだかの記録が見つかりません（古すぎるのかもしれません）。",
    },
    "why_reply_none": {
        Language.EN: "No memories of yours were in that reply's prompt.",
        Language.JA: "その返事には、あなたの記憶は使われていませんでした。",
    },
    "why_reply_header": {
        Language.EN: "The memories of yours in that reply's prompt ({count}):",
        Language.JA: "その返事に使われた、あなたの記憶（{count} 件）：",
    },
    "why_reply_same": {
        Language.EN: "· {memory_id} (learned {at}) {text}",
        Language.JA: "・{memory_id}（{at} に記憶）{text}",
    },
    "why_reply_changed": {
        Language.EN: "· {memory_id} (learned {at}, changed since) now: {text}",
        Language.JA: "・{memory_id}（{at} に記憶、その後変更）現在：{text}",
    },
    "why_reply_gone": {
        Language.EN: "· {memory_id}: gone since (forgotten, deleted or moved){at}{text}",
        Language.JA: "・{memory_id}：その後なくなりました（忘却・削除・移動）{at}{text}",
    },
    "where_yours": {
        Language.EN: "everywhere you talk with me (your own)",
        Language.JA: "あなたと話すすべての場所（あなた専用）",
    },
    "show_everywhere_header": {
        Language.EN: "Everywhere (read in every server and DM):",
        Language.JA: "すべての場所で使う記憶（どのサーバーや DM でも読みます）：",
    },
    "moved_everywhere": {
        Language.EN: (
            "Memory {memory_id} now goes with you: I read it in every server and DM. /memory here brings it back."
        ),
        Language.JA: "記憶 {memory_id} をすべての場所で使うようにしました。/memory here で戻せます。",
    },
    "moved_here": {
        Language.EN: "Memory {memory_id} is back {where} only.",
        Language.JA: "記憶 {memory_id} を{where}だけで使うように戻しました。",
    },
    "move_not_found": {
        Language.EN: "I don't have a memory {memory_id} of yours to move. Nothing was changed.",
        Language.JA: "移動できる記憶 {memory_id} はありません。何も変更していません。",
    },
    "move_blocked": {
        Language.EN: "Another memory of yours already has the id {memory_id} there. Nothing was changed.",
        Language.JA: "移動先にはすでに同じ ID {memory_id} の記憶があります。何も変更していません。",
    },
    "move_changed": {
        Language.EN: "Memory {memory_id} changed while I moved it. Nothing was changed; please try again.",
        Language.JA: "移動中に記憶 {memory_id} が変わったため、何も変更していません。もう一度お試しください。",
    },
    "why_everywhere": {  # one of the person's "everywhere" memories, asked about from a scope
        Language.EN: (
            "Memory {memory_id} is one of your “everywhere” memories: it was {verb} on {at}, from messages"
            " of yours in the server or DM you moved it from."
        ),
        Language.JA: (
            "記憶 {memory_id} は「すべての場所」の記憶です。{at} に{verb}。移す前のサーバーかDMでの"
            "あなたのメッセージが元になっています。"
        ),
    },
    "forget_all_everywhere_left": {
        Language.EN: (
            "{count} of your “everywhere” memories remain (/memory forget-all everywhere:true clears them too)."
        ),
        Language.JA: (
            "「すべての場所」の記憶が {count} 件残っています（/memory forget-all everywhere:true で消せます）。"
        ),
    },
    "forget_all_everywhere_too": {
        Language.EN: "With everywhere:true, your {count} “everywhere” memories go too.",
        Language.JA: "everywhere:true なので、「すべての場所」の記憶 {count} 件も消します。",
    },
    "forget_all_everywhere_done": {
        Language.EN: "Forgotten too: {count} “everywhere” memories.",
        Language.JA: "「すべての場所」の記憶 {count} 件も忘れました。",
    },
    "change_moved": {Language.EN: "moved", Language.JA: "移動"},
}
RECEIPTS_DESCRIPTIONS: dict[str, dict[Language, str]] = {
    "memory receipts": {
        Language.EN: "Turn on or off being told what a conversation changed in my memories",
        Language.JA: "会話で記憶が変わったときの通知をオン・オフする",
    },
    "memory receipts enabled": {
        Language.EN: "On (true) or off (false)",
        Language.JA: "オン（true）かオフ（false）",
    },
    "memory everywhere": {
        Language.EN: "Have one memory read in every server and DM, not only here",
        Language.JA: "ひとつの記憶を、ここだけでなくすべてのサーバーと DM で使う",
    },
    "memory everywhere id": {Language.EN: "The memory's id", Language.JA: "記憶の ID"},
    "memory here": {
        Language.EN: "Bring one of my everywhere memories back to this place only",
        Language.JA: "「すべての場所」の記憶を、この場所だけに戻す",
    },
    "memory here id": {Language.EN: "The memory's id", Language.JA: "記憶の ID"},
    "memory forget-all everywhere": {
        Language.EN: "Also forget my memories read everywhere",
        Language.JA: "「すべての場所」の記憶も忘れる",
    },
}
