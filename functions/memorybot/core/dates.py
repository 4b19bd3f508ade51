"""Dates and times as people and prompts read them: in the deployment's time zone
(``MEMORYBOT_TIMEZONE``), which every caller is given (config is read once, at the edge)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, tzinfo

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def local_stamp(at: datetime, zone: tzinfo) -> str:
    """ "2026-11-24 21:05 JST": a moment to the minute, with the zone's abbreviation."""
    local = at.astimezone(zone)
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()}"


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


# For the writer only (the decisions read the times, they resolve nothing): a few tokens.
LINE_DATES_RULE = "Resolve relative dates from the line's own <day>, not today."


def today_sentence(now: datetime, zone: tzinfo) -> str:
    """What a prompt says about today: the date, its weekday and the zone it is in."""
    local = now.astimezone(zone)
    return f"Today is {WEEKDAYS[local.weekday()][:3]} {local:%Y-%m-%d} {local.tzname()}."
