"""The local stack: the whole bot on one loopback HTTP server, nothing from AWS or Discord.

Requests become API Gateway proxy events (v2) for the SAME handler functions the Lambda
functions run; async invocations run on background threads in this process. DynamoDB is
moto's server started here (unless AWS_ENDPOINT_URL_DYNAMODB names one), and Discord is
the built-in recorder unless DISCORD_API_BASE is set.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .. import bootstrap, config, tables
from ..adapters.invoker import LocalContext, LocalInvoker
from ..adapters.manifests import FileManifests
from ..core.record.domain import utcnow
from . import moto_dynamo
from .discord_recorder import MISSING_PERMISSIONS_CODE, DiscordRecorder, event_json

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
STATE_DIR = Path(".memorybot")  # gitignored; the terminal client reads the signing key here
SIGNING_KEY_FILE = "signing_key"
ADMIN_SECRET_FILE = "admin_secret"
MANIFEST_DIR = "manifests"
DISCORD_PREFIX = "/discord/api/v10"
LOCAL_APPLICATION_ID = "1000000000000000001"
DRAIN_TIMEOUT_SECONDS = 120
POST_ONLY = frozenset(
    {"/interactions", "/memory/rollback", "/memory/erase", "/memory/import", "/local/drain", "/local/nightly"}
)
LOCAL_PREFIX = "/local/"
MAX_LOCAL_BODY_DEPTH = 8  # the local routes take flat JSON objects


class BadBody(ValueError):
    """A local route's body is not what it takes (400, with this message)."""


@dataclass
class LocalStack:
    url: str
    server: ThreadingHTTPServer
    invoker: LocalInvoker
    recorder: DiscordRecorder | None
    state_dir: Path
    container: bootstrap.Container  # the one this stack built (and installed for its handlers)
    moto: moto_dynamo.MotoDynamo | None = None
    notes: list[str] = field(default_factory=list)
    admin_secret: str = ""  # the local routes' bearer secret: the same as rollback's
    allowed_hosts: frozenset[str] = frozenset()  # Host headers that name the bound address

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.invoker.drain(timeout=DRAIN_TIMEOUT_SECONDS)
        self.invoker.shutdown()
        if self.moto:
            self.moto.stop()


def load_or_create_signing_key(state_dir: Path) -> tuple[str, str]:
    """(signing key hex, public key hex), kept in ``state_dir`` so restarts keep the same key."""
    from nacl.signing import SigningKey

    path = state_dir / SIGNING_KEY_FILE
    if path.exists():
        key = SigningKey(bytes.fromhex(path.read_text().strip()))
    else:
        key = SigningKey.generate()
        state_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(key.encode().hex() + "\n")
        path.chmod(0o600)
    return key.encode().hex(), key.verify_key.encode().hex()


def _local_secret(state_dir: Path, name: str) -> str:
    path = state_dir / name
    if not path.exists():
        state_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(24) + "\n")
        path.chmod(0o600)
    return path.read_text().strip()


def start(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, state_dir: Path = STATE_DIR) -> LocalStack:
    """Bind, wire and serve on a background thread; returns once requests can be answered."""
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # keep the foreground terminal readable
    found = config.Settings.from_env()
    httpd = _Server((host, port), _Handler)
    url = f"http://{host}:{httpd.server_address[1]}"
    notes: list[str] = []

    moto = None
    if found.dynamodb_endpoint:
        moto_dynamo.use_local_environment(found.dynamodb_endpoint)
        notes.append(f"DynamoDB: {found.dynamodb_endpoint}")
    else:
        moto = moto_dynamo.start()
        moto_dynamo.use_local_environment(moto.endpoint)
        notes.append("DynamoDB: moto, in this process (data lasts until you stop the stack)")
    recorder = None
    if not found.discord_api_base_configured:
        recorder = DiscordRecorder()
        os.environ["DISCORD_API_BASE"] = url + DISCORD_PREFIX
        notes.append("Discord: the built-in recorder (nothing leaves this machine)")
    else:
        notes.append(f"Discord: {found.discord_api_base}")
    if not found.secret("DISCORD_PUBLIC_KEY"):
        _, public = load_or_create_signing_key(state_dir)
        os.environ["DISCORD_PUBLIC_KEY"] = public
        notes.append(f"Signing key for the terminal client: {state_dir / SIGNING_KEY_FILE}")
    if not found.secret("MEMORYBOT_ADMIN_SECRET"):
        os.environ["MEMORYBOT_ADMIN_SECRET"] = _local_secret(state_dir, ADMIN_SECRET_FILE)
        notes.append(f"Admin secret for POST /memory/* and /local/*: {state_dir / ADMIN_SECRET_FILE}")
    # A server's settings take effect at once here (deployed, a warm function keeps them briefly).
    os.environ.setdefault("MEMORYBOT_SERVER_SETTINGS_CACHE_SECONDS", "0")
    os.environ.setdefault("DISCORD_APPLICATION_ID", LOCAL_APPLICATION_ID)
    os.environ.setdefault("DISCORD_BOT_TOKEN", "local-bot-token")
    notes.append(f"Models: decision={found.decision_model}, chat={found.chat_model}")

    config.settings.cache_clear()
    wired = config.settings()
    from ..handlers import extraction, reply

    # The container is built once with what this stack needs: the hand-off runs here instead of
    # Lambda, and the nightly manifests go where this stack can read them.
    invoker = LocalInvoker({"reply": reply.handler, "extraction": extraction.handler})
    manifests = None if wired.manifest_bucket else FileManifests(state_dir / MANIFEST_DIR)
    container = bootstrap.install(bootstrap.Container(wired, invoker=invoker, manifest_store=manifests))
    admin_secret = container.settings.secret("MEMORYBOT_ADMIN_SECRET")
    tables.create_tables(container.dynamodb_client, dict(container.settings.table_names))
    stack = LocalStack(
        url,
        httpd,
        invoker,
        recorder,
        state_dir,
        container,
        moto,
        notes,
        admin_secret,
        _hosts(host, httpd.server_address[1]),
    )
    httpd.stack = stack  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True, name="local-stack").start()
    return stack


def _hosts(host: str, port: int) -> frozenset[str]:
    """The Host headers a browser or client sends for the bound address (a rebound DNS name is not one)."""
    names = {host}
    if host in ("127.0.0.1", "::1"):
        names.add("localhost")
    literal = {f"[{n}]" if ":" in n else n for n in names}
    return frozenset({f"{n}:{port}" for n in literal})


def _local_body(body: bytes, fields: dict[str, type]) -> dict:
    """A local route's JSON object: only ``fields``, each of its type (all optional here)."""
    from ..admin_api import BadRequest, json_object

    if body.count(b"[") + body.count(b"{") > MAX_LOCAL_BODY_DEPTH * 4:
        raise BadBody("body is not a small JSON object")
    try:
        data = json_object(body, frozenset(fields)) or {}
    except BadRequest as exc:
        raise BadBody(str(exc)) from None
    for name, kind in fields.items():
        if name in data and not isinstance(data[name], kind):
            raise BadBody(f"{name} must be a {kind.__name__}")
    return data


def _required(data: dict, *names: str) -> dict:
    missing = [n for n in names if n not in data]
    if missing:
        raise BadBody(f"missing field(s): {', '.join(missing)}")
    return data


def _dm_user(data: dict) -> str:
    """The Discord user id a DM control names: ``user`` is a name as the terminal client takes it
    (``--user alice``), ``user_id`` a Discord user id."""
    from ..discord.formats import is_snowflake
    from .people import user_id_for

    if ("user" in data) == ("user_id" in data):
        raise BadBody('give one of "user" (a name, as in chat --user alice) or "user_id" (a Discord user id)')
    if "user" in data:
        if not data["user"].strip():
            raise BadBody("user must be a name, e.g. alice")
        return user_id_for(data["user"].strip())
    if not is_snowflake(data["user_id"]):
        raise BadBody(
            'user_id must be a Discord user id (digits); to name a person as the client does, send {"user": "alice"}'
        )
    return data["user_id"]


def proxy_event(method: str, path: str, query: str, headers: dict[str, str], body: bytes) -> dict:
    """An API Gateway HTTP API (payload v2) proxy event, body base64 as API Gateway sends binary."""
    return {
        "version": "2.0",
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "rawQueryString": query,
        "headers": {k.lower(): v for k, v in headers.items()},
        "requestContext": {"http": {"method": method, "path": path}},
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the client went away mid-request (its Ctrl-C): nothing to tell anyone
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server_version = "memorybot-local"

    @property
    def stack(self) -> LocalStack:
        return self.server.stack  # type: ignore[attr-defined]

    def log_message(self, *args: Any) -> None:
        pass  # request lines would repeat what the terminal client prints

    # Every method reaches the router, so a wrong one is a 404 or 405, never the base class's 501.
    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PATCH = do_PUT = do_DELETE = do_OPTIONS = do_HEAD = do_GET

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self._send(400, {"error": "bad Content-Length"})
            return
        body = self.rfile.read(length)
        refused = self._refused(parts.path)
        if refused:
            self._send(*refused)
            return
        try:
            status, answer = self._route(self.command, parts.path, parts.query, body)
        except BadBody as exc:
            status, answer = 400, {"error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a local server error is shown, not hidden
            status, answer = 500, {"error": type(exc).__name__}
        self._send(status, answer)

    def _refused(self, path: str) -> tuple[int, Any] | None:
        """Who may call what. /interactions is open to anyone (Discord, through a tunnel, under
        any Host): each request carries Discord's signature. Everything else answers only
        to the bound address (a rebound DNS name is refused), and /local/* only with the
        admin secret, whichever Discord the stack talks to."""
        if path == "/interactions":
            return None
        if (self.headers.get("Host") or "").lower() not in self.stack.allowed_hosts:
            return 403, {"error": "forbidden host"}
        if path.startswith(LOCAL_PREFIX):
            from ..admin_api import authorized

            if not authorized(self.headers.get("Authorization"), self.stack.admin_secret):
                return 401, {"error": "unauthorized: send Authorization: Bearer <admin secret>"}
        return None

    def _route(self, method: str, path: str, query: str, body: bytes) -> tuple[int, Any]:
        if path.startswith(DISCORD_PREFIX + "/") and self.stack.recorder:
            return self.stack.recorder.handle(method, path[len(DISCORD_PREFIX) :], body, dict(self.headers))
        if method == "POST" and path == "/interactions":
            return self._lambda("interactions", "handler", path, query, body)
        if method == "POST" and path in ("/memory/rollback", "/memory/import"):
            return self._lambda("admin", "handler", path, query, body)
        if method == "POST" and path == "/memory/erase":
            return self._lambda("erase", "handler", path, query, body)
        if method == "POST" and path == "/local/drain":
            drained = self.stack.invoker.drain(timeout=DRAIN_TIMEOUT_SECONDS)
            return (200 if drained else 504), {
                "drained": drained,
                "failedInvocations": len(self.stack.invoker.failures),
            }
        if method == "POST" and path == "/local/nightly":
            return self._nightly(body)
        if method == "GET" and path == "/local/info":
            settings = self.stack.container.settings
            return 200, {"applicationId": settings.discord_application_id, "recorder": self.stack.recorder is not None}
        if path.startswith("/local/discord/") and self.stack.recorder:
            return self._recorder_control(method, path, query, body)
        if path in POST_ONLY:
            return 405, {"error": "method not allowed"}
        return 404, {"error": "not found"}

    def _lambda(self, module: str, name: str, path: str, query: str, body: bytes) -> tuple[int, Any]:
        import importlib

        try:
            handler: Callable = getattr(importlib.import_module(f"memorybot.handlers.{module}"), name)
        except (ImportError, AttributeError):
            return 404, {"error": "not available in this build"}
        result = handler(
            proxy_event(self.command, path, query, dict(self.headers), body), LocalContext(f"memorybot-{module}")
        )
        return int(result["statusCode"]), json.loads(result.get("body") or "null")

    def _nightly(self, body: bytes) -> tuple[int, Any]:
        try:
            from ..admin_api import run_record
            from ..handlers.nightly import day_label, run_in_process, scheduled_time
        except ImportError:
            return 404, {"error": "not available in this build"}
        requested = _local_body(body, {"now": str})
        now = None
        if requested.get("now"):
            try:
                now = scheduled_time(requested["now"])
            except ValueError:
                raise BadBody('now must be an ISO 8601 time, e.g. "2026-11-20T18:00:00Z"') from None
        self.stack.invoker.drain(timeout=DRAIN_TIMEOUT_SECONDS)  # let pending extractions land first
        # The state machine's steps (the nightly handlers' typed use cases), in its order, in this process.
        container = self.stack.container
        try:
            run = run_in_process(container.consolidator, now or utcnow(), container.metrics)
        except Exception as exc:  # noqa: BLE001 - deployed, the failed execution is redriven; here, ask again
            return 503, {"status": "incomplete", "error": type(exc).__name__, "retry": "POST /local/nightly again"}
        finally:
            container.metrics.flush()  # the night's lines, as its finish step writes them deployed
        if run is None:
            day = day_label(now or utcnow())
            # That JST day has run: each runs once.
            hint = 'a later "now" runs another day (the night before the latest 03:00 JST at or before it)'
            return 409, {"status": "already_claimed", "dayLabel": day, "hint": hint}
        return 200, run_record(run)

    def _recorder_control(self, method: str, path: str, query: str, body: bytes) -> tuple[int, Any]:
        recorder = self.stack.recorder
        assert recorder is not None
        if method == "GET" and path == "/local/discord/events":
            after = (parse_qs(query).get("after") or ["0"])[0]
            if not after.isascii() or not after.isdigit():
                raise BadBody("after must be a whole number")
            return 200, {"events": [event_json(e) for e in recorder.after(int(after))]}
        if method == "POST" and path in ("/local/discord/close-dms", "/local/discord/open-dms"):
            user_id = _dm_user(_local_body(body, {"user": str, "user_id": str}))
            closing = path.endswith("close-dms")
            if closing:
                recorder.close_dms(user_id)
            else:
                recorder.open_dms(user_id)
            return 200, {"closed" if closing else "opened": user_id}
        if method == "POST" and path == "/local/discord/guild":
            data = _required(_local_body(body, {"guild_id": str, "name": str}), "guild_id", "name")
            from ..discord.formats import is_snowflake

            if not is_snowflake(data["guild_id"]) or not data["name"].strip():
                raise BadBody("guild_id must be a Discord id (digits) and name a server's name")
            recorder.name_guild(data["guild_id"], data["name"])
            return 200, {"named": data["guild_id"]}
        if method == "POST" and path == "/local/discord/someone-said":
            fields = ("channel_id", "author_id", "author_name", "content")
            data = _required(_local_body(body, dict.fromkeys(fields, str)), *fields)
            message_id = recorder.someone_said(*(data[f] for f in fields))
            return 200, {"id": message_id}
        if method == "POST" and path == "/local/discord/forbid-channel":
            # The bot loses its permission to post in a channel (Discord answers 50013, or 50001 with "code").
            data = _required(_local_body(body, {"channel_id": str, "code": int}), "channel_id")
            recorder.forbid_channel(data["channel_id"], data.get("code", MISSING_PERMISSIONS_CODE))
            return 200, {"forbidden": data["channel_id"]}
        return 404, {"error": "not found"}

    def _send(self, status: int, answer: Any) -> None:
        raw = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(raw)
