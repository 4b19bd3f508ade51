"""Dates and times as people and prompts read them: in the deployment's time zone
(``MEMORYBOT_TIMEZONE``), which every caller is given (config is read once, at the edge)."""

from __future__ import annotations

from datetime import date, datetime, tzinfo

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def local_stamp(at: datetime, zone: tzinfo) -> str:
    """ "2026-11-24 21:05 JST": a moment to the minute, with the zone's abbreviation."""
    local = at.astimezone(zone)
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()}"


def local_day(at: datetime, zone: tzinfo) -> date:
    return at.astimezone(zone).date()


def today_sentence(now: datetime, zone: tzinfo) -> str:
    """What a prompt says about today: the date, its weekday and the zone it is in."""
    local = now.astimezone(zone)
    return f"Today is {WEEKDAYS[local.weekday()]} {local:%Y-%m-%d} ({local.tzname()})."
