"""The stack's configuration, read from CDK context (cdk.json or ``-c key=value``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any
from zoneinfo import ZoneInfoNotFoundError

from memorybot.config import DEFAULT_DISCORD_API_BASE, Settings, time_zone
from memorybot.core.record.catalog import Language
from memorybot.core.record.domain import ScopeMode

# The functions' own defaults are the single source for model ids and the ledger's read retention.
_DEFAULT_MODEL_ID: dict[str, Any] = {f.name: f.default for f in fields(Settings)}

SUPPORTED_PYTHON = ("3.12", "3.13", "3.14")
SUPPORTED_ARCHITECTURES = ("arm64", "x86_64")
# What the stack can wire without a secret in the environment.
DECISION_BACKENDS = ("bedrock", "http", "offline")
CHAT_BACKENDS = ("bedrock", "offline")
EMBEDDING_BACKENDS = ("bedrock", "offline", "none")  # none: relevance is lexical only
TITAN_EMBEDDING_DIMENSIONS = (256, 512, 1024)


@dataclass(frozen=True)
class StackConfig:
    stack_name: str = "MemoryBot"
    architecture: str = "arm64"
    python_version: str = "3.13"
    decision_model: str = "bedrock"
    chat_model: str = "bedrock"
    bedrock_decision_model_id: str = _DEFAULT_MODEL_ID["bedrock_decision_model_id"]
    bedrock_chat_model_id: str = _DEFAULT_MODEL_ID["bedrock_chat_model_id"]
    # Relevance (docs/relevance.md): the embedding model and its vector size.
    embedding_model: str = "bedrock"
    embedding_dimensions: int = _DEFAULT_MODEL_ID["embedding_dimensions"]
    bedrock_embedding_model_id: str = _DEFAULT_MODEL_ID["bedrock_embedding_model_id"]
    jev_url: str = ""
    discord_application_id: str = ""
    discord_api_base: str = DEFAULT_DISCORD_API_BASE
    fetch_channel_history: bool = False
    memory_scope: str = ScopeMode.GUILD.value  # guild: memories stay in their server; global: one profile everywhere
    diary_language: str = _DEFAULT_MODEL_ID["diary_language"].value  # the nightly diary's: ja (the design's) or en
    # The deployment's time zone (an IANA name): the dates the prompts, /memory history and a memory's
    # end are read in (MEMORYBOT_TIMEZONE), and the night's 03:00 (the schedule's time zone).
    timezone: str = _DEFAULT_MODEL_ID["timezone"]
    # Model prices for the estimated cost metric and memorybot eval, on top of the defaults
    # (MEMORYBOT_MODEL_PRICES: {"<model id>": [input, output]}, US dollars per million tokens).
    model_prices: str = ""
    secret_prefix: str = "memorybot"
    service_name: str = "memorybot"
    metrics_namespace: str = "MemoryBot"
    log_level: str = "INFO"
    log_retention_days: int = 30
    api_rate_limit: int = 10  # requests per second, whole API
    api_burst_limit: int = 20
    rollback_rate_limit: int = 1  # the admin route: slows guessing of the secret
    rollback_burst_limit: int = 2
    alarm_email: str = ""  # when set, alarms notify this address through an encrypted SNS topic
    # Model calls under a quota (see the README, "Model calls under a quota"): per function
    # instance, calls in flight and started per minute (0: no per-minute bound), and how long one
    # call keeps retrying throttles; the workers' reserved concurrency (0: none) caps the instances.
    model_max_in_flight: int = 32
    model_rpm: int = 0
    model_deadline_seconds: int = 60
    reply_reserved_concurrency: int = 0
    extraction_reserved_concurrency: int = 0
    # Personal data at rest (see the README): the tables that hold what people said and what is
    # remembered about them use a customer-managed KMS key instead of DynamoDB's AWS-owned key.
    encrypt_personal_data: bool = False
    # The nightly Distributed Map: speakers consolidated at once (size it to the model quota: each
    # runs up to model_max_in_flight calls), and the share of speakers whose step may fail even
    # its Catch before the execution fails.
    nightly_max_concurrency: int = 10
    nightly_tolerated_failure_percentage: int = 10
    # How long memory_log keeps read rows (DynamoDB TTL on them alone); 0 keeps them for ever.
    ledger_read_retention_days: int = _DEFAULT_MODEL_ID["ledger_read_retention_days"]

    def __post_init__(self) -> None:
        _check(self.architecture, SUPPORTED_ARCHITECTURES, "architecture")
        _check(self.python_version, SUPPORTED_PYTHON, "python_version")
        _check(self.decision_model, DECISION_BACKENDS, "decision_model")
        _check(self.chat_model, CHAT_BACKENDS, "chat_model")
        _check(self.embedding_model, EMBEDDING_BACKENDS, "embedding_model")
        if self.embedding_model == "bedrock" and self.embedding_dimensions not in TITAN_EMBEDDING_DIMENSIONS:
            raise ValueError(f"context embedding_dimensions must be one of {TITAN_EMBEDDING_DIMENSIONS}")
        _check(self.memory_scope, tuple(m.value for m in ScopeMode), "memory_scope")
        _check(self.diary_language, tuple(lang.value for lang in Language), "diary_language")
        try:
            time_zone(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"context timezone={self.timezone!r}: expected an IANA time zone (Asia/Tokyo, UTC...)"
            ) from None
        if not 1 <= self.nightly_max_concurrency <= 10000:
            raise ValueError("context nightly_max_concurrency must be between 1 and 10000")
        if not 0 <= self.nightly_tolerated_failure_percentage <= 100:
            raise ValueError("context nightly_tolerated_failure_percentage must be between 0 and 100")
        Settings.from_env({"MEMORYBOT_MODEL_PRICES": self.model_prices})  # refused here, not by each function
        if self.ledger_read_retention_days < 0:
            raise ValueError("context ledger_read_retention_days must be 0 (keep for ever) or a number of days")
        if self.decision_model == "http" and not self.jev_url:
            raise ValueError("decision_model=http needs the context value jev_url")

    @property
    def bedrock_model_ids(self) -> tuple[str, ...]:
        """The model ids the functions may invoke (only the backends set to bedrock)."""
        ids = []
        if self.decision_model == "bedrock":
            ids.append(self.bedrock_decision_model_id)
        if self.chat_model == "bedrock":
            ids.append(self.bedrock_chat_model_id)
        if self.embedding_model == "bedrock":
            ids.append(self.bedrock_embedding_model_id)
        return tuple(dict.fromkeys(ids))

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> StackConfig:
        """``get`` is ``node.try_get_context``; values from ``-c`` arrive as strings."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = get(f.name)
            if raw is None or raw == "":
                continue
            if f.type in ("int", int):
                values[f.name] = int(raw)
            elif f.type in ("bool", bool):
                values[f.name] = raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes")
            elif isinstance(raw, dict | list):  # an object in cdk.json (model_prices): its JSON
                values[f.name] = json.dumps(raw)
            else:
                values[f.name] = str(raw)
        return cls(**values)


def _check(value: str, allowed: tuple[str, ...], name: str) -> None:
    if value not in allowed:
        raise ValueError(f"context {name}={value!r}: expected one of {', '.join(allowed)}")
