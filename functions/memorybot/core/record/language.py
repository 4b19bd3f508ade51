"""The two languages the bot answers in, and which one a Discord locale asks for."""

from __future__ import annotations

from enum import Enum


class Language(str, Enum):
    EN = "en"
    JA = "ja"


DEFAULT_LANGUAGE = Language.EN


def language_of(locale: str) -> Language:
    """Japanese for Discord's ``ja`` (any region), English for everything else, no locale included."""
    return Language.JA if locale.split("-")[0].strip().lower() == Language.JA.value else DEFAULT_LANGUAGE
