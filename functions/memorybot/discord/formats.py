"""What Discord's ids and interaction tokens look like, checked before any URL is built from one.

A value that ends up in a REST path must not be able to change the path: an id with a
non-ASCII digit, or a token with a dot or a slash ("../"), is refused, not sent.
"""

from __future__ import annotations

import re

from ..core.domain import MAX_SNOWFLAKE, is_snowflake

__all__ = ["MAX_SNOWFLAKE", "is_interaction_token", "is_snowflake"]

# Interaction tokens are URL-safe base64 text: letters, digits, "-" and "_" (no dots, no slashes).
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,500}", re.ASCII)


def is_interaction_token(text: object) -> bool:
    return isinstance(text, str) and _TOKEN.fullmatch(text) is not None
