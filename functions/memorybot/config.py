"""Configuration: every setting, read from the environment in one place, once.

Secrets are never in the environment when deployed: there the environment names
a Secrets Manager secret (``*_SECRET_NAME``) and ``Settings.secret`` reads it
through Powertools Parameters, cached. Locally the plain variables are used.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from . import tables
from .core.record.catalog import Language
from .core.record.terms import JST, ScopeMode

DEFAULT_DISCORD_API_BASE = "https://discord.com/api/v10"
SECRET_CACHE_SECONDS = 300
DEFAULT_TIMEZONE = "Asia/Tokyo"  # the design's 03:00 JST

# Estimated cost: US dollars per million input and output tokens, by model id (on-demand list
# prices when written; check the provider's page). MEMORYBOT_MODEL_PRICES adds models or replaces
# these: {"<model id>": [input, output], ...}. A Bedrock inference profile ("us.<model id>") is
# priced as its base model.
DEFAULT_MODEL_PRICES: Mapping[str, tuple[float, float]] = {
    "anthropic.claude-3-haiku-20240307-v1:0": (0.25, 1.25),  # the default Bedrock models
    "amazon.titan-embed-text-v2:0": (0.02, 0.0),
    "gpt-4o-mini": (0.15, 0.60),  # the default OpenAI-compatible models
    "text-embedding-3-small": (0.02, 0.0),
}


# Read once per process and never compared; no ``__repr__`` (it would print the plain secrets), and
# none of the generated methods a 40-field class costs every cold start to build.
@dataclass(frozen=True, eq=False, repr=False)
class Settings:
    """Every setting of a function, read from the environment once."""

    table_names: Mapping[str, str]
    decision_model: str = "offline"  # http | bedrock | openai | offline
    chat_model: str = "offline"  # bedrock | openai | offline
    model_timeout_seconds: float = 8.0
    model_concurrency: int = 10
    nightly_speaker_concurrency: int = 32  # speakers consolidated at once (x model_concurrency threads)
    # The process's model limiter (adapters/limiter.py): requests open at once (HTTP pools are
    # sized to it) and started per minute (0: no per-minute bound); and how long one call may
    # keep retrying throttles before it is "not yet" (ModelUnavailable). Server errors and
    # timeouts get a few quick retries only (adapters/retry.py).
    model_max_in_flight: int = 32
    model_rpm: int = 0
    model_deadline_seconds: float = 60.0
    # Lambda's retries of a failed asynchronous invocation (the stack sets both from one constant):
    # a worker whose model stayed unavailable knows from it when its last attempt has come.
    async_retries: int = 2
    # How long the ledger keeps read rows (two per turn), in days; 0 keeps them for ever. They
    # expire through DynamoDB TTL; change rows never carry the attribute (docs/ledger-retention.md).
    ledger_read_retention_days: int = 400
    metrics_namespace: str = "MemoryBot"
    service_name: str = "memorybot"  # POWERTOOLS_SERVICE_NAME: the metrics' service dimension
    # The metrics' function dimension: the function's name in the stack (infra/function_specs.py).
    function_name: str = "local"
    # USD per million input and output tokens, by model id (DEFAULT_MODEL_PRICES, then the
    # environment's MEMORYBOT_MODEL_PRICES): what an estimated cost multiplies tokens by.
    model_prices: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_MODEL_PRICES))
    jev_url: str = ""
    openai_base_url: str = "https://api.openai.com/v1"
    openai_model: str = "gpt-4o-mini"
    bedrock_decision_model_id: str = "anthropic.claude-3-haiku-20240307-v1:0"
    bedrock_chat_model_id: str = "anthropic.claude-3-haiku-20240307-v1:0"
    # Relevance (docs/relevance.md): none (lexical only) | offline | bedrock | openai, and the
    # vector size: 256 keeps a stored vector at 261 bytes, and so the whole-profile read cheap.
    embedding_model: str = "offline"
    embedding_dimensions: int = 256
    bedrock_embedding_model_id: str = "amazon.titan-embed-text-v2:0"
    openai_embedding_model: str = "text-embedding-3-small"
    discord_api_base: str = DEFAULT_DISCORD_API_BASE
    discord_api_base_configured: bool = False  # the local stack uses its recorder when not
    dynamodb_endpoint: str = ""  # AWS_ENDPOINT_URL_DYNAMODB: the local stack starts moto when empty
    discord_application_id: str = ""
    fetch_channel_history: bool = False
    # guild: what is learned in a server stays there (a DM is its own scope); global: one
    # profile per person everywhere (the design's single-server behaviour).
    memory_scope: ScopeMode = ScopeMode.GUILD
    # The nightly diary's language: the design's servers talk Japanese (ja | en).
    diary_language: Language = Language.JA
    reply_function_name: str = ""
    extraction_function_name: str = ""
    # The nightly run's manifest bucket (deployed); without one, manifests are kept in the process.
    manifest_bucket: str = ""
    # The deployment's time zone (an IANA name): the dates and times the prompts and
    # /memory history show. The nightly schedule stays the design's 03:00 JST.
    timezone: str = DEFAULT_TIMEZONE
    # Servers' own settings (/memory-settings, docs/admins.md): how long a warm function keeps a
    # server's settings (a change takes effect within this, at most a minute; 0: read every time, as
    # the local stack does); the model cost show estimates per request (USD); and how many servers'
    # own diaries one night writes at most (each one model call and one post, on top of the run's bound).
    server_settings_cache_seconds: float = 30.0
    # A warm function's copy of the large profiles' selection indexes it read (adapters/index_cache.py):
    # at most this many bytes in the process (about 8.6 KB a memory with a 256-dimension vector: a
    # profile of 2,000 takes about 17 MB); 0 keeps none (every read of a large profile reads its index).
    index_cache_bytes: int = 64 * 2**20
    model_request_cost_usd: float = 0.0005
    server_diaries_per_night: int = 50
    # Plain values (local) or the names of Secrets Manager secrets (deployed).
    plain_secrets: Mapping[str, str] = field(default_factory=dict)
    secret_names: Mapping[str, str] = field(default_factory=dict)

    @property
    def zone(self) -> tzinfo:
        return time_zone(self.timezone)

    def price(self, model_id: str) -> tuple[float, float] | None:
        """USD per million (input, output) tokens of ``model_id`` (an inference profile's: its base
        model's); None when no price is set for it."""
        return price_in(self.model_prices, model_id)

    def table(self, spec: tables.TableSpec) -> str:
        return self.table_names[spec.logical_name]

    def secret(self, key: str) -> str:
        """``key`` is one of SECRET_KEYS or MODEL_SECRET_KEYS. Empty string when not configured."""
        if self.plain_secrets.get(key):
            return self.plain_secrets[key]
        name = self.secret_names.get(key)
        if not name:
            return ""
        from aws_lambda_powertools.utilities import parameters  # deployed path only

        return str(parameters.get_secret(name, max_age=SECRET_CACHE_SECONDS)).strip()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        prefix = env.get("MEMORYBOT_TABLE_PREFIX", "")
        return cls(
            table_names={
                spec.logical_name: env.get(spec.env_var) or f"{prefix}{spec.logical_name}" for spec in tables.ALL_TABLES
            },
            decision_model=env.get("MEMORYBOT_DECISION_MODEL", "offline"),
            chat_model=env.get("MEMORYBOT_CHAT_MODEL", "offline"),
            model_timeout_seconds=float(env.get("MEMORYBOT_MODEL_TIMEOUT", "8")),
            model_concurrency=int(env.get("MEMORYBOT_MODEL_CONCURRENCY", "10")),
            nightly_speaker_concurrency=int(env.get("MEMORYBOT_NIGHTLY_CONCURRENCY", cls.nightly_speaker_concurrency)),
            model_max_in_flight=int(env.get("MEMORYBOT_MODEL_MAX_IN_FLIGHT", cls.model_max_in_flight)),
            model_rpm=int(env.get("MEMORYBOT_MODEL_RPM", cls.model_rpm)),
            model_deadline_seconds=float(env.get("MEMORYBOT_MODEL_DEADLINE", cls.model_deadline_seconds)),
            async_retries=int(env.get("MEMORYBOT_ASYNC_RETRIES", cls.async_retries)),
            ledger_read_retention_days=_non_negative(
                "MEMORYBOT_LEDGER_READ_RETENTION_DAYS",
                int(env.get("MEMORYBOT_LEDGER_READ_RETENTION_DAYS", cls.ledger_read_retention_days)),
            ),
            metrics_namespace=env.get("POWERTOOLS_METRICS_NAMESPACE") or cls.metrics_namespace,
            service_name=env.get("POWERTOOLS_SERVICE_NAME") or cls.service_name,
            function_name=env.get("MEMORYBOT_FUNCTION") or cls.function_name,
            model_prices={**DEFAULT_MODEL_PRICES, **_model_prices(env.get("MEMORYBOT_MODEL_PRICES", ""))},
            jev_url=env.get("JEV_URL", "").rstrip("/"),
            openai_base_url=env.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/"),
            openai_model=env.get("OPENAI_MODEL", "gpt-4o-mini"),
            bedrock_decision_model_id=env.get("BEDROCK_DECISION_MODEL_ID", cls.bedrock_decision_model_id),
            bedrock_chat_model_id=env.get("BEDROCK_CHAT_MODEL_ID", cls.bedrock_chat_model_id),
            embedding_model=env.get("MEMORYBOT_EMBEDDING_MODEL", cls.embedding_model),
            embedding_dimensions=int(env.get("MEMORYBOT_EMBEDDING_DIMENSIONS", cls.embedding_dimensions)),
            bedrock_embedding_model_id=env.get("BEDROCK_EMBEDDING_MODEL_ID", cls.bedrock_embedding_model_id),
            openai_embedding_model=env.get("OPENAI_EMBEDDING_MODEL", cls.openai_embedding_model),
            discord_api_base=env.get("DISCORD_API_BASE", DEFAULT_DISCORD_API_BASE).rstrip("/"),
            discord_api_base_configured=bool(env.get("DISCORD_API_BASE")),
            dynamodb_endpoint=env.get("AWS_ENDPOINT_URL_DYNAMODB", ""),
            discord_application_id=env.get("DISCORD_APPLICATION_ID", ""),
            fetch_channel_history=env.get("MEMORYBOT_FETCH_CHANNEL_HISTORY", "").lower() in ("1", "true", "yes"),
            memory_scope=_scope_mode(env.get("MEMORYBOT_MEMORY_SCOPE", ScopeMode.GUILD.value)),
            diary_language=_diary_language(env.get("MEMORYBOT_DIARY_LANGUAGE", Language.JA.value)),
            reply_function_name=env.get("REPLY_FUNCTION_NAME", ""),
            extraction_function_name=env.get("EXTRACTION_FUNCTION_NAME", ""),
            manifest_bucket=env.get("MEMORYBOT_MANIFEST_BUCKET", ""),
            timezone=_timezone(env.get("MEMORYBOT_TIMEZONE", "").strip() or DEFAULT_TIMEZONE),
            server_settings_cache_seconds=_bounded(
                "MEMORYBOT_SERVER_SETTINGS_CACHE_SECONDS",
                float(env.get("MEMORYBOT_SERVER_SETTINGS_CACHE_SECONDS", cls.server_settings_cache_seconds)),
                60,
            ),
            index_cache_bytes=int(
                _bounded(
                    "MEMORYBOT_INDEX_CACHE_MB",
                    float(env.get("MEMORYBOT_INDEX_CACHE_MB", cls.index_cache_bytes / 2**20)),
                    4096,
                )
                * 2**20
            ),
            model_request_cost_usd=float(env.get("MEMORYBOT_MODEL_REQUEST_COST_USD", cls.model_request_cost_usd)),
            server_diaries_per_night=int(
                _bounded(
                    "MEMORYBOT_SERVER_DIARIES_PER_NIGHT",
                    int(env.get("MEMORYBOT_SERVER_DIARIES_PER_NIGHT", cls.server_diaries_per_night)),
                    1000,
                )
            ),
            plain_secrets={k: env.get(k, "") for k in SECRET_KEYS + MODEL_SECRET_KEYS},
            secret_names={k: env.get(f"{k}_SECRET_NAME", "") for k in SECRET_KEYS + MODEL_SECRET_KEYS},
        )


def _non_negative(name: str, value: int) -> int:
    if value < 0:
        raise ValueError(f"{name} must be 0 (keep for ever) or a number of days")
    return value


def _bounded(name: str, value: float, most: float) -> float:
    if not 0 <= value <= most:
        raise ValueError(f"{name} must be between 0 and {most:g}")
    return value


def price_in(prices: Mapping[str, tuple[float, float]], model_id: str) -> tuple[float, float] | None:
    """``model_id``'s price in ``prices`` (an inference profile's: its base model's), or None."""
    found = prices.get(model_id)
    base = inference_profile_base(model_id)
    if found is None and base is not None:
        found = prices.get(base)
    return found


def estimated_cost(price: tuple[float, float], input_tokens: int, output_tokens: int) -> float:
    """US dollars for these tokens at ``price`` (USD per million input and output tokens)."""
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000


def _model_prices(text: str) -> dict[str, tuple[float, float]]:
    """``{"<model id>": [input, output], ...}``: USD per million tokens, two non-negative numbers."""
    if not text.strip():
        return {}
    problem = (
        'MEMORYBOT_MODEL_PRICES must be a JSON object {"<model id>": [input, output], ...} of USD per million '
        "tokens (non-negative numbers)"
    )
    try:
        given = json.loads(text)
    except ValueError:
        raise ValueError(problem) from None
    if not isinstance(given, dict):
        raise ValueError(problem)
    prices = {}
    for model_id, pair in given.items():
        numbers = pair if isinstance(pair, list) and len(pair) == 2 else []
        if not numbers or not all(
            isinstance(n, (int, float)) and not isinstance(n, bool) and math.isfinite(n) and n >= 0 for n in numbers
        ):
            raise ValueError(f"{problem}; {model_id!r} is not")
        prices[str(model_id)] = (float(numbers[0]), float(numbers[1]))
    return prices


def time_zone(name: str) -> tzinfo:
    """The zone named ``name``; Japan's and UTC also without a time-zone database (no DST in either)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        fixed = {DEFAULT_TIMEZONE: JST, "UTC": UTC, "Etc/UTC": UTC}.get(name)
        if fixed is None:
            raise
        return fixed


def _timezone(name: str) -> str:
    try:
        time_zone(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"MEMORYBOT_TIMEZONE must be an IANA time zone (Asia/Tokyo, UTC...), not {name!r}") from None
    return name


def _scope_mode(value: str) -> ScopeMode:
    try:
        return ScopeMode(value.strip().lower())
    except ValueError:
        choices = ", ".join(m.value for m in ScopeMode)
        raise ValueError(f"MEMORYBOT_MEMORY_SCOPE must be one of: {choices}") from None


def _diary_language(value: str) -> Language:
    try:
        return Language(value.strip().lower())
    except ValueError:
        choices = ", ".join(lang.value for lang in Language)
        raise ValueError(f"MEMORYBOT_DIARY_LANGUAGE must be one of: {choices}") from None


# A Bedrock cross-region inference profile is named "<geography>.<base model id>".
INFERENCE_PROFILE_GEOGRAPHIES = ("us", "eu", "apac", "jp", "au", "ca", "us-gov", "global")


def inference_profile_base(model_id: str) -> str | None:
    """The base model of a cross-region inference profile id; None for a model id or an ARN."""
    geography, _, base = model_id.partition(".")
    if model_id.startswith("arn:") or geography not in INFERENCE_PROFILE_GEOGRAPHIES or not base:
        return None
    return base


# The stack creates these three secrets.
SECRET_KEYS = ("DISCORD_PUBLIC_KEY", "DISCORD_BOT_TOKEN", "MEMORYBOT_ADMIN_SECRET")
# Only needed with the http or openai model backends; read the same way (plain locally,
# ``<KEY>_SECRET_NAME`` when deployed), never stored in the template.
MODEL_SECRET_KEYS = ("JEV_API_KEY", "OPENAI_API_KEY")


@lru_cache(maxsize=1)
def settings() -> Settings:
    """The process's settings, read once (per Lambda container)."""
    return Settings.from_env()
