"""What a person can do with their own memories: show, forget, and pick one by id.

Every function takes the caller's Owner (the person, in the scope they asked from) and
touches nothing else: another person's id, or the same person's memory in another
server, is simply not found.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .domain import PROFILE_LIMIT, Action, Actor, Change, Owner, is_memory_id
from .ports import ConflictError, MemoryStore

FORGET_ATTEMPTS = 3  # a concurrent change between read and delete: read again


def show(memories: MemoryStore, owner: Owner) -> list[str]:
    """Up to ten lines, each the memory id, a space, and the first 80 characters."""
    profile = memories.read_profile(owner, actor=Actor.COMMAND, reason="memory show", limit=PROFILE_LIMIT)
    return [m.preview() for m in profile]


def suggest(memories: MemoryStore, owner: Owner, typed: str) -> list[tuple[str, str]]:
    """Autocomplete for forget: (id, label) of the caller's own memories matching what was typed."""
    profile = memories.read_profile(owner, actor=Actor.COMMAND, reason="memory forget autocomplete", limit=PROFILE_LIMIT)
    typed = typed.strip().lower()
    return [(m.memory_id, m.preview()) for m in profile if typed in m.memory_id or typed in m.text.lower()]


class ForgetOutcome(str, Enum):
    FORGOTTEN = "forgotten"
    NOT_FOUND = "not_found"


@dataclass(frozen=True)
class ForgetResult:
    outcome: ForgetOutcome
    memory_id: str


def forget(memories: MemoryStore, owner: Owner, memory_id: str) -> ForgetResult:
    """Delete the caller's memory for real. Someone else's id is simply not found."""
    memory_id = memory_id.strip().lower()
    if is_memory_id(memory_id):
        for _ in range(FORGET_ATTEMPTS):
            current = memories.get(owner, memory_id)
            if current is None:
                break
            try:
                memories.apply(Change(Action.DELETE, current, None, "user asked to forget"), actor=Actor.COMMAND)
            except ConflictError:
                continue
            return ForgetResult(ForgetOutcome.FORGOTTEN, memory_id)
    return ForgetResult(ForgetOutcome.NOT_FOUND, memory_id)
