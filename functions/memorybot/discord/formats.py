"""What Discord's ids and interaction tokens look like, checked before any URL is built from one,
and text made storable.

A value that ends up in a REST path must not be able to change the path: an id with a
non-ASCII digit, or a token with a dot or a slash ("../"), is refused, not sent. Text a
person typed (a name, a message) is kept, with only what UTF-8 cannot carry replaced.
"""

from __future__ import annotations

import re

from ..core.domain import MAX_SNOWFLAKE, is_snowflake

__all__ = ["MAX_SNOWFLAKE", "is_interaction_token", "is_snowflake"]

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
