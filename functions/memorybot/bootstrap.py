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
    lambda_context: Any = None  # the invocation's context, when a handler has one (dedup timing)

    def __init__(self, config: Settings, **overrides: Any) -> None:
        """``overrides`` replace any property by name (the local stack and tests use this)."""
        self.settings = config
        self.__dict__.update(overrides)

    @property
    def scope_mode(self):
        return self.settings.memory_scope

    @cached_property
    def dynamodb_client(self) -> Any:
        from .adapters.dynamodb import dynamodb_client

        return dynamodb_client()

    @cached_property
    def memory_store(self):
        from .adapters.dynamodb import DynamoMemoryStore

        return DynamoMemoryStore(self.dynamodb_client, self.settings)

    @cached_property
    def message_store(self):
        from .adapters.dynamodb import DynamoMessageStore

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
        from .core.consolidation import InMemoryManifests

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
        )

    @cached_property
    def rollback(self):
        from .core.rollback import Rollback

        return Rollback(self.memory_store, self.run_store)

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

        return ReplyWriter(self.memory_store, self.chat_model, self.people_store, embeddings=self.embedding_model)

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

    def idempotency_store(self, worker: str):
        """One Powertools persistence layer per worker (it keeps per-function state)."""
        stores = self.__dict__.setdefault("_idempotency_stores", {})
        if worker not in stores:
            from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

            from .tables import DEDUP

            stores[worker] = DynamoDBPersistenceLayer(
                table_name=self.settings.table(DEDUP),
                key_attr=DEDUP.partition.name,
                expiry_attr=DEDUP.ttl_attribute or "expiration",
                boto3_client=self.dynamodb_client,
            )
        return stores[worker]

    def once(self, name: str, key: str, work: Callable[[], dict]) -> dict | None:
        """``work()``'s answer, once per ``key`` (Powertools idempotency on the dedup table, 7-day
        expiry): a repeat gets the stored answer; None while another copy is still running it."""
        from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
        from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError

        from .tables import DEDUP_TTL_SECONDS

        config = IdempotencyConfig(
            event_key_jmespath="key", raise_on_no_idempotency_key=True, expires_after_seconds=DEDUP_TTL_SECONDS
        )
        if self.lambda_context is not None:  # an in-progress record lapses with the invocation
            config.register_lambda_context(self.lambda_context)

        def run(job: dict) -> dict:
            return work()

        guarded = idempotent_function(
            data_keyword_argument="job",
            persistence_store=self.idempotency_store(name),
            config=config,
            key_prefix=f"memorybot.{name}",
        )(run)
        try:
            return guarded(job={"key": key})
        except IdempotencyAlreadyInProgressError:
            return None


@lru_cache(maxsize=1)
def container() -> Container:
    """The process's container, built from the environment once."""
    return Container(settings())
