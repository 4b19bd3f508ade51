"""Why this answer: the memories that were in one reply's prompt, told only to the person it answered.

The reply's read of the person's memories leaves its ``read`` row under a name made from the
reply's interaction id (``reply_read_id``), in each scope it read (the scope's own and, with
"everywhere" memories, the person's own scope). The "Why?" button names only the person and that
interaction id; its answer is those rows: each memory by id, the start of its text now, when it was
learned, and whether it changed or went since the reply. Showing them is a read of the person's
memories (its own ``read`` row, actor command); someone else's click reads and logs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Protocol

from ..record.domain import Action, Actor, Owner, snowflake_time
from ..record.ports import Ledger, MemoryWriter, ReadLog
from .history import state_preview

WHY_REASON = "reply why"
# A reply is written inside its interaction's 15 minutes (the reply worker's retries keep to them).
REPLY_WINDOW = timedelta(minutes=16)


def reply_read_id(interaction_id: str) -> str:
    """The name of a reply's read row: its interaction's id, so the "Why?" button needs no more."""
    return f"reply-{interaction_id}"


class WhyMemories(ReadLog, MemoryWriter, Ledger, Protocol):
    """The roles of the memory store the "Why?" answer uses."""


class WhyState(str, Enum):
    SAME = "same"  # as it is now (unchanged since the reply)
    CHANGED = "changed"  # changed since the reply (its text now is shown)
    GONE = "gone"  # forgotten, deleted or moved away since


@dataclass(frozen=True)
class WhyLine:
    memory_id: str
    text: str  # the first 80 characters now ("" when gone)
    learned_at: datetime | None  # when it was first learned (None when gone)
    state: WhyState


@dataclass(frozen=True)
class WhyAnswer:
    found: bool  # False: no read row of that reply (too old, expired, or never read: a paused turn)
    lines: tuple[WhyLine, ...] = ()


def why_reply(memories: WhyMemories, owners: Sequence[Owner], interaction_id: str) -> WhyAnswer:
    """What was in the prompt of the reply to ``interaction_id``, from its read rows in ``owners``'
    partitions (the caller's own: the scope and, for their "everywhere" memories, their own scope)."""
    try:
        since = snowflake_time(interaction_id)
    except (ValueError, OverflowError):
        return WhyAnswer(False)
    name = reply_read_id(interaction_id)
    lines: list[WhyLine] = []
    found = False
    for owner in owners:
        # The owner's rows of the reply's window (keys start with their time): a turn's few.
        window = memories.ledger_for(owner, None, since=since - timedelta(seconds=1), until=since + REPLY_WINDOW)
        row = next((e for e in window if e.entry_id == name and e.action is Action.READ), None)
        if row is None:
            continue
        found = True
        shown: list[str] = []
        for memory_id in row.memory_ids:
            current = memories.get(owner, memory_id)
            if current is None:
                lines.append(WhyLine(memory_id, "", None, WhyState.GONE))
                continue
            shown.append(memory_id)
            state = WhyState.CHANGED if current.updated_at > row.at else WhyState.SAME
            lines.append(WhyLine(memory_id, state_preview(current), current.created_at, state))
        if shown:
            memories.log_read(owner, tuple(shown), actor=Actor.COMMAND, reason=WHY_REASON)
    return WhyAnswer(found, tuple(lines))
