"""Counting what the model adapters send, from outside them: requests, the provider's own token
counts and the model each went to, for `memorybot eval`.

The adapters are left exactly as deployed. An HTTP backend (OpenAI-compatible, Jev) is reached
through a metering relay on loopback: the eval points the backend's base URL at it, and it
forwards each request unchanged (key included) to the real one and its answer back, reading the
``model`` asked and the answer's ``usage`` on the way (Jev's contract has none: its tokens are
unknown). Bedrock is counted through botocore's own event hooks on boto3's default session, which
every client the adapters build from then on inherits: the ``modelId`` asked and the Converse
answer's ``usage``. Every attempt is a request, retries and a refused answer format included:
what the provider counts.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

# Answer headers the adapters read (the retry policy's), passed back as they came.
_PASSED_HEADERS = ("content-type", "retry-after", "retry-after-ms")
# Request headers passed on (the relay sends its own Host and lengths).
_FORWARDED_HEADERS = ("authorization", "content-type", "accept")


@dataclass
class ModelUsage:
    """One model's requests, and the tokens its answers said they used (``counted``: requests whose
    answer carried token counts; the rest are unknown)."""

    requests: int = 0
    counted: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class UsageBook:
    """Usage by model id, added to from any thread."""

    by_model: dict[str, ModelUsage] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, model: str, tokens: tuple[int, int] | None) -> None:
        with self._lock:
            usage = self.by_model.setdefault(model, ModelUsage())
            usage.requests += 1
            if tokens is not None:
                usage.counted += 1
                usage.input_tokens += tokens[0]
                usage.output_tokens += tokens[1]

    def snapshot(self) -> dict[str, ModelUsage]:
        with self._lock:
            return {model: dataclasses.replace(usage) for model, usage in self.by_model.items()}


def since(before: dict[str, ModelUsage], after: dict[str, ModelUsage]) -> dict[str, ModelUsage]:
    """What was used between two snapshots."""
    spent = {}
    for model, now in after.items():
        then = before.get(model, ModelUsage())
        delta = ModelUsage(
            now.requests - then.requests,
            now.counted - then.counted,
            now.input_tokens - then.input_tokens,
            now.output_tokens - then.output_tokens,
        )
        if delta.requests:
            spent[model] = delta
    return spent


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _usage(answer: object, input_key: str, output_key: str) -> tuple[int, int] | None:
    usage = answer.get("usage") if isinstance(answer, dict) else None
    if not isinstance(usage, dict):
        return None
    given, written = _count(usage.get(input_key)), _count(usage.get(output_key))
    return (given, written) if given is not None and written is not None else None


def openai_usage(answer: object) -> tuple[int, int] | None:
    """``usage.prompt_tokens`` and ``usage.completion_tokens`` of a chat completion, if given."""
    return _usage(answer, "prompt_tokens", "completion_tokens")


def bedrock_usage(answer: object) -> tuple[int, int] | None:
    """``usage.inputTokens`` and ``usage.outputTokens`` of a Converse answer, if given."""
    return _usage(answer, "inputTokens", "outputTokens")


class MeteringRelay:
    """A loopback HTTP server that forwards every POST to ``upstream`` (a base URL) and books it
    under the model the request names (``model`` in its JSON body; ``label`` without one)."""

    def __init__(self, upstream: str, book: UsageBook, *, label: str, timeout: float) -> None:
        self._upstream = upstream.rstrip("/")
        self._book = book
        self._label = label
        self._client = httpx.Client(timeout=timeout)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="metering-relay", daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> MeteringRelay:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def _relay(self, path: str, headers: dict[str, str], body: bytes) -> httpx.Response:
        try:
            asked = json.loads(body)
        except ValueError:
            asked = None
        named = asked.get("model") if isinstance(asked, dict) else None
        model = named if isinstance(named, str) else self._label
        try:
            response = self._client.post(self._upstream + path, headers=headers, content=body)
        except httpx.HTTPError:
            self._book.add(model, None)
            raise
        if not response.is_success:
            tokens: tuple[int, int] | None = (0, 0)  # a refusal or a throttle: no tokens spent
        else:
            try:
                tokens = openai_usage(response.json())
            except ValueError:
                tokens = None
        self._book.add(model, tokens)
        return response

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body leave at once: no delayed-ACK stall a request

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() in _FORWARDED_HEADERS}
                try:
                    response = relay._relay(self.path, headers, body)
                except httpx.HTTPError:
                    self._answer(502, {}, b"")  # the upstream did not answer: a server error, as seen
                    return
                passed = {k: v for k, v in response.headers.items() if k.lower() in _PASSED_HEADERS}
                self._answer(response.status_code, passed, response.content)

            def _answer(self, status: int, headers: dict[str, str], content: bytes) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *_args: Any) -> None:  # no request lines on the operator's terminal
                pass

        return Handler


@contextmanager
def metered_bedrock(book: UsageBook) -> Iterator[None]:
    """Book every Bedrock Converse call of the clients built inside this block (boto3's default
    session, which ``adapters/bedrock.py`` uses) by its ``modelId``, with its answer's usage."""
    import boto3

    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    events = boto3.DEFAULT_SESSION.events

    def asked(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["metered_model"] = str(params.get("modelId", "bedrock"))

    def answered(http_response: Any, parsed: object, context: dict[str, Any], **_: Any) -> None:
        refused = not 200 <= int(getattr(http_response, "status_code", 200)) < 300  # no tokens spent
        book.add(str(context.get("metered_model", "bedrock")), (0, 0) if refused else bedrock_usage(parsed))

    hooks: list[tuple[str, Callable[..., None]]] = [
        ("before-parameter-build.bedrock-runtime.Converse", asked),
        ("after-call.bedrock-runtime.Converse", answered),
    ]
    for name, hook in hooks:
        events.register(name, hook)
    try:
        yield
    finally:
        for name, hook in hooks:
            events.unregister(name, hook)
