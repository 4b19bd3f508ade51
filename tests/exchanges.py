"""Building ``Exchange`` objects for the model adapter tests.

    exchange(("alice", "I moved to Osaka"), ("bot", "Nice!"))   # speaker u1 "alice", lines oldest first

Each line is (who, text): ``"bot"`` for the bot's reply, anything else for the speaker's
own message (the name is ignored: the speaker's name is the ``name`` argument).
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from memorybot.core.record.domain import GLOBAL_SCOPE, Exchange, Message, Speaker, snowflake_at

BOT_ID = "999"
SPEAKER_ID = "u1"
_T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
_seq = itertools.count(1)


def line(
    author_id: str,
    text: str,
    *,
    name: str = "alice",
    bot: bool = False,
    of: str = SPEAKER_ID,
    scope: str = GLOBAL_SCOPE,
    channel: str = "c1",
) -> Message:
    """One message of ``of``'s conversation with the bot."""
    n = next(_seq)
    return Message(channel, snowflake_at(_T0 + timedelta(seconds=n), n), author_id, name, text, bot, scope, of)


def exchange(
    *lines: tuple[str, str], name: str = "alice", speaker_id: str = SPEAKER_ID, scope: str = GLOBAL_SCOPE
) -> Exchange:
    messages = tuple(
        line(BOT_ID, text, name="memorybot", bot=True, of=speaker_id, scope=scope)
        if who == "bot"
        else line(speaker_id, text, name=name, of=speaker_id, scope=scope)
        for who, text in lines
    )
    return Exchange(Speaker(speaker_id, name), scope, messages)


def said(text: str, *, name: str = "alice", bot_reply: str | None = "(offline stand-in) ok") -> Exchange:
    """The speaker says ``text``; the bot answers ``bot_reply`` (None: no answer yet)."""
    lines = [("speaker", text)] + ([("bot", bot_reply)] if bot_reply is not None else [])
    return exchange(*lines, name=name)
