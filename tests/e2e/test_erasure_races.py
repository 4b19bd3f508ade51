"""Erasure is final, with real concurrency: the operator erases a person while an import of their
memories is in progress, while their turn is in flight, and while a night consolidates their day,
twenty times each, the erasure landing at a different moment each time. Afterwards nothing of the
person is left: no memory, no message of theirs or to them, no ledger row with text, none of their
words in what is stored about them or in a night's record, and a second erasure finds nothing.

The stack runs in its own process on the session's moto server (the local store, behind its
layer), which the test reads to see what is stored; Jev is a loopback server that takes a little
time over each answer, so the work the erasure races is spread over many requests."""

from __future__ import annotations

import itertools
import json
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from stack_process import StackOnMoto, loopback_models, stack_on_moto

from loopback.jev_server import JevServer
from memorybot import tables
from memorybot.core.record.domain import is_memory_id, snowflake_at
from memorybot.local import client as terminal
from memorybot.local.client import LocalClient

ADMIN_SECRET = "erasure-races-admin-secret"
PREFIX = "races-"
ROUNDS = range(20)
JEV_SECONDS = 0.01  # each of Jev's answers: the raced work takes a few hundred milliseconds
IMPORT_ROWS = 12
# The erasure comes this long after the raced work started: from at once to about its end.
MOMENTS = (0.0, 0.01, 0.03, 0.06, 0.12)
FIRST_NIGHT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)  # each round's night is a day of its own
_channels = itertools.count(1750000000000000001)


class Races(StackOnMoto):
    jev: JevServer

    def person(self, name: str, *, catch_up: bool = False) -> LocalClient:
        return super().person(name, catch_up=catch_up)

    def chat_at(self, who: LocalClient, text: str, at: datetime | None = None) -> None:
        """A /chat, answered (type 5) with its reply and extraction left running."""
        payload = who._payload("chat", [{"type": 3, "name": "message", "value": text}])
        if at is not None:
            payload["id"] = snowflake_at(at, next(terminal._SEQUENCE))
        assert who.send(payload) == (200, {"type": 5})

    def of(self, table: tables.TableSpec, index: str, value: str) -> list[dict]:
        """The items of ``table`` whose ``index``'s partition key is ``value``."""
        [key] = [i.partition.name for i in table.global_indexes if i.name == index]
        pages = self.dynamo.get_paginator("query").paginate(
            TableName=self.prefix + table.logical_name,
            IndexName=index,
            KeyConditionExpression="#k = :v",
            ExpressionAttributeNames={"#k": key},
            ExpressionAttributeValues={":v": {"S": value}},
        )
        return [item for page in pages for item in page["Items"]]

    def left_of(self, user_id: str, words: str) -> list[str]:
        """What is still stored of the person (empty: nothing)."""
        memories = self.of(tables.MEMORIES, "by_user", user_id)
        ledger = self.of(tables.MEMORY_LOG, "by_user", user_id)
        messages = self.of(tables.MESSAGES, "by_author", user_id)
        messages += self.of(tables.MESSAGES, "by_conversation_of", user_id)
        left = [f"memory {i['memory_id']['S']}" for i in memories if is_memory_id(i["memory_id"]["S"])]
        left += [f"message {i['message_id']['N']}" for i in messages]
        left += [f"ledger row with text {i['entry_key']['S']}" for i in ledger if "before" in i or "after" in i]
        # Their words anywhere: in what is theirs, and in what is no one's (a night's diary).
        for table, items in {"their items": memories + ledger + messages, "nights": self.scan("nightly_runs")}.items():
            if words in json.dumps(items):
                left.append(f"their words in {table}")
        again = self.post("/memory/erase", {"userId": user_id, "dryRun": True})  # 404 or all zeros
        counts = ("memoriesDeleted", "ledgerRowsRedacted", "messagesDeleted", "switchErased")
        if again.status_code != 404 and any(again.json()[c] for c in counts):
            left.append(f"a second erasure finds {again.json()}")
        return left


@pytest.fixture(scope="module")
def races(moto_server, tmp_path_factory):
    state_dir = tmp_path_factory.mktemp("races-state")
    with JevServer(worth=0.9, add=0.9, verdict="keep", review="keep") as jev:
        jev.set_delay(JEV_SECONDS)
        models = loopback_models(jev.url)
        with stack_on_moto(
            Races, moto_server, state_dir, models, _channels, prefix=PREFIX, admin_secret=ADMIN_SECRET
        ) as races:
            races.jev = jev
            yield races
    assert "Traceback" not in "".join(races.running.output)


def erase_after(races: Races, user_id: str, seconds: float) -> None:
    time.sleep(seconds)
    answer = races.post("/memory/erase", {"userId": user_id})
    assert answer.status_code == 200, answer.text


def raced(races: Races, work, user_id: str, moment: float) -> None:
    """``work`` on a thread of its own, the erasure ``moment`` seconds after it started."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - reported on the test's thread
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    erase_after(races, user_id, moment)
    thread.join(timeout=120)
    assert not thread.is_alive() and not failed, failed


@pytest.mark.parametrize("round_", ROUNDS)
def test_an_erasure_during_an_import_leaves_nothing_of_the_person(races, round_):
    ann = races.person(f"ann-import-{round_}")
    words = f"kept-by-ann-{round_}"
    scope = f"guild:{ann.guild_id}"

    def rows(count: int, start: int = 0) -> list[dict]:
        return [
            {"userId": ann.user_id, "scope": scope, "text": f"{words} fact {n}", "createdAt": "2026-01-01T00:00:00Z"}
            for n in range(start, start + count)
        ]

    assert races.post("/memory/import", {"memories": rows(1)}).json()["imported"] == 1  # she is known

    def importing() -> None:
        answer = races.post("/memory/import", {"memories": rows(IMPORT_ROWS, start=1)})
        assert answer.status_code in (200, 409), answer.text  # refused once she is erased

    raced(races, importing, ann.user_id, MOMENTS[round_ % len(MOMENTS)])
    assert races.left_of(ann.user_id, words) == []


@pytest.mark.parametrize("round_", ROUNDS)
def test_an_erasure_during_a_turn_in_flight_leaves_nothing_of_the_person(races, round_):
    bo = races.person(f"bo-turn-{round_}")
    words = f"said-by-bo-{round_}"

    races.chat_at(bo, f"I keep bees on my roof, {words}")  # her line is stored; the rest is in flight
    erase_after(races, bo.user_id, MOMENTS[round_ % len(MOMENTS)])  # the reply and its extraction run
    races.drain()
    assert races.left_of(bo.user_id, words) == []


@pytest.mark.parametrize("round_", ROUNDS)
def test_an_erasure_during_a_night_leaves_nothing_of_the_person(races, round_):
    cy = races.person(f"cy-night-{round_}")
    words = f"said-by-cy-{round_}"
    night = FIRST_NIGHT + timedelta(days=round_)  # 21:00 JST: the night after is this JST day's
    for n in range(2):
        races.chat_at(cy, f"My sister moved to Osaka {n}, {words}", night - timedelta(hours=3, minutes=n))
    races.drain()

    def consolidation() -> None:
        answer = races.post("/local/nightly", {"now": (night + timedelta(hours=7)).isoformat()})
        assert answer.status_code == 200, answer.text

    raced(races, consolidation, cy.user_id, MOMENTS[round_ % len(MOMENTS)])
    assert races.left_of(cy.user_id, words) == []
