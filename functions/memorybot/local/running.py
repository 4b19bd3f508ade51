"""How a client started in any folder finds a running local stack's state dir.

While `memorybot local` runs it leaves a note, one per port, in the person's runtime folder
(``~/.memorybot/running`` unless MEMORYBOT_RUNTIME_DIR names another): the stack's URL and the
absolute path of its state dir. The note holds no secret; the key and admin secret stay in the
state dir, readable only by the person who started the stack.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

RUNTIME_DIR_ENV = "MEMORYBOT_RUNTIME_DIR"


def runtime_dir() -> Path:
    return Path(os.environ.get(RUNTIME_DIR_ENV) or Path.home() / ".memorybot" / "running")


def _port(url: str) -> int | None:
    parts = urlsplit(url)
    try:
        return parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None


def note_path(url: str) -> Path | None:
    port = _port(url)
    return None if port is None else runtime_dir() / f"{port}.json"


def leave_note(url: str, state_dir: Path) -> Path | None:
    """Record the stack at ``url``; None when the runtime folder cannot be written (the client then
    looks in its own folder, as before)."""
    path = note_path(url)
    if path is None:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"url": url, "stateDir": str(state_dir.resolve()), "pid": os.getpid()}))
    except OSError:
        return None
    return path


def remove_note(path: Path | None) -> None:
    if path is None:
        return
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():  # not a later stack's note on this port
            path.unlink()
    except (OSError, ValueError):
        pass


def state_dir_for(url: str) -> Path | None:
    """The state dir of the stack that last started on ``url``'s port, if its note is there."""
    path = note_path(url)
    try:
        note = json.loads(path.read_text()) if path else None
    except (OSError, ValueError):
        return None
    state_dir = Path(note["stateDir"]) if isinstance(note, dict) and isinstance(note.get("stateDir"), str) else None
    return state_dir if state_dir and state_dir.is_dir() else None
