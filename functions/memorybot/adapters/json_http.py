"""One pooled, thread-safe httpx client for a JSON API (the Jev and OpenAI-compatible backends)."""

from __future__ import annotations

import httpx


def json_client(
    base_url: str,
    *,
    timeout_seconds: float,
    api_key: str = "",
    max_connections: int = 20,
    transport: httpx.BaseTransport | None = None,
) -> httpx.Client:
    """Bearer auth when a key is set; every call bounded by ``timeout_seconds``; as many pooled
    connections as the extraction runs model calls at once."""
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
