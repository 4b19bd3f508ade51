"""The servers table (``tables.SERVERS``): each server's settings, their ledger rows and its counters
(``core.rights.servers.ServerStore``).

Settings are read at most once per interaction and kept briefly in the warm process
(``cache_seconds``: 30 s deployed, so a change takes effect within a minute; 0 in the local stack,
at once). A change is one transaction: the settings item, conditioned on its version, and the
change's ledger row. Counters are ADDs: nothing reads a member's memories to count them.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from botocore.exceptions import ClientError

from ..core.record.terms import iso, parse_iso
from ..core.rights.servers import (
    FIGURE_DAYS,
    AnswerLanguage,
    Changed,
    ChangeRow,
    ChannelMode,
    DayFigures,
    Figures,
    Refused,
    ServerSettings,
    figure_days,
    person_key,
)
from .dynamodb_items import (
    TRANSACTION_CANCELED,
    Item,
    conditional_write,
    error_code,
    int_of,
    n,
    optional_time,
    query_items,
    s,
    str_of,
    transact,
)

SETTINGS_ITEM = "settings"
TOTALS_ITEM = "totals"
CHANGE_PREFIX = "change#"
DAY_PREFIX = "day#"
MEMBER_PREFIX = "member#"
DAY_COUNTER_DAYS = FIGURE_DAYS + 5  # a day's counter outlives show's 30 days a little
MEMBER_COUNTER_DAYS = 2  # a member's turns matter for their day only


def _key(guild_id: str, item: str) -> Item:
    return {"guild_id": s(guild_id), "item_key": s(item)}


def _expires(day: date, days: int) -> dict[str, str]:
    return n(int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()) + days * 86400)


class DynamoServerStore:
    def __init__(self, client: Any, table: str, *, cache_seconds: float = 30.0, clock=time.monotonic) -> None:
        self._client = client
        self._table = table
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._cache: dict[str, tuple[float, ServerSettings]] = {}
        self._lock = threading.Lock()

    # ---- settings

    def get(self, guild_id: str) -> ServerSettings:
        cached = self._cached(guild_id)
        if cached is not None:
            return cached
        answer = self._client.get_item(TableName=self._table, Key=_key(guild_id, SETTINGS_ITEM))
        return self._keep(_settings(guild_id, answer.get("Item")))

    def get_many(self, guild_ids: Sequence[str]) -> dict[str, ServerSettings]:
        """One GetItem a server (the nightly run: only the servers that had messages that day)."""
        return {guild_id: self.get(guild_id) for guild_id in dict.fromkeys(guild_ids)}

    def change(self, before: ServerSettings, after: ServerSettings, row: ChangeRow) -> bool:
        condition = "attribute_not_exists(#version)" if before.version == 0 else "#version = :expected"
        put: dict[str, Any] = {
            "TableName": self._table,
            "Item": _settings_item(after, before.version + 1),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#version": "version"},
        }
        if before.version:
            put["ExpressionAttributeValues"] = {":expected": n(before.version)}
        ledger = {
            "TableName": self._table,
            "Item": _change_item(row),
            "ConditionExpression": "attribute_not_exists(item_key)",
        }
        try:
            transact(self._client, [{"Put": put}, {"Put": ledger}])
        except ClientError as error:
            if error_code(error) != TRANSACTION_CANCELED:
                raise
            return False
        self._keep(_settings(after.guild_id, _settings_item(after, before.version + 1)))
        return True

    def changes(self, guild_id: str, limit: int) -> list[ChangeRow]:
        items = self._client.query(
            TableName=self._table,
            KeyConditionExpression="guild_id = :g AND begins_with(item_key, :p)",
            ExpressionAttributeValues={":g": s(guild_id), ":p": s(CHANGE_PREFIX)},
            ScanIndexForward=False,
            Limit=limit,
        ).get("Items", [])
        return [_change_row(guild_id, item) for item in items]

    def diary_failed(self, guild_id: str, code: int) -> None:
        self._client.update_item(
            TableName=self._table,
            Key=_key(guild_id, SETTINGS_ITEM),
            UpdateExpression="SET diary_error = :code",
            ConditionExpression="attribute_exists(item_key)",
            ExpressionAttributeValues={":code": n(code)},
        )
        with self._lock:
            self._cache.pop(guild_id, None)

    # ---- counters

    def take_turn(self, guild_id: str, user_id: str, day: date, limit: int) -> Refused | None:
        if limit > 0:
            counted = conditional_write(
                self._client.update_item,
                TableName=self._table,
                Key=_key(guild_id, f"{MEMBER_PREFIX}{day.isoformat()}#{user_id}"),
                UpdateExpression="ADD turns :one SET expiration = :expires",
                ConditionExpression="attribute_not_exists(turns) OR turns < :limit",
                ExpressionAttributeValues={
                    ":one": n(1),
                    ":limit": n(limit),
                    ":expires": _expires(day, MEMBER_COUNTER_DAYS),
                },
            )
            if not counted:
                return Refused.DAILY_LIMIT
        self._add_day(guild_id, day, turns=1)
        return None

    def count(self, guild_id: str, day: date, *, model_requests: int = 0, memories: int = 0) -> None:
        if model_requests:
            self._add_day(guild_id, day, model_requests=model_requests)
        if memories:
            self._client.update_item(
                TableName=self._table,
                Key=_key(guild_id, TOTALS_ITEM),
                UpdateExpression="ADD memories :delta",
                ExpressionAttributeValues={":delta": n(memories)},
            )

    def count_person(self, guild_id: str, user_id: str, *, has_memories: bool) -> None:
        verb = "ADD" if has_memories else "DELETE"
        self._client.update_item(
            TableName=self._table,
            Key=_key(guild_id, TOTALS_ITEM),
            UpdateExpression=f"{verb} people :person",
            ExpressionAttributeValues={":person": {"SS": [person_key(guild_id, user_id)]}},
        )

    def _add_day(self, guild_id: str, day: date, **counts: int) -> None:
        names = {f"#{k}": k for k in counts}
        values = {f":{k}": n(v) for k, v in counts.items()}
        adds = ", ".join(f"#{k} :{k}" for k in counts)
        self._client.update_item(
            TableName=self._table,
            Key=_key(guild_id, f"{DAY_PREFIX}{day.isoformat()}"),
            UpdateExpression=f"ADD {adds} SET expiration = :expires",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues={**values, ":expires": _expires(day, DAY_COUNTER_DAYS)},
        )

    def figures(self, guild_id: str, today: date) -> Figures:
        first, last = figure_days(today)
        days = [
            DayFigures(
                date.fromisoformat(item["item_key"]["S"][len(DAY_PREFIX) :]),
                _int(item, "turns"),
                _int(item, "model_requests"),
            )
            for item in query_items(
                self._client,
                TableName=self._table,
                KeyConditionExpression="guild_id = :g AND item_key BETWEEN :first AND :last",
                ExpressionAttributeValues={
                    ":g": s(guild_id),
                    ":first": s(f"{DAY_PREFIX}{first.isoformat()}"),
                    ":last": s(f"{DAY_PREFIX}{last.isoformat()}"),
                },
            )
        ]
        totals = self._client.get_item(TableName=self._table, Key=_key(guild_id, TOTALS_ITEM)).get("Item") or {}
        return Figures(len(totals.get("people", {}).get("SS", [])), max(0, _int(totals, "memories")), days)

    # ---- the process's cache

    def _cached(self, guild_id: str) -> ServerSettings | None:
        if self._cache_seconds <= 0:
            return None
        with self._lock:
            found = self._cache.get(guild_id)
        if found is None or self._clock() - found[0] > self._cache_seconds:
            return None
        return found[1]

    def _keep(self, settings: ServerSettings) -> ServerSettings:
        if self._cache_seconds > 0:
            with self._lock:
                self._cache[settings.guild_id] = (self._clock(), settings)
        return settings


def _int(item: Item, name: str) -> int:
    return int_of(item[name]) if name in item else 0


def _settings_item(settings: ServerSettings, version: int) -> Item:
    item: Item = {
        **_key(settings.guild_id, SETTINGS_ITEM),
        "version": n(version),
        "memory_enabled": {"BOOL": settings.memory_enabled},
        "channel_mode": s(settings.channel_mode.value),
        "daily_limit": n(settings.daily_limit),
        "language": s(settings.language.value),
        "diary_error": n(settings.diary_error),
    }
    if settings.memory_since is not None:
        item["memory_since"] = s(iso(settings.memory_since))
    if settings.channels:
        item["channels"] = {"L": [s(c) for c in settings.channels]}
    for name, value in (
        ("persona", settings.persona),
        ("diary_channel", settings.diary_channel),
        ("diary_language", settings.diary_language),
    ):
        if value:
            item[name] = s(value)
    for setting, changed in settings.changed.items():
        item[f"changed_by:{setting}"] = s(changed.admin_id)
        item[f"changed_at:{setting}"] = s(iso(changed.at))
    return item


def _settings(guild_id: str, item: Item | None) -> ServerSettings:
    if not item:
        return ServerSettings(guild_id)
    changed = {
        name.split(":", 1)[1]: Changed(value["S"], parse_iso(item[f"changed_at:{name.split(':', 1)[1]}"]["S"]))
        for name, value in item.items()
        if name.startswith("changed_by:") and f"changed_at:{name.split(':', 1)[1]}" in item
    }
    return ServerSettings(
        guild_id,
        memory_enabled=item.get("memory_enabled", {}).get("BOOL", True),
        memory_since=optional_time(item, "memory_since"),
        channel_mode=ChannelMode(str_of(item, "channel_mode", ChannelMode.ALL.value)),
        channels=tuple(v["S"] for v in item.get("channels", {}).get("L", [])),
        persona=str_of(item, "persona"),
        diary_channel=str_of(item, "diary_channel"),
        diary_language=str_of(item, "diary_language"),
        diary_error=_int(item, "diary_error"),
        daily_limit=_int(item, "daily_limit"),
        language=AnswerLanguage(str_of(item, "language", AnswerLanguage.AUTO.value)),
        changed=changed,
        version=_int(item, "version"),
    )


def _change_item(row: ChangeRow) -> Item:
    return {
        **_key(row.guild_id, f"{CHANGE_PREFIX}{iso(row.at)}#{secrets.token_hex(4)}"),
        "setting": s(row.setting),
        "actor": s(row.actor),
        "user_id": s(row.admin_id),
        "before": s(row.before),
        "after": s(row.after),
        "at": s(iso(row.at)),
    }


def _change_row(guild_id: str, item: Item) -> ChangeRow:
    return ChangeRow(
        guild_id,
        str_of(item, "setting"),
        str_of(item, "user_id"),
        str_of(item, "before"),
        str_of(item, "after"),
        parse_iso(str_of(item, "at")),
        str_of(item, "actor"),
    )
