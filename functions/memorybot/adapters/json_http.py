"""One pooled, thread-safe httpx client for a JSON API (the Jev and OpenAI-compatible backends),
and how those two classify an HTTP attempt for the shared retry policy (``retry.py``)."""

from __future__ import annotations

from typing import Any

import httpx

from .retry import Retryable, retry_after_seconds

# Throttled, or a server or gateway failing for now: asked again (Retry-After honoured).
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})


def json_client(
    base_url: str,
    *,
    timeout_seconds: float,
    api_key: str = "",
    max_connections: int = 20,
    transport: httpx.BaseTransport | None = None,
) -> httpx.Client:
    """Bearer auth when a key is set; every call bounded by ``timeout_seconds``; as many pooled
    connections as the process's limiter lets model calls be in flight (no hidden cap below it)."""
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return httpx.Client(
        base_url=base_url.rstrip("/"),
        headers=headers,
        timeout=httpx.Timeout(timeout_seconds),
        limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        transport=transport,
    )


def post_attempt(client: httpx.Client, path: str, body: dict[str, Any], *, timeout: float, what: str) -> httpx.Response:
    """One POST. Transport errors, timeouts and RETRYABLE_STATUSES raise ``Retryable``; any other
    response is returned for the backend to judge. Reasons name the path and status only."""
    try:
        response = client.post(path, json=body, timeout=timeout)
    except httpx.TimeoutException as exc:
        raise Retryable(f"{what}: timed out") from exc
    except httpx.TransportError as exc:
        raise Retryable(f"{what}: {type(exc).__name__}") from exc
    if response.status_code in RETRYABLE_STATUSES:
        raise Retryable(f"{what}: HTTP {response.status_code}", retry_after_seconds(response.headers))
    return response
