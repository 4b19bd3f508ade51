"""One pooled, thread-safe JSON endpoint over httpx's transport (the Jev, OpenAI-compatible and
embeddings backends), and how those classify an HTTP attempt for the shared retry policy
(``retry.py``)."""

from __future__ import annotations

import json
import urllib.request
from typing import TYPE_CHECKING, Any, Required, TypedDict, Unpack
from urllib.parse import urlsplit

import httpx

from .retry import Retrier, Throttled, Transient, retrier_for, retry_after_seconds

if TYPE_CHECKING:
    from ..config import Settings

THROTTLE_STATUS = 429  # "slow down": not yet
# A server or gateway failing: a few quick retries, then the call has failed; with a
# Retry-After the server says when to come back, which makes it a throttle.
SERVER_ERROR_STATUSES = frozenset({500, 502, 503, 504})


class JsonEndpoint:
    """A JSON API's pooled connections, posted to through httpx's transport directly.

    A model call needs nothing ``httpx.Client`` adds on top of its transport (cookies, redirects,
    auth flows, event hooks, URL merging), and that layer cost a third of a call's CPU (0.59 ->
    0.41 ms a completion over loopback): the ten rewrites of a turn are sent under one
    interpreter lock, so each request's CPU delays the next. What the client read from the
    environment is kept: the proxy (``environment_proxy``) and, in the transport itself,
    SSL_CERT_FILE / SSL_CERT_DIR. The pool, the timeouts and the exceptions are httpx's.
    Thread-safe."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str = "",
        max_connections: int = 20,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        # What httpx's client sent by default, beside the JSON's own headers: answers (an
        # embedding's vectors above all) may come compressed.
        headers = [
            ("Accept", "application/json"),
            ("Accept-Encoding", "gzip, deflate"),
            ("Content-Type", "application/json"),
        ]
        if api_key:
            headers.append(("Authorization", f"Bearer {api_key}"))
        self._headers = headers
        # As many pooled connections as the process's limiter lets model calls be in flight
        # (no hidden cap below it).
        self._transport = transport or httpx.HTTPTransport(
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            proxy=environment_proxy(self._base_url),
        )

    def post(self, path: str, body: dict[str, Any], *, timeout: float) -> httpx.Response:
        """The whole response to one POST of ``body`` as JSON; httpx's exceptions on failure."""
        request = httpx.Request(
            "POST",
            self._base_url + path,
            headers=self._headers,
            content=json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(),
            extensions={"timeout": httpx.Timeout(timeout).as_dict()},
        )
        response = self._transport.handle_request(request)
        try:
            response.read()
        finally:
            response.close()
        return response

    def close(self) -> None:
        self._transport.close()


def environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url``: HTTPS_PROXY or HTTP_PROXY by its scheme, else
    ALL_PROXY, unless NO_PROXY covers its host (the standard library's reading of them)."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def post_attempt(
    endpoint: JsonEndpoint, path: str, body: dict[str, Any], *, timeout: float, what: str
) -> httpx.Response:
    """One POST, classified for the retry policy: 429 (or a server error with Retry-After) raises
    ``Throttled``; another server error, a timeout or a transport error ``Transient``; any other
    response is returned for the backend to judge. Reasons name the path and status only."""
    try:
        response = endpoint.post(path, body, timeout=timeout)
    except httpx.TimeoutException as exc:
        raise Transient(f"{what}: timed out", timed_out=True) from exc
    except httpx.TransportError as exc:
        raise Transient(f"{what}: {type(exc).__name__}") from exc
    status = response.status_code
    if status == THROTTLE_STATUS or status in SERVER_ERROR_STATUSES:
        retry_after = retry_after_seconds(response.headers)
        if status == THROTTLE_STATUS or retry_after is not None:
            raise Throttled(f"{what}: HTTP {status}", retry_after)
        raise Transient(f"{what}: HTTP {status}")
    return response


class ServiceOptions(TypedDict, total=False):
    """How a JSON model service is reached, beside its URL: every HTTP adapter (Jev, chat
    completions, embeddings) takes these keywords, and ``service_options`` reads them from the
    settings."""

    timeout_seconds: Required[float]  # each attempt; the retry policy's deadline bounds the call
    api_key: str  # sent as a Bearer token when set
    max_connections: int  # the pool: as many as the process's limiter lets be in flight
    transport: httpx.BaseTransport | None  # tests: a mock transport
    retrier: Retrier | None


def service_options(settings: Settings, api_key_name: str) -> ServiceOptions:
    """The deployed options: the model timeout, the key named ``api_key_name``, a pool as large as
    the limiter's bound, and the process's retry policy."""
    return ServiceOptions(
        timeout_seconds=settings.model_timeout_seconds,
        api_key=settings.secret(api_key_name),
        max_connections=max(settings.model_max_in_flight, 1),
        retrier=retrier_for(settings),
    )


class JsonService:
    """One JSON-over-HTTP model service (Jev, chat completions, embeddings): its pooled client,
    the per-call timeout, and every POST through the shared retry policy. Thread-safe."""

    def __init__(self, base_url: str, **options: Unpack[ServiceOptions]) -> None:
        self._timeout = options["timeout_seconds"]
        self.retrier = options.get("retrier") or Retrier()
        self._endpoint = JsonEndpoint(
            base_url,
            api_key=options.get("api_key", ""),
            max_connections=options.get("max_connections", 20),
            transport=options.get("transport"),
        )

    def post(self, path: str, body: dict[str, Any], what: str) -> httpx.Response:
        """The answer to one POST, retried as ``post_attempt`` classifies each attempt."""
        return self.retrier.call(
            lambda remaining: post_attempt(
                self._endpoint, path, body, timeout=min(self._timeout, remaining), what=what
            ),
            what,
        )

    def close(self) -> None:
        self._endpoint.close()
