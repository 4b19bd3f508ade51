"""The composition root's overrides are explicit and typed (tests/typecheck/container_types.py
proves the types to mypy; these hold what a run can see)."""

from __future__ import annotations

import inspect
import tomllib
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

import pytest

from fakes import FakeMemoryStore, FakePeopleStore, ScriptedJev
from memorybot.bootstrap import Container
from memorybot.config import Settings
from memorybot.core.record.domain import Owner
from memorybot.core.rights.importing import parse_import

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = Settings(table_names={}, decision_model="offline", chat_model="offline", embedding_model="none")


def test_every_override_is_a_provider_taking_the_port_it_returns():
    overrides = [p for p in inspect.signature(Container.__init__).parameters.values() if p.kind is p.KEYWORD_ONLY]
    assert len(overrides) >= 15
    for parameter in overrides:
        provider = inspect.getattr_static(Container, parameter.name)
        assert isinstance(provider, cached_property), parameter.name
        returns = inspect.signature(provider.func).return_annotation
        expected = returns if returns in ("DynamoDBClient", "EmbeddingModel | None") else f"{returns} | None"
        assert parameter.annotation == expected, parameter.name
        assert parameter.default is None, parameter.name


def test_a_misspelled_override_is_refused_instead_of_ignored():
    with pytest.raises(TypeError, match="memory_stores"):
        Container(SETTINGS, memory_stores=FakeMemoryStore())  # type: ignore[call-arg]


def test_the_use_cases_are_built_on_the_overrides():
    memories = FakeMemoryStore()
    c = Container(SETTINGS, memory_store=memories, people_store=FakePeopleStore(), decision_model=ScriptedJev())
    assert c.extractor._jev is c.decision_model  # the use case holds the overriding port
    row = {"userId": "111", "scope": "dm", "text": "likes tea", "createdAt": "2026-11-01T00:00:00Z"}
    assert c.importer.run(parse_import({"memories": [row]}, now=datetime.now(UTC))).imported == 1
    assert [m.text for m in memories.of(Owner("dm", "111"))] == ["likes tea"]  # the override's store
    assert c.importer is c.importer  # built once


def test_an_invocation_offers_what_answering_needs_and_nothing_else():
    c = Container(SETTINGS, memory_store=FakeMemoryStore(), people_store=FakePeopleStore())
    invocation = c.for_invocation(object())
    assert invocation.memory_store is c.memory_store and invocation.people_store is c.people_store
    with pytest.raises(AttributeError):
        invocation.consolidator  # type: ignore[attr-defined]  # noqa: B018 - no forwarding of everything


def test_the_type_check_of_the_wiring_runs_in_ci():
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert "tests.typecheck" in mypy["packages"]
    assert (ROOT / "tests" / "typecheck" / "container_types.py").is_file()
    assert "make lint" in (ROOT / ".ci" / "run").read_text()
