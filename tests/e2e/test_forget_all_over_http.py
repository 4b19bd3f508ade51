"""A forget-all that is final by time and finishes as a job, over HTTP against the local stack in
its own process (tables on a moto server this test reads too, Jev a loopback stand-in):

- a memory imported with an ``updatedAt`` ahead of the clock (inside the import's accepted skew),
  forgotten by a forget-all, is not offered back by /memory history, and its Undo pressed anyway
  brings nothing back;
- a line said before the forget-all (no memory's source) is never learned again: not by the next
  live turn, whose exchange reaches back before it, nor by the next night;
- a profile of 2,000 memories: the confirmation answers at once, the deletes run as a job (one
  ledger row per memory), the confirmation is updated when they are done, and a second
  forget-all while the job runs starts nothing. The 2,000 are written into the tables as an
  import leaves them (the import itself is tested above and in test_operator_import.py): a
  transaction per row over HTTP took longer than the forget-all under test.
"""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime, timedelta

import pytest
from stack_process import StackOnMoto, loopback_models, stack_on_moto

from faults import put_items
from loopback.jev_server import JevServer
from memorybot import tables
from memorybot.adapters import profile_index
from memorybot.adapters.dynamodb_items import s
from memorybot.adapters.dynamodb_ledger import ledger_item
from memorybot.adapters.dynamodb_memories import marker_key, memory_item
from memorybot.config import Settings
from memorybot.core.record.catalog import text
from memorybot.core.record.changes import LedgerEntry
from memorybot.core.record.domain import Action, Actor, Memory, Owner, is_memory_id, iso, new_memory_id
from memorybot.core.rights.commands import FORGET_ALL_REASON
from memorybot.core.rights.importing import IMPORT_REASON, parse_import
from memorybot.discord.history_view import undo_button
from memorybot.discord.requests import FORGET_ALL_BUTTON
from memorybot.local.client import LOCAL_GUILD_ID, LocalClient

ADMIN_SECRET = "forget-all-admin-secret-5"
PREFIX = "forgetall-"
SCOPE = f"guild:{LOCAL_GUILD_ID}"
IMPORT_ROWS = 200  # the import route's most rows per request
_channels = itertools.count(1750000000000000001)


class Stack(StackOnMoto):
    jev: JevServer

    def memory_ids(self, user_id: str) -> set[str]:
        return {
            i["memory_id"]["S"]
            for i in self.scan("memories")
            if i.get("user_id", {}).get("S") == user_id and is_memory_id(i["memory_id"]["S"])
        }

    def rows(self, user_id: str, action: str) -> list[dict]:
        owner = f"{SCOPE}#{user_id}"
        return [i for i in self.scan("memory_log") if i["owner"]["S"] == owner and i["action"]["S"] == action]

    def changes(self) -> int:
        """Every ledger row that is not a read."""
        return len([r for r in self.scan("memory_log") if r["action"]["S"] != "read"])

    def import_rows(self, rows: list[dict]) -> None:
        for start in range(0, len(rows), IMPORT_ROWS):
            answer = self.post("/memory/import", {"memories": rows[start : start + IMPORT_ROWS]})
            assert answer.status_code == 200, answer.text

    def seed_imported(self, rows: list[dict]) -> None:
        """What importing ``rows`` leaves in the tables, written in batches of 25: each memory (a
        fresh id) with its import marker and its ledger row, as ``add_once`` writes them, and the
        owners' selection index, complete, as a profile's first read builds it."""
        settings = Settings.from_env({"MEMORYBOT_TABLE_PREFIX": self.prefix})
        memories_table, log_table = settings.table(tables.MEMORIES), settings.table(tables.MEMORY_LOG)
        now = datetime.now(UTC)
        writes: dict[str, list[dict]] = {memories_table: [], log_table: []}
        profiles: dict[Owner, list[Memory]] = {}
        ids: set[str] = set()
        for row in parse_import({"memories": rows}, now=now, max_rows=None).rows:
            while (memory_id := new_memory_id()) in ids:  # the import draws again on a taken id
                pass
            ids.add(memory_id)
            memory = row.memory(memory_id)
            entry = LedgerEntry(
                memory.user_id,
                Action.ADD,
                Actor.IMPORT,
                IMPORT_REASON,
                now,
                (memory.memory_id,),
                after=memory,
                scope=memory.scope,
                sources=memory.sources,
                import_id=row.source_id,
            )
            writes[memories_table] += [
                memory_item(memory, settings.zone),
                {**marker_key(row.owner, row.once), "at": s(iso(now))},
            ]
            writes[log_table].append(ledger_item(entry))
            profiles.setdefault(row.owner, []).append(memory)
        for owner, held in profiles.items():  # the build's puts (its header, its chunks), unconditioned
            built = profile_index.build(
                memories_table, owner, held, profile_index.Index(owner, None), check={}, stamped=True
            )
            writes[memories_table] += [write["Put"]["Item"] for write in built if "Put" in write]
        for table, items in writes.items():
            put_items(self.dynamo, table, items)


@pytest.fixture(scope="module")
def stack(moto_server, tmp_path_factory):
    state_dir = tmp_path_factory.mktemp("forget-all-state")
    with JevServer(worth=0.9, add=0.9, verdict="keep", review="keep") as jev:
        models = loopback_models(jev.url)
        with stack_on_moto(
            Stack, moto_server, state_dir, models, _channels, prefix=PREFIX, admin_secret=ADMIN_SECRET, timeout=300
        ) as stack:
            stack.jev = jev
            yield stack


@pytest.fixture(autouse=True)
def fresh_jev(stack):
    stack.jev.clear()


def confirm_button(client: LocalClient) -> str:
    """A forget-all confirmation as the button's custom_id carries it: who asked, and when."""
    return f"{FORGET_ALL_BUTTON}:{client.user_id}:{int(time.time())}"


def memory_row(client: LocalClient, said: str, at: datetime, source_id: str) -> dict:
    return {"userId": client.user_id, "scope": SCOPE, "text": said, "createdAt": iso(at), "id": source_id}


# ---- (a) final by time: a memory stamped ahead of the clock


def test_a_memory_stamped_ahead_of_the_clock_is_not_brought_back_by_undo_after_a_forget_all(stack):
    ada = stack.person("ada-ahead")
    ahead = datetime.now(UTC) + timedelta(minutes=4)  # inside the import's 5 minutes of accepted skew
    stack.import_rows([memory_row(ada, "Collects antique clocks", ahead, "ahead-1")])
    [imported] = stack.memory_ids(ada.user_id)

    assert "Forgotten: 1 memories" in "\n".join(ada.click(confirm_button(ada)))
    assert stack.memory_ids(ada.user_id) == set()

    page = ada.history()
    assert any("forgotten" in line for line in page), page
    assert not [b for b in ada.buttons if b.get("custom_id", "").startswith("memory-undo:")]  # none offered
    # Pressed anyway (a button from an older page, or a forged click): refused, nothing written.
    [deleted] = stack.rows(ada.user_id, "delete")
    before = stack.changes()
    answer = "\n".join(ada.click(undo_button(ada.user_id, deleted["entry_key"]["S"])))
    assert text("undo_final") in answer, answer
    assert stack.memory_ids(ada.user_id) == set() and imported not in stack.memory_ids(ada.user_id)
    assert stack.rows(ada.user_id, "undo") == [] and stack.changes() == before


# ---- (b) final by time: what was said before it is never learned


def test_a_line_said_before_a_forget_all_is_learned_neither_live_nor_at_night(stack):
    bea = stack.person("bea-before")
    stack.jev.set_worth(0.1)  # not worth keeping then: the line is no memory's source
    bea.chat("My favourite colour is tealwhisper")
    assert stack.memory_ids(bea.user_id) == set()

    assert "Forgotten: 0 memories" in "\n".join(bea.click(confirm_button(bea)))
    time.sleep(0.01)  # the next line's snowflake is after the forget-all's stamp

    stack.jev.clear()  # worth keeping from now on
    bea.chat("I started pottery classes")
    exchanges = [b["exchange"] for b in stack.jev.bodies("/worth")]
    assert exchanges and any("pottery" in e for e in exchanges), exchanges
    assert not any("tealwhisper" in e for e in exchanges), exchanges  # the exchange does not reach back
    [learned] = stack.memory_ids(bea.user_id)

    stack.jev.clear()
    night = "\n".join(bea.nightly())
    assert "runId" in night or "Ran the nightly run" in night, night
    asked = [str(b) for b in stack.jev.bodies()]
    assert not any("tealwhisper" in b for b in asked), asked  # nor the night's chunks
    assert learned in stack.memory_ids(bea.user_id)
    texts = [str(i) for i in stack.scan("memories") if i.get("user_id", {}).get("S") == bea.user_id]
    assert not any("tealwhisper" in t for t in texts), texts


# ---- (c) a large profile: answered at once, deleted by a job, one click's worth


def test_a_forget_all_of_2000_memories_answers_at_once_and_completes_as_one_job(stack):
    cy = stack.person("cy-large")
    at = datetime.now(UTC) - timedelta(days=1)
    stack.seed_imported([memory_row(cy, f"Fact number {i} about cy", at, f"large-{i}") for i in range(2000)])
    held = stack.memory_ids(cy.user_id)
    assert len(held) == 2000

    assert "Forget all 2000 memories" in "\n".join(cy.forget_all())
    started = time.monotonic()
    first = "\n".join(cy.click(wait=False))
    answered = time.monotonic() - started
    print(f"forget-all of 2000 memories: the confirmation answered in {answered:.2f} s")
    assert "Forgetting every memory" in first and "Forgotten" not in first, first

    # Asked again and confirmed while the job runs (a new button, asked a second later; the
    # client's /memory forget-all would wait for the stack's jobs first): nothing more is started.
    second = "\n".join(cy.click(f"{FORGET_ALL_BUTTON}:{cy.user_id}:{int(time.time()) + 1}", wait=False))
    assert "already forgetting" in second, second
    stack.drain()

    assert stack.memory_ids(cy.user_id) == set()
    deletes = stack.rows(cy.user_id, "delete")
    assert len(deletes) == 2000  # one row per memory, each once
    assert {r["memory_ids"]["L"][0]["S"] for r in deletes} == held
    assert {r["reason"]["S"] for r in deletes} == {FORGET_ALL_REASON}
    done = [e for e in stack.events() if e["kind"] == "edit" and "Forgotten: 2000 memories" in e["body"]["content"]]
    assert len(done) == 1  # the confirmation updated once, by the one job
