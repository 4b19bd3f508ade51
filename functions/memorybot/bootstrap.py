"""The composition root: adapters are wired here, once per process (Lambda container).

Each dependency is built on first use, so a function imports only the adapters it
touches (the interactions function must stay lean).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property, lru_cache
from typing import Any

from .config import Settings, settings


class Container:
    """Built once per process and not changed afterwards; per-invocation values travel with the
    call (``for_invocation``)."""

    def __init__(self, config: Settings, **overrides: Any) -> None:
        """``overrides`` replace any property by name (the local stack and tests use this)."""
        self.settings = config
        self.__dict__.update(overrides)

    @property
    def scope_mode(self):
        return self.settings.memory_scope

    @property
    def zone(self):
        return self.settings.zone

    @cached_property
    def dynamodb_client(self) -> Any:
        from .adapters.dynamodb_client import dynamodb_client

        return dynamodb_client()

    @cached_property
    def memory_store(self):
        from .adapters.dynamodb_memories import DynamoMemoryStore

        return DynamoMemoryStore(self.dynamodb_client, self.settings)

    @cached_property
    def message_store(self):
        from .adapters.dynamodb_messages import DynamoMessageStore

        return DynamoMessageStore(self.dynamodb_client, self.settings)

    @cached_property
    def people_store(self):
        from .adapters.dynamodb_people import DynamoPeopleStore

        return DynamoPeopleStore(self.dynamodb_client, self.settings)

    @cached_property
    def run_store(self):
        from .adapters.dynamodb_runs import DynamoRunStore

        return DynamoRunStore(self.dynamodb_client, self.settings)

    @cached_property
    def decision_model(self):
        from .adapters.models import build_decision_model

        return build_decision_model(self.settings)

    @cached_property
    def chat_model(self):
        from .adapters.models import build_chat_model

        return build_chat_model(self.settings)

    @cached_property
    def embedding_model(self):
        """None when MEMORYBOT_EMBEDDING_MODEL is none: relevance is then lexical only."""
        from .adapters.models import build_embedding_model

        return build_embedding_model(self.settings)

    @cached_property
    def extractor(self):
        from .core.extraction import Extractor

        return Extractor(
            self.memory_store,
            self.decision_model,
            self.chat_model,
            concurrency=self.settings.model_concurrency,
            embeddings=self.embedding_model,
            people=self.people_store,
        )

    @cached_property
    def manifest_store(self):
        """S3 deployed; otherwise kept in this process (the local stack wires a folder instead)."""
        if self.settings.manifest_bucket:
            from .adapters.manifests import S3Manifests, s3_client

            return S3Manifests(s3_client(), self.settings.manifest_bucket)
        from .adapters.manifests import InMemoryManifests

        return InMemoryManifests()

    @cached_property
    def consolidator(self):
        from .core.consolidation import Consolidator

        return Consolidator(
            self.memory_store,
            self.message_store,
            self.run_store,
            self.extractor,
            self.decision_model,
            self.chat_model,
            manifests=self.manifest_store,
            speaker_concurrency=self.settings.nightly_speaker_concurrency,
            embeddings=self.embedding_model,
            people=self.people_store,
        )

    @cached_property
    def rollback(self):
        from .core.rollback import Rollback

        return Rollback(self.memory_store, self.run_store, people=self.people_store)

    @cached_property
    def erasure(self):
        from .core.erasure import Erasure

        return Erasure(self.memory_store, self.message_store, self.people_store)

    @cached_property
    def importer(self):
        from .core.importing import Importer

        return Importer(self.memory_store, self.settings.memory_scope)

    @cached_property
    def reply_writer(self):
        from .core.reply import ReplyWriter

        return ReplyWriter(
            self.memory_store, self.chat_model, self.people_store, embeddings=self.embedding_model, zone=self.zone
        )

    # ---- the Discord front door and the workers

    @cached_property
    def signature_verifier(self):
        from .discord.signature import Verifier

        return Verifier(self.settings.secret("DISCORD_PUBLIC_KEY"))

    @cached_property
    def invoker(self):
        from .adapters.invoker import LambdaInvoker, lambda_client

        names = {"reply": self.settings.reply_function_name, "extraction": self.settings.extraction_function_name}
        return LambdaInvoker(names, lambda_client)

    @cached_property
    def discord(self):
        """For the workers: patient (timeouts of 10 s, 429s retried)."""
        from .adapters.discord_rest import DiscordRest

        return DiscordRest(self.settings.discord_api_base, self.settings.secret("DISCORD_BOT_TOKEN"))

    @cached_property
    def discord_interactive(self):
        """For answers inside Discord's 3 s: short timeouts, no waiting out a 429."""
        from .adapters.discord_rest import DiscordRest

        return DiscordRest(
            self.settings.discord_api_base, self.settings.secret("DISCORD_BOT_TOKEN"), timeout=1.0, max_attempts=1
        )

    @cached_property
    def unavailable_attempts(self):
        """Counts a worker's attempts that found the model unavailable (see adapters/attempts.py)."""
        from .adapters.attempts import DynamoAttemptCounter
        from .tables import DEDUP

        return DynamoAttemptCounter(self.dynamodb_client, self.settings.table(DEDUP))

    @cached_property
    def idempotency(self):
        """Work done once per key on the dedup table (see adapters/idempotency.py)."""
        from .adapters.idempotency import DynamoIdempotency
        from .tables import DEDUP

        return DynamoIdempotency(self.dynamodb_client, self.settings.table(DEDUP))

    def for_invocation(self, context: Any) -> Invocation:
        """What one invocation answers with: these same adapters and that invocation's own values."""
        return Invocation(self, context)


class Invocation:
    """The container as one invocation sees it: the process's adapters (shared, each built once)
    and the invocation's own Lambda context, which travels with the call instead of being written
    onto the shared container (the local stack's threads share one)."""

    def __init__(self, container: Container, context: Any) -> None:
        self._container = container
        self.context = context

    def __getattr__(self, name: str) -> Any:
        return getattr(self._container, name)

    def once(self, name: str, key: str, work: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
        """``work()``'s answer once per ``key``: a repeat gets the stored answer; None while another
        copy is still running it (its in-progress record lapses with this invocation)."""
        return self._container.idempotency.once(name, key, work, invocation=self.context)


_installed: Container | None = None


def install(built: Container) -> Container:
    """Make ``built`` the process's container: the local stack builds its own, once, with what it
    needs (the in-process invoker, a manifest folder), instead of changing one after the fact."""
    global _installed
    _installed = built
    container.cache_clear()
    return built


@lru_cache(maxsize=1)
def container() -> Container:
    """The process's container, built from the environment once (or the one installed)."""
    return _installed if _installed is not None else Container(settings())
