"""A server's name for the answers that say where memories live, read once and kept.

Discord's interaction payload carries the guild's id but not its name; one REST read
(GET /guilds/{id}) gives it. The name is kept for an hour per process, and a failed read
(a user-installed app that is not in that server, a slow Discord) is not tried again for a few
minutes: the answer names the server by its id meanwhile, and never waits on Discord twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

logger = logging.getLogger(__name__)

NAME_TTL_SECONDS = 3600.0
FAILURE_TTL_SECONDS = 300.0
MAX_KEPT = 1000  # one process serves a few servers; a bound keeps a flood of ids from growing it


class GuildReader(Protocol):
    def guild_name(self, guild_id: str) -> str:
        """The server's name (raises when Discord does not give it)."""


class GuildNames:
    def __init__(self, reader: GuildReader, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._reader = reader
        self._clock = clock
        self._kept: dict[str, tuple[float, str | None]] = {}  # guild id -> (until, name or None)
        self._lock = threading.Lock()

    def name(self, guild_id: str) -> str | None:
        """The server's name; None when it cannot be known (then the caller shows its id)."""
        now = self._clock()
        with self._lock:
            kept = self._kept.get(guild_id)
        if kept is not None and kept[0] > now:
            return kept[1]
        try:
            name: str | None = self._reader.guild_name(guild_id).strip() or None
        except Exception as exc:  # noqa: BLE001 - a name is a courtesy: the id stands in
            logger.info("guild name not read", extra={"guild_id": guild_id, "error": type(exc).__name__})
            name = None
        until = now + (NAME_TTL_SECONDS if name else FAILURE_TTL_SECONDS)
        with self._lock:
            if len(self._kept) >= MAX_KEPT:
                self._kept.clear()
            self._kept[guild_id] = (until, name)
        return name
