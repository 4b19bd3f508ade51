"""A server's settings at the front door: /memory-settings for its admins, and what the settings
mean for a member's /chat and "Remember this" (the channel, the daily limit, memory off).

Every answer is ephemeral, in the catalog's words; the settings are read once per interaction
(``ServerDeps.server_settings``). An admin sees settings and counts, never a member's memory,
name or id.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime, tzinfo
from typing import Any, Protocol

from ..core.record.catalog import text
from ..core.record.dates import local_stamp
from ..core.record.terms import snowflake_time
from ..core.rights import servers
from ..core.rights.servers import BadSetting, ChangeRow, ServerSettings, ServerStore
from .formats import markdown_escaped
from .requests import Caller, ChangeSetting, Chat, RememberMessage, ShowSettings

logger = logging.getLogger(__name__)

RECENT_CHANGES = 10  # show lists the newest changes
CHANGE_ATTEMPTS = 3  # a change that lost the race to another is tried again on the new settings
SHOW_MAX_CHARS = 2000


class ServerDeps(Protocol):
    """What the server's settings need at the front door (``Dependencies.servers``)."""

    @property
    def server_store(self) -> ServerStore: ...

    @property
    def model_request_cost_usd(self) -> float: ...

    @property
    def zone(self) -> tzinfo: ...

    def server_settings(self, guild_id: str) -> ServerSettings: ...


def _say(key: str, caller: Caller, **fields: object) -> dict:
    from .interactions import say

    return say(key, caller, **fields)


def today(deps: ServerDeps) -> Any:
    return datetime.now(UTC).astimezone(deps.zone).date()


# ---------------------------------------------------------------- a member's turn


def in_server_locale(request: Any, deps: ServerDeps) -> Any:
    """The request with its caller's locale as this server answers: the member's own (auto) or the
    language its admins chose."""
    caller = getattr(request, "caller", None)
    if not isinstance(caller, Caller) or not caller.guild_id:
        return request
    locale = deps.server_settings(caller.guild_id).answer_locale(caller.locale)
    return request if locale == caller.locale else replace(request, caller=replace(caller, locale=locale))


def chat_refusal(request: Chat, deps: ServerDeps) -> dict | None:
    """Why this /chat is not taken here (the channel, the member's daily limit), else None with the
    turn counted. Refused before anything is stored and with no model call."""
    caller = request.caller
    if not caller.guild_id or not request.text:
        return None
    server = deps.server_settings(caller.guild_id)
    if not server.allows_channel(caller.channel_id):
        return _say("chat_not_here", caller)
    refused = deps.server_store.take_turn(caller.guild_id, caller.user_id, today(deps), server.daily_limit)
    if refused is servers.Refused.DAILY_LIMIT:
        return _say("chat_daily_limit", caller, limit=server.daily_limit)
    return None


def remember_refusal(request: RememberMessage, deps: ServerDeps) -> dict | None:
    """ "Remember this" where the bot does not listen, or on something said while memory was off here."""
    caller = request.caller
    if not caller.guild_id:
        return None
    server = deps.server_settings(caller.guild_id)
    if not server.allows_channel(caller.channel_id):
        return _say("chat_not_here", caller)
    said_at = snowflake_time(request.target.message_id) if request.target is not None else datetime.now(UTC)
    if not server.learnable(said_at):
        return _say("remember_server_off", caller)
    return None


def forgotten(deps: ServerDeps, caller: Caller, count: int, *, everything: bool = False) -> None:
    """The server's figures after a member's /memory forget (one) or forget-all (everything here)."""
    if not caller.guild_id or not count or caller.scope != f"guild:{caller.guild_id}":
        return  # memories kept per person everywhere (global scope) are no server's
    try:
        deps.server_store.count(caller.guild_id, today(deps), memories=-count)
        if everything:
            deps.server_store.count_person(caller.guild_id, caller.user_id, has_memories=False)
    except Exception as exc:  # noqa: BLE001 - figures are a courtesy; the forget stands
        logger.warning("server figures not counted", extra={"error": type(exc).__name__})


# ---------------------------------------------------------------- /memory-settings


def _refusal(caller: Caller, permissions: int) -> dict | None:
    if not caller.guild_id:
        return _say("settings_server_only", caller)
    if not servers.is_admin(permissions):
        logger.info("settings refused: not an admin")
        return _say("settings_not_admin", caller)
    return None


_HINTS = {
    "channel": "settings_hint_channel",
    "channels": "settings_hint_channels",
    "persona": "settings_hint_persona",
    "daily-limit": "settings_hint_number",
}


def change_setting(request: ChangeSetting, deps: ServerDeps) -> dict:
    caller = request.caller
    change = servers.SettingChange(request.setting, request.value, request.channel)
    refused = _refusal(caller, request.permissions)
    if refused is not None:
        return refused
    name = text(f"settings_name_{change.setting}", caller.locale)
    current = deps.server_settings(caller.guild_id)
    for _ in range(CHANGE_ATTEMPTS):
        now = datetime.now(UTC)
        try:
            after = servers.apply(current, change, now)
        except BadSetting as exc:
            hint = text(_HINTS.get(str(exc), "settings_hint_value"), caller.locale)
            return _say("settings_bad_value", caller, setting=name, hint=hint)
        before_text, after_text = (servers.described(s, change.setting) for s in (current, after))
        shown = value_text(after, change.setting, caller.locale)
        if after == current:
            return _say("settings_unchanged", caller, setting=name, value=shown)
        changed = {**after.changed, change.setting: servers.Changed(caller.user_id, now)}
        after = replace(after, changed=changed)
        row = ChangeRow(caller.guild_id, change.setting, caller.user_id, before_text, after_text, now)
        if deps.server_store.change(current, after, row):
            logger.info("server setting changed", extra={"setting": change.setting})
            return _say("settings_changed", caller, setting=name, value=shown)
        current = deps.server_store.get(caller.guild_id)  # another admin's change came first
    return _say("settings_conflict", caller)


def show_settings(request: ShowSettings, deps: ServerDeps) -> dict:
    caller = request.caller
    refused = _refusal(caller, request.permissions)
    if refused is not None:
        return refused
    server = deps.server_settings(caller.guild_id)
    locale, zone = caller.locale, deps.zone
    lines = [text("settings_show_header", locale)]
    for setting in servers.SETTING_NAMES:
        line = text(
            "settings_show_line",
            locale,
            setting=text(f"settings_name_{setting}", locale),
            value=value_text(server, setting, locale),
        )
        changed = server.changed.get(setting)
        if changed is not None:
            at = local_stamp(changed.at, zone)
            line += text("settings_show_changed", locale, admin=changed.admin_id, at=at)
        lines.append(line)
    figures = deps.server_store.figures(caller.guild_id, today(deps))
    day = today(deps)
    this_day = [d for d in figures.days if d.day == day]
    requests_30 = sum(d.model_requests for d in figures.days)
    lines.append(
        text(
            "settings_figures",
            locale,
            people=figures.people,
            memories=figures.memories,
            turns_today=sum(d.turns for d in this_day),
            turns_30=sum(d.turns for d in figures.days),
            requests_today=sum(d.model_requests for d in this_day),
            requests_30=requests_30,
            cost_30=f"{requests_30 * deps.model_request_cost_usd:.2f}",
        )
    )
    recent = deps.server_store.changes(caller.guild_id, RECENT_CHANGES)
    if recent:
        lines.append(text("settings_recent_header", locale))
        for row in recent:
            lines.append(
                text(
                    "settings_recent_line",
                    locale,
                    at=local_stamp(row.at, zone),
                    admin=row.admin_id,
                    setting=text(f"settings_name_{row.setting}", locale),
                    before=_short(row.before) or "—",
                    after=_short(row.after) or "—",
                )
            )
    from .interactions import ephemeral

    return ephemeral(_fit(lines))


def _fit(lines: list[str]) -> str:
    """As many whole lines as Discord's 2,000 characters take (the recent changes go first)."""
    out = ""
    for line in lines:
        if len(out) + len(line) + 1 > SHOW_MAX_CHARS:
            break
        out = f"{out}\n{line}" if out else line
    return out


def _short(value: str, most: int = 40) -> str:
    value = markdown_escaped(" ".join(value.split()))
    return value if len(value) <= most else value[: most - 1] + "…"


def value_text(server: ServerSettings, setting: str, locale: str) -> str:
    """A setting's value in words, for the admins."""
    if setting == servers.MEMORY:
        return text("settings_value_on" if server.memory_enabled else "settings_value_off", locale)
    if setting == servers.CHANNELS:
        listed = ", ".join(f"<#{c}>" for c in server.channels)
        if server.channel_mode is servers.ChannelMode.ALL:
            return text("settings_value_all_channels", locale)
        key = "settings_value_only" if server.channel_mode is servers.ChannelMode.ONLY else "settings_value_except"
        return text(key, locale, channels=listed)
    if setting == servers.PERSONA:
        if not server.persona:
            return text("settings_value_no_persona", locale)
        return text("settings_value_persona", locale, persona=_short(server.persona, 300))
    if setting == servers.DIARY:
        if not server.diary_channel:
            return text("settings_value_off", locale)
        channel = f"<#{server.diary_channel}>"
        if server.diary_error:
            return text("settings_value_diary_error", locale, channel=channel, code=server.diary_error)
        return text("settings_value_diary", locale, channel=channel)
    if setting == servers.DIARY_LANGUAGE:
        if not server.diary_language:
            return text("settings_value_default_language", locale)
        return text(f"settings_value_{server.diary_language}", locale)
    if setting == servers.DAILY_LIMIT:
        if not server.daily_limit:
            return text("settings_value_no_limit", locale)
        return text("settings_value_limit", locale, limit=server.daily_limit)
    return text(f"settings_value_{server.language.value}", locale)
