"""Dates and times as people and prompts read them: in the deployment's time zone
(``MEMORYBOT_TIMEZONE``), which every caller is given (config is read once, at the edge)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


# The calendar's last moment. The day after 9999-12-31 has no midnight: a day that ends past the
# calendar (its last, or one a zone carries over it) ends here instead, so every date the project
# takes in is stored, compared and shown to the calendar's end without an overflow.
CALENDAR_END = datetime.max.replace(tzinfo=UTC)

# A day as every edge takes it: exactly "YYYY-MM-DD" in ASCII digits. Nothing around it (no
# spaces), and none of the other forms ``date.fromisoformat`` reads ("20261231", "2026-W53-4").
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)


def parse_day(value: object) -> date | None:
    """A calendar day written "YYYY-MM-DD" (None: anything else, an impossible day included)."""
    if not isinstance(value, str) or _DAY.fullmatch(value) is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:  # 2026-02-30, 0000-01-01
        return None


def day_ends(day: date, zone: tzinfo) -> datetime:
    """The moment ``day`` ends in ``zone`` (the midnight after it), in UTC: the calendar's last
    moment for a day with no midnight after it inside the calendar."""
    try:
        return datetime.combine(day + timedelta(days=1), time(), zone).astimezone(UTC)
    except OverflowError:
        return CALENDAR_END


def local_stamp(at: datetime, zone: tzinfo) -> str:
    """ "2026-11-24 21:05 JST": a moment to the minute, with the zone's abbreviation; a zone that has
    none (its name is an offset, "-03") is labelled by that offset from UTC ("UTC-03")."""
    local = at.astimezone(zone)
    label = local.tzname() or ""
    if not label or label[0] in "+-":
        label = f"UTC{label}"
    return f"{local:%Y-%m-%d %H:%M} {label}"


def local_day(at: datetime, zone: tzinfo) -> date:
    return at.astimezone(zone).date()


@dataclass(frozen=True)
class PromptTime:
    """When a prompt is built and the zone its dates are shown in: today for the prompt, while each
    line keeps its own time (a nightly run dates lines by when they were said, never by the run)."""

    now: datetime
    zone: tzinfo

    def today(self) -> str:
        return today_sentence(self.now, self.zone)

    @property
    def local_now(self) -> datetime:
        return self.now.astimezone(self.zone)


# A line said within this of the moment a reader knows (now, or the last time a line carries) is
# not dated: a chat log shows times the same way, at its gaps.
LINE_TIME_GAP = timedelta(hours=1)


def line_needs_time(said: datetime, last_shown: datetime | None, now: datetime) -> bool:
    """Whether a line said at ``said`` (local) carries its time: the first line not said today
    within the hour before ``now``; after a line that carries one (``last_shown``), each line said
    on another day or an hour or more later."""
    known = last_shown if last_shown is not None else now
    return said.date() != known.date() or abs(known - said) >= LINE_TIME_GAP


def line_stamp(local: datetime) -> str:
    """ "2026-11-29 Sun 21:05": a line's day (with its weekday, for "on Friday") and time."""
    return f"{local:%Y-%m-%d} {WEEKDAYS[local.weekday()][:3]} {local:%H:%M}"


def today_sentence(now: datetime, zone: tzinfo) -> str:
    """What a prompt says about today: the date and its weekday (the zone is the deployment's)."""
    local = now.astimezone(zone)
    return f"Today is {WEEKDAYS[local.weekday()][:3]} {local:%Y-%m-%d}."
