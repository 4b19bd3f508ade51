"""Checked by mypy (``make lint``, so CI), never run: the composition root's stores, models and
use cases have their ports' types, not ``Any``. ``assert_type`` is exact, so a provider that
lost its annotation (``Any``), or returned a concrete adapter instead of its port, fails the
type check; so does an override of the wrong port or a misspelled one."""

from __future__ import annotations

from datetime import tzinfo
from typing import assert_type

from memorybot.bootstrap import Container, Invocation
from memorybot.config import Settings
from memorybot.core.night.consolidation import Consolidator
from memorybot.core.record.domain import ScopeMode
from memorybot.core.record.ports import (
    AsyncInvoker,
    AttemptCounter,
    ChatModel,
    DecisionModel,
    DiscordApi,
    EmbeddingModel,
    Idempotency,
    ManifestStore,
    MemoryStore,
    MessageStore,
    PeopleStore,
    RunStore,
)
from memorybot.core.rights.erasure import Erasure
from memorybot.core.rights.importing import Importer
from memorybot.core.rights.rollback import Rollback
from memorybot.core.turn.extraction import Extractor
from memorybot.core.turn.reply import ReplyWriter
from memorybot.discord.guilds import GuildNames
from memorybot.discord.interactions import Dependencies, InteractionMemories
from memorybot.discord.signature import Verifier


def the_container_is_typed_by_its_ports(c: Container) -> None:
    assert_type(c.settings, Settings)
    assert_type(c.scope_mode, ScopeMode)
    assert_type(c.zone, tzinfo)
    # the stores
    assert_type(c.memory_store, MemoryStore)
    assert_type(c.message_store, MessageStore)
    assert_type(c.people_store, PeopleStore)
    assert_type(c.run_store, RunStore)
    assert_type(c.manifest_store, ManifestStore)
    assert_type(c.idempotency, Idempotency)
    assert_type(c.unavailable_attempts, AttemptCounter)
    # the models
    assert_type(c.decision_model, DecisionModel)
    assert_type(c.chat_model, ChatModel)
    assert_type(c.embedding_model, EmbeddingModel | None)
    # the use cases
    assert_type(c.extractor, Extractor)
    assert_type(c.consolidator, Consolidator)
    assert_type(c.rollback, Rollback)
    assert_type(c.erasure, Erasure)
    assert_type(c.importer, Importer)
    assert_type(c.reply_writer, ReplyWriter)
    # the front door and the workers' edges
    assert_type(c.signature_verifier, Verifier)
    assert_type(c.invoker, AsyncInvoker)
    assert_type(c.discord, DiscordApi)
    assert_type(c.discord_interactive, DiscordApi)
    assert_type(c.discord_webhooks, DiscordApi)
    assert_type(c.guild_names, GuildNames)


def an_invocation_answers_interactions(c: Container) -> None:
    invocation = c.for_invocation(None)
    assert_type(invocation, Invocation)
    deps: Dependencies = invocation  # structurally what answering needs, checked here
    assert_type(deps.memory_store, InteractionMemories)  # the roles answering uses, not the whole store
    assert_type(invocation.signature_verifier, Verifier)


def overrides_are_typed_by_port(settings: Settings, memories: MemoryStore, jev: DecisionModel) -> None:
    Container(settings, memory_store=memories, decision_model=jev)
    Container(settings, memory_store=jev)  # type: ignore[arg-type]  # a decision model is no memory store
    Container(settings, memory_stores=memories)  # type: ignore[call-arg]  # no such provider
