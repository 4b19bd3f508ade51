"""Dates and times as people and prompts read them: in the deployment's time zone
(``MEMORYBOT_TIMEZONE``), which every caller is given (config is read once, at the edge)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


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
