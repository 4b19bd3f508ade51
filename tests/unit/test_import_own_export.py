"""A person's own export imported into the stack it came from changes nothing (the export's ids
are that person's memory ids there, with those texts); into another stack it imports once; after
an erasure (the ledger keeps no text) it brings the memories back."""

from __future__ import annotations

from fakes import T0, Clock, FakeMemoryStore, FakeMessageStore
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import Action, Actor, Memory, Owner, ScopeMode
from memorybot.core.rights import commands
from memorybot.core.rights.erasure import Erasure
from memorybot.core.rights.importing import Importer, parse_import

USER, SCOPE = "700000000000000001", "guild:700000000000000002"
NOW = T0
OWNER = Owner(SCOPE, USER)


def learned(store: FakeMemoryStore, memory_id: str, text: str) -> None:
    fact = Memory(USER, memory_id, text, T0, T0, scope=SCOPE)
    store.apply(Change(Action.ADD, None, fact, "jev: add"), actor=Actor.EXTRACTION)


def run(store: FakeMemoryStore, export: dict, *, dry_run: bool = False) -> tuple[int, int, int]:
    """(imported, unchanged: imported before, already here: this stack's own memories)."""
    result = Importer(store, ScopeMode.GUILD, clock=Clock(NOW)).run(
        parse_import({**export, "dryRun": dry_run}, now=NOW)
    )
    return result.imported, result.unchanged, result.already_here


def test_ones_own_export_changes_nothing_here_and_imports_once_elsewhere():
    here = FakeMemoryStore(Clock(NOW))
    learned(here, "a2bcd", "Loves hiking")
    learned(here, "e3fgh", "Has a cat called Udon")
    export = commands.export(here, USER)
    assert run(here, export, dry_run=True) == (0, 0, 2) and run(here, export) == (0, 0, 2)
    assert len(here.of(OWNER)) == 2

    commands.forget(here, OWNER, "a2bcd")
    assert run(here, export) == (0, 0, 2)  # what was forgotten stays forgotten
    assert [m.text for m in here.of(OWNER)] == ["Has a cat called Udon"]

    elsewhere = FakeMemoryStore(Clock(NOW))
    assert run(elsewhere, export, dry_run=True) == (2, 0, 0)
    assert run(elsewhere, export) == (2, 0, 0) and run(elsewhere, export) == (0, 2, 0)


def test_after_an_erasure_the_export_brings_the_memories_back():
    here = FakeMemoryStore(Clock(NOW))
    learned(here, "a2bcd", "Loves hiking")
    export = commands.export(here, USER)
    assert Erasure(here, FakeMessageStore(), clock=Clock(NOW)).run(USER).memories == 1
    assert run(here, export) == (1, 0, 0)
