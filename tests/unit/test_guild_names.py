"""A server's name, read once over REST and kept; a failure is kept briefly and the id stands in."""

from __future__ import annotations

from memorybot.discord.guilds import FAILURE_TTL_SECONDS, NAME_TTL_SECONDS, GuildNames


class Reader:
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names
        self.reads: list[str] = []

    def guild_name(self, guild_id: str) -> str:
        self.reads.append(guild_id)
        return self.names[guild_id]  # KeyError: as Discord's 404 would raise


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_name_is_read_once_and_kept_for_an_hour():
    reader, clock = Reader({"1": "Tea Club"}), Clock()
    names = GuildNames(reader, clock=clock)
    assert [names.name("1") for _ in range(3)] == ["Tea Club"] * 3
    assert reader.reads == ["1"]
    clock.now += NAME_TTL_SECONDS + 1
    reader.names["1"] = "Tea & Cake Club"  # renamed meanwhile
    assert names.name("1") == "Tea & Cake Club" and reader.reads == ["1", "1"]


def test_a_failed_read_is_none_and_not_retried_for_a_few_minutes():
    reader, clock = Reader({}), Clock()
    names = GuildNames(reader, clock=clock)
    assert names.name("2") is None and names.name("2") is None
    assert reader.reads == ["2"]  # the second answer did not wait on Discord again
    clock.now += FAILURE_TTL_SECONDS + 1
    reader.names["2"] = "Now Visible"
    assert names.name("2") == "Now Visible"


def test_a_blank_name_is_no_name():
    assert GuildNames(Reader({"3": "   "})).name("3") is None
