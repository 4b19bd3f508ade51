"""Small, real HTTP servers on 127.0.0.1 standing in for external APIs in tests and benchmarks.

Each is a threaded ``http.server`` on a free port, speaking HTTP/1.1 with keep-alive,
that records every request and answers what the test scripted.

    from loopback.jev_server import JevServer          # inside the test suite (tests/ is on sys.path)
    from tests.loopback.jev_server import JevServer    # from the repository root (benchmarks)

    with JevServer(api_key="k") as jev:                # started; stopped on exit
        jev.url                                       # "http://127.0.0.1:PORT" (start() returns it too)
        jev.set_worth(0.9); jev.set_verdict("update", memory_id="abcde")
        jev.answer("/add", raw=b"not json")           # a sticky answer for a path...
        jev.answer_once("/worth", status=503)         # ...or a one-shot answer, consumed first
        jev.set_delay(0.5, path="/verdict")           # every /verdict answer waits 0.5 s
        ... code under test ...
        jev.requests_to("/worth")[0].json             # what was sent: method, path, headers, body

Common API (``LoopbackServer``):
- ``start() -> str`` base URL, ``stop()``, context manager; ``url`` once started.
- ``answer(path, body=None, *, status=200, raw=None, delay=0.0, headers=None)``: sticky.
  ``body`` is sent as JSON; ``raw`` (bytes or str) is sent as it is, for malformed bodies.
- ``answer_once(path, ...)``: same arguments, used once, in the order queued.
- ``set_delay(seconds, path=None)``: delay before answering (None: every path).
- ``release()``: the requests held by a delay now are answered at once (a test that held a call
  open for as long as it needed lets it go, rather than waiting the delay out).
- ``requests`` (copies, in arrival order), ``requests_to(path)``, ``last(path=None)``, ``clear()``.
- ``api_key``: when set, a request without ``Authorization: Bearer <key>`` gets 401.
- Subclasses answer unscripted paths in ``default_answer(request)`` (base: 404).

A delay counts from the request's arrival (its request line read): the server's own work on
it (parsing, the scripted or default answer, the response's bytes) is done inside the delay,
and the response leaves in one write when it is up, so a delay of L is a service that answers
in L, not in L plus this Python server's time. A delay is cut short by ``stop()``, so a test
that times out its client never waits for the server.

A stand-in for a model under a quota: ``set_delay(L)`` is the model's latency, and
``set_quota(Q)`` lets at most Q requests per minute through (a token bucket of one second's
worth, refilled at Q/60 a second, like a provider's requests-per-minute quota); a request
above it gets ``throttled_answer(wait)`` at once: 429 with ``Retry-After`` (whole seconds,
as HTTP says) and ``retry-after-ms`` (as OpenAI sends). ``throttled``, ``served``,
``in_flight`` and ``peak_in_flight`` (requests being answered at once) are counted.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Answer", "LoopbackServer", "Recorded"]


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it. Header names are lower case."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    client_port: int  # the client's port: the same port twice means a reused connection
    arrived: float = 0.0  # time.monotonic() when its request line was read: a delay counts from then

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: Any = None  # sent as JSON unless raw is given
    raw: bytes | str | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)

    def payload(self) -> bytes:
        if self.raw is not None:
            return self.raw.encode() if isinstance(self.raw, str) else self.raw
        if self.body is None:
            return b""
        return json.dumps(self.body).encode()


class LoopbackServer:
    def __init__(self, *, api_key: str | None = None, host: str = "127.0.0.1") -> None:
        self.api_key = api_key
        self._host = host
        self._lock = threading.Lock()
        self._sticky: dict[str, Answer] = {}
        self._once: dict[str, deque[Answer]] = defaultdict(deque)
        self._delays: dict[str | None, float] = {}
        self._requests: list[Recorded] = []
        self._stopping = threading.Event()
        self._released = threading.Event()  # the held requests' gate; release() opens it and sets up the next
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""
        self._quota: _Quota | None = None
        self.throttled = 0
        self.served = 0
        self.in_flight = 0
        self.peak_in_flight = 0

    # ------------------------------------------------------------ lifecycle

    def start(self) -> str:
        if self._server is not None:
            return self.url
        self._stopping.clear()
        self._server = _Server((self._host, 0), _handler_for(self))
        host, port = self._server.server_address[:2]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name=type(self).__name__, daemon=True
        )
        self._thread.start()
        self.url = self.base_url(f"http://{host}:{port}")
        return self.url

    def base_url(self, root: str) -> str:
        """The URL clients are given (subclasses may add a prefix such as /v1)."""
        return root

    def stop(self) -> None:
        self._stopping.set()  # no answer waits from now on
        self.release()  # and those waiting are woken
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LoopbackServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ scripting

    def answer(
        self,
        path: str,
        body: Any = None,
        *,
        status: int = 200,
        raw: bytes | str | None = None,
        delay: float = 0.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        with self._lock:
            self._sticky[path] = Answer(status, body, raw, delay, dict(headers or {}))

    def answer_once(
        self,
        path: str,
        body: Any = None,
        *,
        status: int = 200,
        raw: bytes | str | None = None,
        delay: float = 0.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        with self._lock:
            self._once[path].append(Answer(status, body, raw, delay, dict(headers or {})))

    def set_delay(self, seconds: float, path: str | None = None) -> None:
        with self._lock:
            self._delays[path] = seconds

    def release(self) -> None:
        """Answer every request held by a delay now; those arriving later wait their delay as set."""
        with self._lock:
            released, self._released = self._released, threading.Event()
        released.set()

    def set_quota(self, per_minute: int | None, *, period: float = 60.0) -> None:
        """At most ``per_minute`` requests per ``period`` seconds get through; None: no quota."""
        with self._lock:
            self._quota = _Quota(per_minute, period) if per_minute else None

    def throttled_answer(self, wait: float) -> Answer:
        """What a request above the quota gets; subclasses answer their API's throttling error."""
        return Answer(
            429,
            {"error": {"message": "rate limit exceeded", "type": "rate_limit"}},
            headers={
                "Retry-After": str(max(1, math.ceil(wait))),
                "retry-after-ms": str(max(1, math.ceil(wait * 1000))),
            },
        )

    def clear(self) -> None:
        """Forget scripted answers, delays, the quota, counters and recorded requests."""
        with self._lock:
            self._sticky.clear()
            self._once.clear()
            self._delays.clear()
            self._requests.clear()
            self._quota = None
            self.throttled = self.served = self.peak_in_flight = 0

    # ------------------------------------------------------------ inspection

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]

    def last(self, path: str | None = None) -> Recorded:
        chosen = self.requests if path is None else self.requests_to(path)
        if not chosen:
            raise AssertionError(f"no request to {path or 'any path'}")
        return chosen[-1]

    # ------------------------------------------------------------ answering

    def default_answer(self, request: Recorded) -> Answer:
        return Answer(404, {"error": f"nothing scripted for {request.path}"})

    def _answer_for(self, request: Recorded) -> tuple[Answer, bytes]:
        """The answer and its body's bytes, once its delay since the request arrived is up."""
        with self._lock:
            self._requests.append(request)
            wait = self._quota.take() if self._quota is not None else 0.0
            if wait > 0:
                self.throttled += 1
            else:
                queued = self._once.get(request.path)
                scripted = queued.popleft() if queued else self._sticky.get(request.path)
                delay = self._delays.get(request.path, self._delays.get(None, 0.0))
                released = self._released
                self.served += 1
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        if wait > 0:
            answer = self.throttled_answer(wait)
            return answer, answer.payload()
        try:
            if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
                answer = Answer(401, {"error": "unauthorized"})
                return answer, answer.payload()
            answer = scripted or self.default_answer(request)
            payload = answer.payload()
            held = delay + answer.delay - (time.monotonic() - request.arrived)
            if held > 0 and not self._stopping.is_set():
                released.wait(held)
            return answer, payload
        finally:
            with self._lock:
                self.in_flight -= 1


class _Quota:
    """A token bucket: one second's worth of the allowance as burst, refilled continuously."""

    def __init__(self, per_minute: int, period: float) -> None:
        self.capacity = max(1.0, per_minute / 60)
        self.rate = per_minute / period
        self.tokens = self.capacity
        self.stamp = time.monotonic()

    def take(self) -> float:
        """0 when a request may go through (and counts it); else seconds until one may."""
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 512  # a burst of new connections must not wait out SYN retries

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is what several tests are about


def _handler_for(owner: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse is observable
        disable_nagle_algorithm = True  # a long body goes out in parts: no 40 ms delayed-ACK stall
        wbufsize = 64 * 1024  # headers and body buffered: sent together when the handler flushes

        def parse_request(self) -> bool:
            self.arrived = time.monotonic()  # the request line is in: the delay counts from here
            return super().parse_request()

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = Recorded(
                self.command,
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                body,
                self.client_address[1],
                self.arrived,
            )
            answer, payload = owner._answer_for(request)
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.headers.get("Content-Type", "application/json"))
                for name, value in answer.headers.items():
                    if name.lower() != "content-type":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        do_POST = do_GET = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
