"""A stand-in for the Discord REST API, used by the local stack when DISCORD_API_BASE is unset.

It answers the calls the bot makes (open a DM, post, fill in a deferred answer, send a
follow-up, read a channel, register commands) and records each one, so the terminal client can
print the bot's replies and DMs and tests can inspect exactly what was posted. It also answers
what `memorybot doctor` reads: the bot user, the application (its public key and
interactions endpoint URL) and the registered commands. With ``bot_token`` set, a request
without that token is refused with 401, as Discord refuses a wrong one.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..core.record.domain import snowflake_at, utcnow

DMS_CLOSED = {"code": 50007, "message": "Cannot send messages to this user"}
MISSING_PERMISSIONS_CODE = 50013  # the bot may not post in a channel (50001: may not see it)
NOT_FOUND = {"code": 0, "message": "404: Not Found"}
UNAUTHORIZED = {"code": 0, "message": "401: Unauthorized"}

_DM_OPEN = re.compile(r"^users/@me/channels$")
_CHANNEL_MESSAGES = re.compile(r"^channels/(?P<channel>[^/]+)/messages$")
_ORIGINAL = re.compile(r"^webhooks/(?P<app>[^/]+)/(?P<token>[^/]+)/messages/@original$")
_FOLLOW_UP = re.compile(r"^webhooks/(?P<app>[^/]+)/(?P<token>[^/]+)$")
_COMMANDS = re.compile(r"^applications/(?P<app>[^/]+)(/guilds/(?P<guild>[^/]+))?/commands$")
_BOT_USER = re.compile(r"^users/@me$")
_APPLICATION = re.compile(r"^applications/@me$")
_GUILD = re.compile(r"^guilds/(?P<guild>[^/]+)$")
_WEBHOOK = re.compile(r"^webhooks/")  # interaction webhooks take no bot token, as on Discord
UNKNOWN_GUILD = {"code": 10004, "message": "Unknown Guild"}
# The server the terminal client talks in: the recorder knows it by name, as Discord would.
LOCAL_GUILD_ID = "1200000000000000001"
LOCAL_GUILD_NAME = "memorybot local"


@dataclass
class Recorded:
    seq: int
    kind: str  # dm_open | message | edit | followup | commands
    method: str
    path: str
    body: Any
    channel_id: str = ""
    recipient_id: str = ""  # for a message in a DM channel: whose DM it is
    interaction_token: str = ""
    message_id: str = ""
    headers: dict = field(default_factory=dict)

    attachments: list = field(default_factory=list)  # [{"filename", "content_type", "text"}] of a multipart post

    @property
    def content(self) -> str:
        return (self.body or {}).get("content", "") if isinstance(self.body, dict) else ""


@dataclass(frozen=True)
class Call:
    """One routed request: its method, the route's match on its path, its JSON body and headers."""

    method: str
    match: re.Match[str]
    payload: Any
    headers: dict


class DiscordRecorder:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._ids = itertools.count(1)
        self.events: list[Recorded] = []
        self.dm_channels: dict[str, str] = {}  # user id -> DM channel id
        self.closed_dms: set[str] = set()  # users who do not accept DMs (error 50007)
        self.forbidden_channels: dict[str, int] = {}  # channel id -> the code Discord refuses a post with
        self._originals: dict[str, str] = {}  # interaction token -> message id
        self._rate_limits: list[float] = []  # Retry-After of the next answers that will be 429s
        self._others: dict[str, list[dict]] = {}  # channel id -> messages people posted (not via the bot)
        self._attachments: list[dict] = []  # the files of the request being routed
        self.calls: list[tuple[str, str]] = []  # (method, path) of every request, reads included
        self.bot_token: str | None = None  # when set, only "Bot <token>" is accepted
        self.bot_user: dict[str, Any] = {"id": "100000000000000001", "username": "memorybot", "bot": True}
        self.application: dict[str, Any] = {
            "id": "100000000000000001",
            "name": "memorybot",
            "verify_key": "",
            "interactions_endpoint_url": None,
        }
        self.commands: dict[tuple[str, str | None], list[dict]] = {}  # (application, guild or None) -> registered
        self.guilds: dict[str, str] = {LOCAL_GUILD_ID: LOCAL_GUILD_NAME}  # guild id -> name (others: 404)

    # ------------------------------------------------------------ test and demo controls

    def close_dms(self, user_id: str) -> None:
        with self._lock:
            self.closed_dms.add(user_id)

    def open_dms(self, user_id: str) -> None:
        with self._lock:
            self.closed_dms.discard(user_id)

    def forbid_channel(self, channel_id: str, code: int = MISSING_PERMISSIONS_CODE) -> None:
        """The bot may no longer post in ``channel_id``: Discord's 403 with ``code`` (50001 or 50013)."""
        with self._lock:
            self.forbidden_channels[channel_id] = code

    def name_guild(self, guild_id: str, name: str) -> None:
        """Discord reads this server's name as ``name`` from now on (GET /guilds/{id})."""
        with self._lock:
            self.guilds[guild_id] = name

    def someone_said(self, channel_id: str, author_id: str, author_name: str, content: str) -> str:
        """A message someone posted in the channel outside any interaction (for history fetches)."""
        with self._lock:
            message_id = self._new_id()
            self._others.setdefault(channel_id, []).append(
                {"id": message_id, "type": 0, "content": content, "author": {"id": author_id, "username": author_name}}
            )
            return message_id

    def rate_limit_next(self, count: int, retry_after: float) -> None:
        with self._lock:
            self._rate_limits.extend([retry_after] * count)

    def after(self, seq: int) -> list[Recorded]:
        with self._lock:
            return [e for e in self.events if e.seq > seq]

    def of_kind(self, kind: str) -> list[Recorded]:
        with self._lock:
            return [e for e in self.events if e.kind == kind]

    def dms_to(self, user_id: str) -> list[Recorded]:
        with self._lock:
            return [e for e in self.events if e.kind == "message" and e.recipient_id == user_id]

    # ------------------------------------------------------------ the API

    def handle(self, method: str, path: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        """``path`` relative to the API base (``users/@me/channels``); (status, JSON) back."""
        path = path.strip("/").split("?")[0]
        lowered = {k.lower(): v for k, v in (headers or {}).items()}
        attachments: list[dict] = []
        if lowered.get("content-type", "").startswith("multipart/form-data"):
            try:
                payload, attachments = _multipart(lowered["content-type"], body)
            except ValueError as exc:
                return 400, {"code": 50035, "message": f"Invalid Form Body: {exc}"}
        else:
            try:
                payload = json.loads(body) if body else None
            except ValueError:
                return 400, {"code": 50109, "message": "The request body contains invalid JSON."}
        with self._lock:
            self.calls.append((method, path))
            authorized = lowered.get("authorization") == f"Bot {self.bot_token}" or _WEBHOOK.match(path)
            if self.bot_token is not None and not authorized:
                return 401, UNAUTHORIZED
            if self._rate_limits:
                wait = self._rate_limits.pop(0)
                return 429, {"message": "You are being rate limited.", "retry_after": wait, "global": False}
            self._attachments = attachments
            return self._route(method, path, payload, lowered)

    def _route(self, method: str, path: str, payload: Any, headers: dict) -> tuple[int, Any]:
        for (route_method, pattern), answer in _ROUTES.items():
            if method == route_method and (match := pattern.match(path)):
                return answer(self, Call(method, match, payload, headers))
        return 404, NOT_FOUND

    def _open_dm(self, call: Call) -> tuple[int, Any]:
        user_id = str((call.payload or {}).get("recipient_id", ""))
        if not user_id:
            return 400, {"code": 50035, "message": "Invalid Form Body"}
        channel_id = self.dm_channels.setdefault(user_id, self._new_id())
        self._record("dm_open", call, channel_id=channel_id, recipient_id=user_id)
        return 200, {"id": channel_id, "type": 1, "recipients": [{"id": user_id}]}

    def _post_message(self, call: Call) -> tuple[int, Any]:
        channel_id = call.match["channel"]
        recipient = next((u for u, c in self.dm_channels.items() if c == channel_id), "")
        if recipient in self.closed_dms:
            return 403, DMS_CLOSED
        if channel_id in self.forbidden_channels:
            code = self.forbidden_channels[channel_id]
            return 403, {"code": code, "message": "Missing Access" if code == 50001 else "Missing Permissions"}
        message_id = self._new_id()
        self._record("message", call, channel_id=channel_id, recipient_id=recipient, message_id=message_id)
        self.events[-1].attachments = self._attachments
        return 200, {"id": message_id, "channel_id": channel_id, "content": (call.payload or {}).get("content", "")}

    def _read_channel(self, call: Call) -> tuple[int, Any]:
        channel_id = call.match["channel"]
        posted = [
            {
                "id": e.message_id,
                "type": 0,
                "content": e.content,
                "author": {"id": "0", "username": "memorybot", "bot": True},
            }
            for e in self.events
            if e.kind == "message" and e.channel_id == channel_id
        ]
        everything = posted + self._others.get(channel_id, [])
        return 200, sorted(everything, key=lambda raw: int(raw["id"]), reverse=True)  # newest first, like Discord

    def _edit_original(self, call: Call) -> tuple[int, Any]:
        token = call.match["token"]
        message_id = self._originals.setdefault(token, self._new_id())
        self._record("edit", call, interaction_token=token, message_id=message_id)
        return 200, {"id": message_id, "content": (call.payload or {}).get("content", "")}

    def _follow_up(self, call: Call) -> tuple[int, Any]:
        # The bot follows up only after filling in its deferred answer: before that, Discord would
        # turn the follow-up into the answer itself. The recorder refuses such a follow-up.
        token = call.match["token"]
        if token not in self._originals:
            return 400, {"code": 0, "message": "follow-up before the deferred answer was filled in"}
        message_id = self._new_id()
        self._record("followup", call, interaction_token=token, message_id=message_id)
        body = call.payload or {}
        return 200, {"id": message_id, "content": body.get("content", ""), "flags": body.get("flags", 0)}

    def _register_commands(self, call: Call) -> tuple[int, Any]:
        payload, m = call.payload, call.match
        self._record("commands", call)
        # Discord answers with the commands as registered: each with its id and version.
        if not isinstance(payload, list) or not all(isinstance(c, dict) for c in payload):
            return 400, {"code": 50035, "message": "Invalid Form Body"}
        registered = [{**c, "id": self._new_id(), "application_id": m["app"], "version": "1"} for c in payload]
        self.commands[(m["app"], m["guild"])] = registered
        return 200, payload

    def _read_commands(self, call: Call) -> tuple[int, Any]:
        return 200, self.commands.get((call.match["app"], call.match["guild"]), [])

    def _read_bot_user(self, _call: Call) -> tuple[int, Any]:
        return 200, dict(self.bot_user)

    def _read_application(self, _call: Call) -> tuple[int, Any]:
        return 200, dict(self.application)

    def _read_guild(self, call: Call) -> tuple[int, Any]:
        guild_id = call.match["guild"]
        if guild_id not in self.guilds:
            return 404, UNKNOWN_GUILD
        return 200, {"id": guild_id, "name": self.guilds[guild_id]}

    def _new_id(self) -> str:
        return snowflake_at(utcnow(), next(self._ids))

    def _record(self, kind: str, call: Call, **fields: Any) -> None:
        kept = {k: call.headers[k] for k in ("authorization", "user-agent") if k in call.headers}
        self.events.append(
            Recorded(next(self._seq), kind, call.method, call.match.string, call.payload, headers=kept, **fields)
        )


# (method, path pattern) -> the answer; any other request is a 404, as Discord's.
_ROUTES: dict[tuple[str, re.Pattern[str]], Callable[[DiscordRecorder, Call], tuple[int, Any]]] = {
    ("POST", _DM_OPEN): DiscordRecorder._open_dm,
    ("POST", _CHANNEL_MESSAGES): DiscordRecorder._post_message,
    ("GET", _CHANNEL_MESSAGES): DiscordRecorder._read_channel,
    ("PATCH", _ORIGINAL): DiscordRecorder._edit_original,
    ("POST", _FOLLOW_UP): DiscordRecorder._follow_up,
    ("PUT", _COMMANDS): DiscordRecorder._register_commands,
    ("GET", _COMMANDS): DiscordRecorder._read_commands,
    ("GET", _BOT_USER): DiscordRecorder._read_bot_user,
    ("GET", _APPLICATION): DiscordRecorder._read_application,
    ("GET", _GUILD): DiscordRecorder._read_guild,
}


def _multipart(content_type: str, body: bytes) -> tuple[Any, list[dict]]:
    """Discord's file upload: ``payload_json`` (the message) and ``files[n]`` parts. The files
    must be named in ``payload_json.attachments`` as Discord requires."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    if not message.is_multipart():
        raise ValueError("not multipart")
    payload: Any = None
    files: list[dict] = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        name = name if isinstance(name, str) else None
        data = part.get_payload(decode=True)
        data = data if isinstance(data, bytes) else b""
        if name == "payload_json":
            payload = json.loads(data)
        elif name and re.fullmatch(r"files\[\d+\]", name):
            files.append(
                {
                    "field": name,
                    "filename": part.get_filename() or "",
                    "content_type": part.get_content_type(),
                    "text": data.decode("utf-8", "replace"),
                }
            )
    if not isinstance(payload, dict):
        raise ValueError("payload_json missing")
    attachments = [a for a in payload.get("attachments") or [] if isinstance(a, dict)]
    # Discord's OpenAPI description types an attachment's id as a snowflake: a string of digits.
    if any(not isinstance(a.get("id"), str) or not re.fullmatch(r"0|[1-9][0-9]*", a["id"]) for a in attachments):
        raise ValueError("payload_json.attachments[].id must be a snowflake string")
    named = {a.get("filename") for a in attachments}
    if any(f["filename"] not in named for f in files):
        raise ValueError("a file is not named in payload_json.attachments")
    return payload, files


def event_json(event: Recorded) -> dict:
    data = asdict(event)
    data.pop("headers")
    return data


def serve(recorder: DiscordRecorder, host: str = "127.0.0.1", port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Serve ``recorder`` alone on loopback (for tests); returns (server, API base URL)."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            status, body = recorder.handle(
                self.command, self.path.removeprefix("/api/v10"), self.rfile.read(length), dict(self.headers)
            )
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    bound_host, bound_port = server.server_address[:2]
    host_text = bound_host.decode() if isinstance(bound_host, bytes) else bound_host
    return server, f"http://{host_text}:{bound_port}/api/v10"
