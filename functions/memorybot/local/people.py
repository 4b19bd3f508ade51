"""The local stack's people: a name as the terminal client takes it (``--user alice``) is one
stable Discord-sized id, the same for the client and the stack across runs."""

from __future__ import annotations

import hashlib


def user_id_for(name: str) -> str:
    """A stable snowflake-sized id per name, so the same name is the same person across runs."""
    return str(int(hashlib.sha256(name.encode()).hexdigest()[:15], 16) + 10**17)


def dm_channel_for(name: str) -> str:
    """The person's DM channel with the bot: one per person, stable across runs."""
    return user_id_for(f"dm:{name}")
