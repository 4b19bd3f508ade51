"""What Discord's ids and interaction tokens look like, checked before any URL is built from one,
text made storable, and text from outside made to show as written.

A value that ends up in a REST path must not be able to change the path: an id with a
non-ASCII digit, or a token with a dot or a slash ("../"), is refused, not sent. Text a
person typed (a name, a message) is kept, with only what UTF-8 cannot carry replaced.
"""

from __future__ import annotations

import re

from ..core.record.terms import MAX_SNOWFLAKE, is_snowflake

__all__ = ["MAX_SNOWFLAKE", "is_interaction_token", "is_snowflake", "markdown_escaped", "markdown_shown"]

# Interaction tokens are URL-safe base64 text: letters, digits, "-" and "_" (no dots, no slashes).
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,500}", re.ASCII)


def is_interaction_token(text: object) -> bool:
    return isinstance(text, str) and _TOKEN.fullmatch(text) is not None


# JSON may escape half of a surrogate pair on its own ("\\ud800"); Python decodes it, but no
# UTF-8 encoder (DynamoDB's, Discord's) accepts it. Such a character says nothing: it is replaced.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT_CHARACTER = "\ufffd"


def valid_unicode(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so it can be stored and sent as UTF-8."""
    return _LONE_SURROGATE.sub(REPLACEMENT_CHARACTER, text)


# Discord's markdown, and how it is escaped. Anywhere in a line: a backslash (the escape itself),
# bold, italics, underline, strike, spoiler and code (* _ ~ | `), a masked link ([text](url)) and
# a mention, channel, emoji, timestamp or command tag (<@id>, <#id>, <t:…>, </cmd:id>). At the start
# of a line (after any indent): a heading or subtext (# ## ### -#), a block quote (> >>>) and a list
# item (- + * or "1." / "1)"). Discord shows a backslash before any ASCII punctuation as that
# character alone, so escaping is a backslash before each of these, and nothing else changes.
_ANYWHERE = re.compile(r"([\\*_~|`\[\]<])")
_LINE_START = re.compile(r"^([ \t]*)([#>+-])", re.MULTILINE)
_NUMBERED = re.compile(r"^([ \t]*[0-9]+)([.)])", re.MULTILINE)
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def markdown_escaped(text: str) -> str:
    """``text`` from outside (a server's name, a memory's text, an id someone typed) as Discord
    shows it written: no link, heading, list, quote, code or emphasis taken from it. Every text
    from outside goes through this before it is put into a message; mentions are also refused
    by every message's ``allowed_mentions``."""
    text = _ANYWHERE.sub(r"\\\1", text)
    text = _LINE_START.sub(r"\1\\\2", text)
    return _NUMBERED.sub(r"\1\\\2", text)


def markdown_shown(text: str) -> str:
    """What Discord shows for ``text``'s escapes: each backslash before ASCII punctuation dropped
    (the terminal client prints a message as a person would read it)."""
    return _ESCAPED.sub(r"\1", text)
