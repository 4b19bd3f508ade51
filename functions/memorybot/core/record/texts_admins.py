"""The catalog's texts for a server's admins, in English and Japanese: ``/memory-settings``
(``core/rights/servers.py``) and what members see of its settings.

``catalog`` merges these tables into its own (``catalog.text`` is the one way to read them).
"""

from __future__ import annotations

from .language import Language

ADMINS_TEXTS: dict[str, dict[Language, str]] = {
    "settings_not_admin": {
        Language.EN: "Only this server's admins (Manage Server) can use /memory-settings. Nothing was changed.",
        Language.JA: (
            "/memory-settings は、このサーバーの管理者（サーバー管理権限）だけが使えます。何も変更していません。"
        ),
    },
    "settings_server_only": {
        Language.EN: "/memory-settings works in a server only.",
        Language.JA: "/memory-settings はサーバーの中でだけ使えます。",
    },
    "settings_changed": {
        Language.EN: "Done: {setting} is now {value}. It takes effect within a minute.",
        Language.JA: "変更しました：{setting} は {value} になりました。1 分以内に反映されます。",
    },
    "settings_unchanged": {
        Language.EN: "{setting} is already {value}: nothing changed.",
        Language.JA: "{setting} はすでに {value} です。何も変更していません。",
    },
    "settings_conflict": {
        Language.EN: "Another admin changed the settings at the same moment. Please try again.",
        Language.JA: "ほかの管理者が同時に設定を変更しました。もう一度お試しください。",
    },
    "settings_bad_value": {
        Language.EN: "That does not fit {setting}: {hint} Nothing was changed.",
        Language.JA: "{setting} には使えない値です：{hint} 何も変更していません。",
    },
    "settings_hint_channel": {
        Language.EN: "give a channel (channels mode:only or except channel:#channel).",
        Language.JA: "チャンネルを指定してください（channels mode:only または except channel:#チャンネル）。",
    },
    "settings_hint_channels": {
        Language.EN: "a list holds at most 25 channels.",
        Language.JA: "一覧に入れられるのは 25 チャンネルまでです。",
    },
    "settings_hint_persona": {
        Language.EN: "a persona is at most 1,000 characters.",
        Language.JA: "ペルソナは 1,000 文字までです。",
    },
    "settings_hint_number": {
        Language.EN: "give a number of turns from 0 (no limit) to 10,000.",
        Language.JA: "0（制限なし）から 10,000 までの回数を指定してください。",
    },
    "settings_hint_value": {
        Language.EN: "choose one of the listed values.",
        Language.JA: "一覧の値から選んでください。",
    },
    "settings_show_header": {
        Language.EN: "**memorybot's settings in this server** (only admins see this)",
        Language.JA: "**このサーバーでの memorybot の設定**（管理者にだけ表示）",
    },
    "settings_show_line": {Language.EN: "- {setting}: {value}", Language.JA: "・{setting}：{value}"},
    "settings_show_changed": {
        Language.EN: " (changed by <@{admin}> on {at})",
        Language.JA: "（<@{admin}> が {at} に変更）",
    },
    "settings_figures": {
        Language.EN: (
            "**Use in this server** (counts only: no member's memories, names or ids)\n"
            "- people with memories: {people}; memories: {memories}\n"
            "- /chat turns: {turns_today} today, {turns_30} over 30 days\n"
            "- model requests: {requests_today} today, {requests_30} over 30 days "
            "(estimated model cost: about ${cost_30} over 30 days)"
        ),
        Language.JA: (
            "**このサーバーでの利用状況**（件数のみ：メンバーの記憶・名前・ID は表示しません）\n"
            "- 記憶のある人：{people} 人、記憶：{memories} 件\n"
            "- /chat の回数：今日 {turns_today} 回、30 日間で {turns_30} 回\n"
            "- モデルへのリクエスト：今日 {requests_today} 回、30 日間で {requests_30} 回"
            "（推定モデル費用：30 日間で約 ${cost_30}）"
        ),
    },
    "settings_recent_header": {Language.EN: "**Recent changes**", Language.JA: "**最近の変更**"},
    "settings_recent_line": {
        Language.EN: "- {at} <@{admin}>: {setting} {before} → {after}",
        Language.JA: "・{at} <@{admin}>：{setting} {before} → {after}",
    },
    "settings_name_memory": {Language.EN: "memory", Language.JA: "記憶"},
    "settings_name_channels": {Language.EN: "channels", Language.JA: "チャンネル"},
    "settings_name_persona": {Language.EN: "persona", Language.JA: "ペルソナ"},
    "settings_name_diary": {Language.EN: "diary", Language.JA: "日記"},
    "settings_name_diary-language": {Language.EN: "diary language", Language.JA: "日記の言語"},
    "settings_name_daily-limit": {Language.EN: "daily limit", Language.JA: "1 日の上限"},
    "settings_name_language": {Language.EN: "language", Language.JA: "言語"},
    "settings_value_on": {Language.EN: "on", Language.JA: "オン"},
    "settings_value_off": {Language.EN: "off", Language.JA: "オフ"},
    "settings_value_all_channels": {Language.EN: "every channel", Language.JA: "すべてのチャンネル"},
    "settings_value_only": {Language.EN: "only {channels}", Language.JA: "{channels} だけ"},
    "settings_value_except": {Language.EN: "every channel except {channels}", Language.JA: "{channels} 以外"},
    "settings_value_no_persona": {Language.EN: "none", Language.JA: "なし"},
    "settings_value_persona": {Language.EN: "“{persona}”", Language.JA: "「{persona}」"},
    "settings_value_diary": {Language.EN: "posted to {channel}", Language.JA: "{channel} に投稿"},
    "settings_value_diary_error": {
        Language.EN: (
            "{channel}: posting stopped, Discord refused it (code {code}: I cannot see or post in that "
            "channel). Fix my permissions there, then set the channel again."
        ),
        Language.JA: (
            "{channel}：投稿を止めました。Discord に拒否されました（コード {code}：そのチャンネルを見る権限か"
            "投稿する権限がありません）。権限を直してから、もう一度チャンネルを設定してください。"
        ),
    },
    "settings_value_default_language": {Language.EN: "the deployment's", Language.JA: "デプロイの既定"},
    "settings_value_no_limit": {Language.EN: "none", Language.JA: "なし"},
    "settings_value_limit": {
        Language.EN: "{limit} /chat turns per member a day",
        Language.JA: "メンバー 1 人あたり 1 日 {limit} 回の /chat",
    },
    "settings_value_auto": {
        Language.EN: "each member's Discord language",
        Language.JA: "メンバーごとの Discord の言語",
    },
    "settings_value_en": {Language.EN: "English", Language.JA: "英語"},
    "settings_value_ja": {Language.EN: "Japanese", Language.JA: "日本語"},
    "settings_never": {Language.EN: "(not set)", Language.JA: "（未設定）"},
    # What a member sees of the settings.
    "chat_not_here": {
        Language.EN: "Sorry, I'm not available in this channel: this server's admins chose where I answer.",
        Language.JA: (
            "ごめんなさい、このチャンネルではお答えできません。このサーバーの管理者が使える場所を決めています。"
        ),
    },
    "chat_daily_limit": {
        Language.EN: "You've had today's {limit} /chat turns in this server. See you tomorrow!",
        Language.JA: "このサーバーでの今日の /chat（{limit} 回）を使い切りました。また明日お話ししましょう！",
    },
    "remember_server_off": {
        Language.EN: "Memory is turned off in this server by its admins: I'm not learning anything here.",
        Language.JA: "このサーバーでは管理者が記憶をオフにしています。ここでは何も覚えません。",
    },
}
ADMINS_DESCRIPTIONS: dict[str, dict[Language, str]] = {
    "memory-settings": {
        Language.EN: "memorybot's settings for this server (admins)",
        Language.JA: "このサーバーでの memorybot の設定（管理者向け）",
    },
    "memory-settings show": {
        Language.EN: "The settings, who changed them, and how much the bot is used here",
        Language.JA: "設定、変更した人、このサーバーでの利用状況",
    },
    "memory-settings memory": {
        Language.EN: "Turn memory on or off in this whole server",
        Language.JA: "このサーバー全体で記憶をオン・オフにする",
    },
    "memory-settings memory enabled": {Language.EN: "On or off", Language.JA: "オンかオフか"},
    "memory-settings channels": {
        Language.EN: "Where /chat answers and learns",
        Language.JA: "/chat が答えて学ぶチャンネル",
    },
    "memory-settings channels mode": {
        Language.EN: "all (clears the list), only, or except",
        Language.JA: "all（一覧を消す）、only、except",
    },
    "memory-settings channels channel": {
        Language.EN: "A channel to add to the list",
        Language.JA: "一覧に加えるチャンネル",
    },
    "memory-settings persona": {
        Language.EN: "The community's instructions for the bot's replies (empty clears)",
        Language.JA: "返事についてのコミュニティの指示（空で消去）",
    },
    "memory-settings persona text": {
        Language.EN: "Tone, topics, register: at most 1,000 characters",
        Language.JA: "口調・話題・言葉づかい：1,000 文字まで",
    },
    "memory-settings diary": {
        Language.EN: "This server's nightly diary",
        Language.JA: "このサーバーの夜間の日記",
    },
    "memory-settings diary channel": {
        Language.EN: "Post the diary to a channel",
        Language.JA: "日記をチャンネルに投稿する",
    },
    "memory-settings diary channel channel": {
        Language.EN: "The channel for the diary",
        Language.JA: "日記のチャンネル",
    },
    "memory-settings diary off": {Language.EN: "Stop posting the diary", Language.JA: "日記の投稿をやめる"},
    "memory-settings diary language": {
        Language.EN: "The diary's language",
        Language.JA: "日記の言語",
    },
    "memory-settings diary language value": {Language.EN: "ja or en", Language.JA: "ja か en"},
    "memory-settings daily-limit": {
        Language.EN: "How many /chat turns one member may take a day here",
        Language.JA: "メンバー 1 人が 1 日に使える /chat の回数",
    },
    "memory-settings daily-limit turns": {
        Language.EN: "Turns a day (0: no limit)",
        Language.JA: "1 日の回数（0：制限なし）",
    },
    "memory-settings language": {
        Language.EN: "The language of the bot's answers here",
        Language.JA: "このサーバーでのボットの答えの言語",
    },
    "memory-settings language value": {
        Language.EN: "auto (each member's Discord language), en or ja",
        Language.JA: "auto（メンバーごとの Discord の言語）、en、ja",
    },
}
# The names /memory-settings shows for its choices (the value sent stays the English word).
SETTING_CHOICES: dict[str, dict[Language, str]] = {
    "all": {Language.EN: "all", Language.JA: "すべて"},
    "only": {Language.EN: "only", Language.JA: "指定したチャンネルだけ"},
    "except": {Language.EN: "except", Language.JA: "指定したチャンネル以外"},
    "auto": {Language.EN: "auto", Language.JA: "自動（メンバーの言語）"},
    "en": {Language.EN: "en", Language.JA: "英語"},
    "ja": {Language.EN: "ja", Language.JA: "日本語"},
}
