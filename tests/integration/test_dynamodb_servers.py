"""The servers table on moto: a change and its ledger row in one transaction, the optimistic check
between two admins, the warm cache (a change takes effect within its seconds), the daily limit's
counter and the figures, which carry counts only."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import pytest

from memorybot import tables
from memorybot.adapters.dynamodb_servers import DynamoServerStore
from memorybot.core.rights import servers
from memorybot.core.rights.servers import BadSetting, ChangeRow, Refused, ServerSettings, SettingChange

GUILD, ADMIN, MEMBER = "800000000000000009", "100000000000000001", "200000000000000002"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def store(dynamo, cache_seconds: float = 0.0, clock=None) -> DynamoServerStore:
    client, settings = dynamo
    return DynamoServerStore(
        client, settings.table(tables.SERVERS), cache_seconds=cache_seconds, clock=clock or Clock()
    )


def change(s: DynamoServerStore, setting: str, value: str, channel: str = "") -> bool:
    before = s.get(GUILD)
    after = servers.apply(before, SettingChange(setting, value, channel), NOW)
    row = ChangeRow(GUILD, setting, ADMIN, servers.described(before, setting), servers.described(after, setting), NOW)
    return s.change(before, after, row)


def test_a_change_and_its_ledger_row_are_written_together(dynamo):
    s = store(dynamo)
    assert s.get(GUILD) == ServerSettings(GUILD)  # no item: the bot as it behaves without settings
    assert change(s, "daily-limit", "5")
    assert s.get(GUILD).daily_limit == 5 and s.get(GUILD).version == 1
    [row] = s.changes(GUILD, 10)
    assert (row.actor, row.admin_id, row.setting, row.before, row.after) == ("admin", ADMIN, "daily-limit", "0", "5")


def test_a_change_made_on_settings_another_admin_changed_meanwhile_writes_nothing(dynamo):
    s = store(dynamo)
    stale = s.get(GUILD)
    assert change(s, "language", "ja")
    late = replace(stale, daily_limit=3)
    assert not s.change(stale, late, ChangeRow(GUILD, "daily-limit", MEMBER, "0", "3", NOW))
    assert s.get(GUILD).daily_limit == 0 and len(s.changes(GUILD, 10)) == 1  # no row for it either


def test_a_warm_process_keeps_settings_for_its_seconds_then_reads_them_again(dynamo):
    clock = Clock()
    warm, other = store(dynamo, cache_seconds=30, clock=clock), store(dynamo)
    assert warm.get(GUILD).memory_enabled
    assert change(other, "memory", "false")  # another function's change
    assert warm.get(GUILD).memory_enabled  # within the 30 s
    clock.now += 31
    assert not warm.get(GUILD).memory_enabled


def test_the_daily_limit_counts_each_member_apart_and_refuses_past_it(dynamo):
    s = store(dynamo)
    day = date(2026, 12, 1)
    assert [s.take_turn(GUILD, MEMBER, day, 2) for _ in range(3)] == [None, None, Refused.DAILY_LIMIT]
    assert s.take_turn(GUILD, ADMIN, day, 2) is None
    assert s.take_turn(GUILD, MEMBER, day + timedelta(days=1), 2) is None  # a new day
    figures = s.figures(GUILD, day)
    assert [d.turns for d in figures.days] == [3]  # the refused turn is not counted


def test_the_figures_are_counts_and_never_a_members_id(dynamo):
    client, settings = dynamo
    s = store(dynamo)
    day = date(2026, 12, 1)
    s.count(GUILD, day, model_requests=4, memories=2)
    s.count_person(GUILD, MEMBER, has_memories=True)
    s.count(GUILD, day - timedelta(days=40), model_requests=9)  # outside the 30 days
    figures = s.figures(GUILD, day)
    assert (figures.people, figures.memories, [d.model_requests for d in figures.days]) == (1, 2, [4])
    [totals] = [
        i for i in client.scan(TableName=settings.table(tables.SERVERS))["Items"] if i["item_key"]["S"] == "totals"
    ]
    assert MEMBER not in str(totals)  # a digest, not the id
    s.count_person(GUILD, MEMBER, has_memories=False)  # after a forget-all
    assert s.figures(GUILD, day).people == 0


@pytest.mark.parametrize(
    "setting,value,channel",
    [("channels", "only", ""), ("persona", "x" * 1001, ""), ("daily-limit", "-", ""), ("language", "fr", "")],
)
def test_a_value_that_does_not_fit_its_setting_is_refused(setting, value, channel):
    with pytest.raises(BadSetting):
        servers.apply(ServerSettings(GUILD), SettingChange(setting, value, channel), NOW)


def test_memory_turned_on_again_learns_nothing_said_before():
    off = servers.apply(ServerSettings(GUILD), SettingChange("memory", "false"), NOW)
    assert not off.learnable(NOW + timedelta(minutes=1))
    on = servers.apply(off, SettingChange("memory", "true"), NOW + timedelta(hours=1))
    assert not on.learnable(NOW + timedelta(minutes=30)) and on.learnable(NOW + timedelta(hours=2))


def test_channels_only_and_except():
    only = servers.apply(ServerSettings(GUILD), SettingChange("channels", "only", "1"), NOW)
    both = servers.apply(only, SettingChange("channels", "only", "2"), NOW)
    assert both.channels == ("1", "2") and both.allows_channel("2") and not both.allows_channel("3")
    elsewhere = servers.apply(both, SettingChange("channels", "except", "3"), NOW)
    assert elsewhere.channels == ("3",) and elsewhere.allows_channel("1") and not elsewhere.allows_channel("3")
    assert servers.apply(elsewhere, SettingChange("channels", "all"), NOW).allows_channel("3")
