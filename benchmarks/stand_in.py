"""The real model adapters as every model-bound benchmark uses them: the OpenAI-compatible
backend over HTTP to a loopback stand-in, its pool sized to the limiter, the shared retry policy."""

from __future__ import annotations

from memorybot.adapters.limiter import ModelCallLimiter
from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAICompatibleClient, OpenAIDecisionModel
from memorybot.adapters.retry import Retrier, RetryPolicy


def stand_in_client(url: str, limiter: ModelCallLimiter, policy: RetryPolicy | None = None) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(
        url, "stand-in", timeout_seconds=8.0, max_connections=limiter.max_in_flight, retrier=Retrier(policy, limiter)
    )


def stand_in_models(client: OpenAICompatibleClient) -> tuple[OpenAIDecisionModel, OpenAIChatModel]:
    """Jev and the chat model over one client (one model, one quota)."""
    return OpenAIDecisionModel(client), OpenAIChatModel(client)
