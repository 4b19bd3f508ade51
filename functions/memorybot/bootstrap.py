"""The composition root: adapters are wired here, once per process (Lambda container).

Each dependency is built on first use, so a function imports only the adapters it
touches (the interactions function must stay lean): the ports and use cases are named for the
type checker only (under TYPE_CHECKING), and each provider imports its adapter when first asked.
Every provider returns its port, and every override is a keyword argument of that port's type
(``tests/typecheck/container_types.py``, checked by mypy in CI, holds it).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from .config import Settings, settings

if TYPE_CHECKING:
    from datetime import tzinfo

    from .core.night.consolidation import Consolidator
    from .core.record.ports import (
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
        Metrics,
        PeopleStore,
        RememberedMessages,
        RunStore,
    )
    from .core.record.terms import ScopeMode
    from .core.rights.erasure import Erasure
    from .core.rights.importing import Importer
    from .core.rights.rollback import Rollback
    from .core.rights.servers import ServerSettings, ServerStore
    from .core.turn.extraction import Extractor
    from .core.turn.reply import ReplyWriter
    from .discord.guilds import GuildNames
    from .discord.signature import Verifier

# botocore's low-level DynamoDB client: the project installs no type stubs for it.
DynamoDBClient = Any


class Container:
    """Built once per process and not changed afterwards; per-invocation values travel with the
    call (``for_invocation``)."""

    def __init__(
        self,
        config: Settings,
        *,
        dynamodb_client: DynamoDBClient = None,
        memory_store: MemoryStore | None = None,
        message_store: MessageStore | None = None,
        people_store: PeopleStore | None = None,
        run_store: RunStore | None = None,
        decision_model: DecisionModel | None = None,
        chat_model: ChatModel | None = None,
        embedding_model: EmbeddingModel | None = None,
        manifest_store: ManifestStore | None = None,
        invoker: AsyncInvoker | None = None,
        discord: DiscordApi | None = None,
        discord_interactive: DiscordApi | None = None,
        discord_webhooks: DiscordApi | None = None,
        signature_verifier: Verifier | None = None,
        idempotency: Idempotency | None = None,
        unavailable_attempts: AttemptCounter | None = None,
        server_store: ServerStore | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """Each keyword given takes the place of the provider of the same name (the local stack and
        the tests use them); one not given (None) is built from ``config`` on first use. The use
        cases are always built here, from whatever the stores and models are."""
        self.settings = config
        given = {
            "dynamodb_client": dynamodb_client,
            "memory_store": memory_store,
            "message_store": message_store,
            "people_store": people_store,
            "run_store": run_store,
            "decision_model": decision_model,
            "chat_model": chat_model,
            "embedding_model": embedding_model,
            "manifest_store": manifest_store,
            "invoker": invoker,
            "discord": discord,
            "discord_interactive": discord_interactive,
            "discord_webhooks": discord_webhooks,
            "signature_verifier": signature_verifier,
            "idempotency": idempotency,
            "unavailable_attempts": unavailable_attempts,
            "server_store": server_store,
            "metrics": metrics,
        }
        # A cached property reads the instance's own value first: an override is its first build.
        self.__dict__.update({name: value for name, value in given.items() if value is not None})

    @property
    def scope_mode(self) -> ScopeMode:
        return self.settings.memory_scope

    @property
    def zone(self) -> tzinfo:
        return self.settings.zone

    @cached_property
    def metrics(self) -> Metrics:
        """The process's metrics (CloudWatch's embedded metric format on stdout), written out by
        each handler when its invocation ends; Powertools is imported by the first flush only."""
        from .adapters.metrics import metrics_for

        return metrics_for(self.settings)

    @cached_property
    def dynamodb_client(self) -> DynamoDBClient:
        from .adapters.dynamodb_client import dynamodb_client

        return dynamodb_client()

    @cached_property
    def memory_store(self) -> MemoryStore:
        from .adapters.dynamodb_memories import DynamoMemoryStore

        return DynamoMemoryStore(self.dynamodb_client, self.settings)

    @property
    def remembered_messages(self) -> RememberedMessages:
        """The memory store in its role of the messages "Remember this" took in (claims)."""
        return self.memory_store

    @cached_property
    def message_store(self) -> MessageStore:
        from .adapters.dynamodb_messages import DynamoMessageStore

        return DynamoMessageStore(self.dynamodb_client, self.settings)

    @cached_property
    def people_store(self) -> PeopleStore:
        from .adapters.dynamodb_people import DynamoPeopleStore

        return DynamoPeopleStore(self.dynamodb_client, self.settings)

    @cached_property
    def run_store(self) -> RunStore:
        from .adapters.dynamodb_runs import DynamoRunStore

        return DynamoRunStore(self.dynamodb_client, self.settings)

    @cached_property
    def server_store(self) -> ServerStore:
        """Each server's settings (/memory-settings), their ledger and the server's counters."""
        from .adapters.dynamodb_servers import DynamoServerStore
        from .tables import SERVERS

        return DynamoServerStore(
            self.dynamodb_client,
            self.settings.table(SERVERS),
            cache_seconds=self.settings.server_settings_cache_seconds,
        )

    @cached_property
    def decision_model(self) -> DecisionModel:
        from .adapters.models import build_decision_model

        return build_decision_model(self.settings)

    @cached_property
    def chat_model(self) -> ChatModel:
        from .adapters.models import build_chat_model

        return build_chat_model(self.settings)

    @cached_property
    def embedding_model(self) -> EmbeddingModel | None:
        """None when MEMORYBOT_EMBEDDING_MODEL is none: relevance is then lexical only."""
        from .adapters.models import build_embedding_model

        return build_embedding_model(self.settings)

    @cached_property
    def extractor(self) -> Extractor:
        from .core.turn.extraction import Extractor

        return Extractor(
            self.memory_store,
            self.decision_model,
            self.chat_model,
            concurrency=self.settings.model_concurrency,
            embeddings=self.embedding_model,
            people=self.people_store,
            zone=self.settings.zone,
        )

    @cached_property
    def manifest_store(self) -> ManifestStore:
        """S3 deployed; otherwise kept in this process (the local stack wires a folder instead)."""
        if self.settings.manifest_bucket:
            from .adapters.manifests import S3Manifests, s3_client

            return S3Manifests(s3_client(), self.settings.manifest_bucket)
        from .adapters.manifests import InMemoryManifests

        return InMemoryManifests()

    @cached_property
    def consolidator(self) -> Consolidator:
        from .core.night.consolidation import Consolidator

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
            diary_language=self.settings.diary_language,
            servers=self.server_store,
            post=self._post_diary,
            server_diaries=self.settings.server_diaries_per_night,
            zone=self.settings.zone,
            overnight=self.memory_store,
        )

    def _post_diary(self, channel_id: str, line: str) -> str:
        """A server's diary line in its channel, escaped (the Discord client, with the bot token, is
        built only when a diary is posted)."""
        from .discord.formats import markdown_escaped

        return self.discord.send_message(channel_id, markdown_escaped(line))

    @cached_property
    def rollback(self) -> Rollback:
        from .core.rights.rollback import Rollback

        return Rollback(self.memory_store, self.run_store, people=self.people_store)

    @cached_property
    def erasure(self) -> Erasure:
        from .core.rights.erasure import Erasure

        return Erasure(
            self.memory_store,
            self.message_store,
            self.people_store,
            overnight=self.memory_store,
            servers=self.server_store,
        )

    @cached_property
    def importer(self) -> Importer:
        from .core.rights.importing import Importer

        return Importer(self.memory_store, self.settings.memory_scope)

    @cached_property
    def reply_writer(self) -> ReplyWriter:
        from .core.turn.reply import ReplyWriter

        return ReplyWriter(
            self.memory_store, self.chat_model, self.people_store, embeddings=self.embedding_model, zone=self.zone
        )

    # ---- the Discord front door and the workers

    @cached_property
    def signature_verifier(self) -> Verifier:
        from .discord.signature import Verifier

        return Verifier(self.settings.secret("DISCORD_PUBLIC_KEY"))

    @cached_property
    def invoker(self) -> AsyncInvoker:
        from .adapters.invoker import LambdaInvoker, lambda_client

        names = {"reply": self.settings.reply_function_name, "extraction": self.settings.extraction_function_name}
        return LambdaInvoker(names, lambda_client)

    @cached_property
    def discord(self) -> DiscordApi:
        """For the workers: patient (timeouts of 10 s, 429s retried)."""
        from .adapters.discord_rest import DiscordRest

        return DiscordRest(self.settings.discord_api_base, self.settings.secret("DISCORD_BOT_TOKEN"))

    @cached_property
    def discord_interactive(self) -> DiscordApi:
        """For answers inside Discord's 3 s: short timeouts, no waiting out a 429."""
        from .adapters.discord_rest import DiscordRest

        return DiscordRest(
            self.settings.discord_api_base, self.settings.secret("DISCORD_BOT_TOKEN"), timeout=1.0, max_attempts=1
        )

    @cached_property
    def discord_webhooks(self) -> DiscordApi:
        """For a worker that only fills in interaction answers: no bot token (the webhooks need none)."""
        from .adapters.discord_rest import DiscordRest

        return DiscordRest(self.settings.discord_api_base, None)

    @cached_property
    def guild_names(self) -> GuildNames:
        """Servers' names for the answers, each read once (GET /guilds/{id}) inside the 3 s."""
        from .discord.guilds import GuildNames

        return GuildNames(self.discord_interactive)

    @cached_property
    def unavailable_attempts(self) -> AttemptCounter:
        """Counts a worker's attempts that found the model unavailable (see adapters/attempts.py)."""
        from .adapters.attempts import DynamoAttemptCounter
        from .tables import DEDUP

        return DynamoAttemptCounter(self.dynamodb_client, self.settings.table(DEDUP))

    @cached_property
    def idempotency(self) -> Idempotency:
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
    onto the shared container (the local stack's threads share one). It offers what answering an
    interaction needs (``discord.interactions.Dependencies``) and no more."""

    def __init__(self, container: Container, context: Any) -> None:
        self._container = container
        self.context = context
        self._servers: dict[str, ServerSettings] = {}

    # The invocation is also where its answers are given and its server's settings (the roles
    # ``Places`` and ``ServerDeps`` of ``Dependencies``): the same object, seen through each role.
    @property
    def places(self) -> Invocation:
        return self

    @property
    def servers(self) -> Invocation:
        return self

    @property
    def scope_mode(self) -> ScopeMode:
        return self._container.scope_mode

    @property
    def zone(self) -> tzinfo:
        return self._container.zone

    @property
    def signature_verifier(self) -> Verifier:
        return self._container.signature_verifier

    @property
    def memory_store(self) -> MemoryStore:
        return self._container.memory_store

    @property
    def remembered_messages(self) -> RememberedMessages:
        return self._container.remembered_messages

    @property
    def message_store(self) -> MessageStore:
        return self._container.message_store

    @property
    def people_store(self) -> PeopleStore:
        return self._container.people_store

    @property
    def invoker(self) -> AsyncInvoker:
        return self._container.invoker

    @property
    def discord_interactive(self) -> DiscordApi:
        return self._container.discord_interactive

    @property
    def guild_names(self) -> GuildNames:
        return self._container.guild_names

    @property
    def server_store(self) -> ServerStore:
        return self._container.server_store

    @property
    def model_request_cost_usd(self) -> float:
        return self._container.settings.model_request_cost_usd

    def server_settings(self, guild_id: str) -> ServerSettings:
        """A server's settings, read at most once in this invocation (the store may hold them briefly)."""
        if guild_id not in self._servers:
            self._servers[guild_id] = self._container.server_store.get(guild_id)
        return self._servers[guild_id]

    @property
    def metrics(self) -> Metrics:
        return self._container.metrics

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
