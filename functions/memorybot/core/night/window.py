"""A night's window and numbers: which 24 hours a run covers, the design's caps, and how one
speaker's day is cut into chunks. Pure functions of the messages and the clock.

Window convention: a run as of ``now`` covers the 24 hours that END at the latest
03:00 at or before ``now`` in the deployment's time zone (``MEMORYBOT_TIMEZONE``, by default
Asia/Tokyo: 03:00 JST); its day label is that zone's date on which that window STARTS. So a
run at 2026-11-30 03:00 JST covers [2026-11-29 03:00, 2026-11-30 03:00) JST and is labelled
"2026-11-29"; a message at 02:59 JST on the 30th belongs to it, one at 03:00 JST on the 30th
to the next night. A run a little late (a retried delivery at 03:07) still maps to the same
window and label, so the day claim makes it a no-op. The 24 hours are real hours: on a night a
zone's clocks change, the window starts at 02:00 or 04:00 local time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from ..record.domain import BOT_NAME, JST, PROFILE_LIMIT, Message, Owner, one_line, plain_name

# The design's nightly numbers, each named once.
RUN_HOUR = 3  # the alarm: 03:00 in the deployment's time zone (by default JST: 18:00 UTC)
WINDOW = timedelta(hours=24)  # the previous 24 hours
CHUNK_MESSAGES = 6  # one speaker's messages are split into chunks of six
CHUNKS_PER_SPEAKER = 5  # only the newest five chunks per speaker
STALE_AFTER = timedelta(days=30)  # not updated for 30 days: a candidate for review
STALE_REVIEWS_PER_NIGHT = 20  # oldest first, at most 20 a night
# Reads of the review queue a night: more than one only when paused people's records (moved
# behind the others, unreviewed) stood in the first places.
STALE_LOOKS = 3
DIARY_MESSAGES = 30  # the diary is written from the last 30 messages
# Discord's codes for a channel the bot may not see (50001) or post in (50013): a server's diary
# stops there until its admins set the channel again (show tells them).
DIARY_REFUSALS = (50001, 50013)
# Memories without a vector of the configured embedding model (imported, written before, after a
# model change, or whose embedding failed) get one in the review step: at most this many texts a
# night, sent in batches, from where the previous night's pass stopped. Selection ranks the others
# lexically meanwhile. Not counted in ``max_model_calls`` (decisions and texts): a bound of its own.
EMBED_BACKFILL_PER_NIGHT = 100
EMBED_BACKFILL_BATCH = 25


@dataclass(frozen=True)
class Window:
    start: datetime  # inclusive, UTC
    end: datetime  # exclusive, UTC
    day_label: str  # the date (in the deployment's zone) the window starts on


def window_for(now: datetime, zone: tzinfo = JST) -> Window:
    """The 24 hours up to the latest 03:00 in ``zone`` at or before ``now`` (see the module docstring)."""
    end = latest_run_time(now, zone)
    start = end - WINDOW  # in UTC: 24 real hours, whatever the zone's clocks did
    return Window(start, end, start.astimezone(zone).strftime("%Y-%m-%d"))


def latest_run_time(now: datetime, zone: tzinfo = JST) -> datetime:
    """The latest 03:00 in ``zone`` at or before ``now``, in UTC (the schedule's last start)."""
    local = now.astimezone(zone)
    end = local.replace(hour=RUN_HOUR, minute=0, second=0, microsecond=0)
    if end.astimezone(UTC) > now.astimezone(UTC):
        end = (local - timedelta(days=1)).replace(hour=RUN_HOUR, minute=0, second=0, microsecond=0)
    return end.astimezone(UTC)


def next_run_time(now: datetime, zone: tzinfo = JST, *, hour: int = RUN_HOUR, minute: int = 0) -> datetime:
    """The first ``hour``:``minute`` (03:00) in ``zone`` after ``now``, in UTC: when a daily schedule
    in that zone next starts a night."""
    local = now.astimezone(zone)
    candidate = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if candidate.astimezone(UTC) <= now.astimezone(UTC):
        candidate = (local + timedelta(days=1)).replace(hour=hour, minute=minute, second=0, microsecond=0)
    return candidate.astimezone(UTC)


def max_model_calls(speakers: int, *, per_record: bool = False, server_diaries: int = 0) -> int:
    """The hard upper bound on model requests for a night with ``speakers`` active speakers.

    Per chunk (one extraction): worth, the one decision on the profile and the add, a rewrite
    per profile record, the new memory's text (drafted beside the decision). ``per_record``: a
    Jev service without ``/decide``, which takes a verdict per profile record and the add
    instead of the one decision. Five chunks per speaker, plus the stale reviews and the one
    diary call; and one call for each server's own diary (``server_diaries``: the servers that set a
    channel and had messages that night, at most MEMORYBOT_SERVER_DIARIES_PER_NIGHT).
    """
    decision = PROFILE_LIMIT + 1 if per_record else 1
    per_chunk = 1 + decision + PROFILE_LIMIT + 1
    return speakers * CHUNKS_PER_SPEAKER * per_chunk + STALE_REVIEWS_PER_NIGHT + 1 + server_diaries


def by_speaker(messages: Sequence[Message]) -> dict[Owner, list[Message]]:
    """Each person's own non-bot messages to the bot, with some text, per scope, chronological.

    Lines that are not part of their author's conversation with the bot (channel history)
    are left out: only people who used the bot themselves get a profile.
    """
    grouped: dict[Owner, list[Message]] = {}
    for message in sorted(messages, key=lambda m: int(m.message_id)):
        if message.is_bot or not message.content.strip() or message.conversation_of != message.author_id:
            continue
        grouped.setdefault(Owner(message.scope, message.author_id), []).append(message)
    return grouped


def diary_lines(messages: Sequence[Message]) -> list[Message]:
    """The day's last 30 non-bot messages with text, anyone's: the diary is about the channel."""
    said = [m for m in messages if not m.is_bot and m.content.strip()]
    return sorted(said, key=lambda m: int(m.message_id))[-DIARY_MESSAGES:]


def chunks(messages: Sequence[Message]) -> list[list[Message]]:
    """Chunks of six cut from the newest message back, so the newest chunks are full (the oldest
    kept one may be short); only the newest five, each chronological, oldest chunk first."""
    split: list[list[Message]] = []
    end = len(messages)
    while end > 0 and len(split) < CHUNKS_PER_SPEAKER:
        split.append(list(messages[max(0, end - CHUNK_MESSAGES) : end]))
        end -= CHUNK_MESSAGES
    return split[::-1]


def transcript(messages: Sequence[Message]) -> str:
    """One "name: text" line per message: the bot's under its own name, a person's under their
    sanitised display name (a nickname of "memorybot" is not the bot), line breaks folded."""
    return "\n".join(
        f"{BOT_NAME if m.is_bot else plain_name(m.author_name, m.author_id)}: {one_line(m.content)}" for m in messages
    )
