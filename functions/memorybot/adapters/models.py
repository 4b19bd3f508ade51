"""Choosing the model backends from configuration.

``MEMORYBOT_DECISION_MODEL``: http | bedrock | openai | offline.
``MEMORYBOT_CHAT_MODEL``: bedrock | openai | offline (http is Jev's contract: decisions only).
``MEMORYBOT_EMBEDDING_MODEL``: bedrock | openai | offline | none (none: relevance is lexical only).

Each backend module is imported inside its branch, so a function that never talks to a
model (or uses the offline stand-ins) never imports httpx or boto3.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Protocol, TypeVar

from ..config import Settings
from ..core.record.ports import ChatModel, DecisionModel, EmbeddingModel


class _DatedModel(Protocol):
    zone: tzinfo | None


M = TypeVar("M", bound=_DatedModel)

DECISION_BACKENDS = ("http", "bedrock", "openai", "offline")
CHAT_BACKENDS = ("bedrock", "openai", "offline")
EMBEDDING_BACKENDS = ("bedrock", "openai", "offline", "none")


def _dated(model: M, settings: Settings) -> M:
    """An LLM backend whose prompts show dates in the deployment's time zone."""
    model.zone = settings.zone
    return model


def _kind(value: str) -> str:
    return (value or "").strip().lower()


def build_decision_model(settings: Settings) -> DecisionModel:
    kind = _kind(settings.decision_model)
    if kind == "http":
        from .jev_http import JevHttpDecisionModel

        return JevHttpDecisionModel.from_settings(settings)
    if kind == "bedrock":
        from .bedrock import BedrockConverse, BedrockDecisionModel

        return _dated(
            BedrockDecisionModel(BedrockConverse.from_settings(settings, settings.bedrock_decision_model_id)), settings
        )
    if kind == "openai":
        from .openai_chat import OpenAICompatibleClient, OpenAIDecisionModel

        return _dated(OpenAIDecisionModel(OpenAICompatibleClient.from_settings(settings)), settings)
    if kind == "offline":
        from .offline import OfflineDecisionModel

        return OfflineDecisionModel()
    raise ValueError(
        f"unknown MEMORYBOT_DECISION_MODEL {settings.decision_model!r}: expected one of {', '.join(DECISION_BACKENDS)}"
    )


def build_chat_model(settings: Settings) -> ChatModel:
    kind = _kind(settings.chat_model)
    if kind == "bedrock":
        from .bedrock import BedrockChatModel, BedrockConverse

        return _dated(
            BedrockChatModel(BedrockConverse.from_settings(settings, settings.bedrock_chat_model_id)), settings
        )
    if kind == "openai":
        from .openai_chat import OpenAIChatModel, OpenAICompatibleClient

        return _dated(OpenAIChatModel(OpenAICompatibleClient.from_settings(settings)), settings)
    if kind == "offline":
        from .offline import OfflineChatModel

        return _dated(OfflineChatModel(), settings)  # its plans' ends are days in the deployment's zone
    if kind == "http":
        raise ValueError("MEMORYBOT_CHAT_MODEL cannot be 'http': the Jev service only decides, it does not write")
    raise ValueError(
        f"unknown MEMORYBOT_CHAT_MODEL {settings.chat_model!r}: expected one of {', '.join(CHAT_BACKENDS)}"
    )


def build_embedding_model(settings: Settings) -> EmbeddingModel | None:
    """The configured embedding model; None for ``none`` (selection is then lexical only)."""
    kind = _kind(settings.embedding_model)
    if kind == "none":
        return None
    if kind == "bedrock":
        from .embeddings import BedrockTitanEmbeddings

        return BedrockTitanEmbeddings.from_settings(settings)
    if kind == "openai":
        from .embeddings import OpenAIEmbeddings

        return OpenAIEmbeddings.from_settings(settings)
    if kind == "offline":
        from .embeddings_offline import OfflineEmbeddingModel

        return OfflineEmbeddingModel(settings.embedding_dimensions)
    raise ValueError(
        f"unknown MEMORYBOT_EMBEDDING_MODEL {settings.embedding_model!r}: "
        f"expected one of {', '.join(EMBEDDING_BACKENDS)}"
    )
