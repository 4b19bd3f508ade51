"""The Discord REST API over httpx: DMs, deferred answers, channel history, command registration."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from ..core.record.domain import Message
from ..core.record.ports import DiscordError, DmsClosedError
from ..discord.formats import is_interaction_token, is_snowflake, valid_unicode

logger = logging.getLogger(__name__)

PROJECT_URL = "https://github.com/memorybot/memorybot"
VERSION = "0.1.0"
USER_AGENT = f"DiscordBot ({PROJECT_URL}, {VERSION})"
NO_MENTIONS: dict[str, list[str]] = {"parse": []}  # nobody is ever pinged by the bot
DMS_CLOSED = 50007  # "Cannot send messages to this user"
HISTORY_MAX = 100  # Discord's page size for channel messages
ORDINARY_MESSAGE_TYPES = (0, 19)  # default and reply
EPHEMERAL = 64  # message flag: only the interaction's user sees it
GUILD_NAME_SECONDS = 1.0  # a server's name is read on the way to an answer due within 3 s


class DiscordRest:
    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float = 10.0,
        max_attempts: int = 3,
        max_retry_wait: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """429s are retried after Retry-After, at most ``max_attempts`` tries in all, and only
        when the wait is at most ``max_retry_wait`` seconds (otherwise the 429 is raised).
        Without a ``token`` only the interaction webhooks answer (they need none)."""
        auth = {"Authorization": f"Bot {token}"} if token is not None else {}
        self._http = httpx.Client(
            base_url=base_url.rstrip("/") + "/", timeout=timeout, headers={**auth, "User-Agent": USER_AGENT}
        )
        self._max_attempts = max(1, max_attempts)
        self._max_retry_wait = max_retry_wait
        self._sleep = sleep

    def close(self) -> None:
        self._http.close()

    # ------------------------------------------------------------ the port

    def open_dm(self, user_id: str) -> str:
        return str(self._request("POST", "users/@me/channels", {"recipient_id": _id(user_id, "user id")})["id"])

    def send_message(self, channel_id: str, content: str) -> str:
        body = {"content": content, "allowed_mentions": NO_MENTIONS}
        return str(self._request("POST", f"channels/{_id(channel_id, 'channel id')}/messages", body)["id"])

    def send_file(self, channel_id: str, content: str, filename: str, data: bytes) -> str:
        """multipart/form-data: ``payload_json`` (the message, naming its attachment) and ``files[0]``."""
        payload = {
            "content": content,
            "allowed_mentions": NO_MENTIONS,
            "attachments": [{"id": "0", "filename": filename}],  # a snowflake: a string
        }
        files = {
            "payload_json": (None, json.dumps(payload), "application/json"),
            "files[0]": (filename, data, "application/json"),
        }
        return str(self._request("POST", f"channels/{_id(channel_id, 'channel id')}/messages", files=files)["id"])

    def edit_original(self, application_id: str, token: str, content: str, components: Sequence[dict] = ()) -> str:
        body = {
            "content": content,
            "allowed_mentions": NO_MENTIONS,
            **({"components": list(components)} if components else {}),
        }
        if not is_interaction_token(token):
            raise ValueError("malformed interaction token")  # never put into a URL sent with the bot token
        path = f"webhooks/{_id(application_id, 'application id')}/{token}/messages/@original"
        return str(self._request("PATCH", path, body)["id"])

    def follow_up(self, application_id: str, token: str, content: str, components: Sequence[dict] = ()) -> str:
        """POST /webhooks/{application.id}/{interaction.token}: a follow-up message; flags 64 makes
        it ephemeral (only the person who used the command sees it)."""
        body = {"content": content, "flags": EPHEMERAL, "allowed_mentions": NO_MENTIONS}
        if components:
            body["components"] = list(components)
        if not is_interaction_token(token):
            raise ValueError("malformed interaction token")
        return str(self._request("POST", f"webhooks/{_id(application_id, 'application id')}/{token}", body)["id"])

    def guild_name(self, guild_id: str) -> str:
        """GET /guilds/{guild.id}: the server's name (the bot must be in it)."""
        # A courtesy on the path of an answer Discord waits 3 s for: a short budget, no 429 waits.
        name = self._request("GET", f"guilds/{_id(guild_id, 'guild id')}", within=GUILD_NAME_SECONDS).get("name")
        if not isinstance(name, str):
            raise DiscordError("GET guilds/<id>: no name")
        return valid_unicode(name)

    def recent_channel_messages(self, channel_id: str, limit: int) -> list[Message]:
        path = f"channels/{_id(channel_id, 'channel id')}/messages"
        raw = self._request("GET", path, params={"limit": max(1, min(limit, HISTORY_MAX))})
        messages = [_message(channel_id, m) for m in raw or [] if m.get("type", 0) in ORDINARY_MESSAGE_TYPES]
        return sorted(messages, key=lambda m: int(m.message_id))

    # ------------------------------------------------------------ admin

    def bulk_overwrite_commands(
        self, application_id: str, commands: list[dict], guild_id: str | None = None
    ) -> list[dict]:
        application_id = _id(application_id, "application id")
        path = (
            f"applications/{application_id}/guilds/{_id(guild_id, 'guild id')}/commands"
            if guild_id
            else f"applications/{application_id}/commands"
        )
        return self._request("PUT", path, commands)

    # ------------------------------------------------------------ plumbing

    def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: dict | None = None,
        files: dict | None = None,
        *,
        within: float | None = None,
    ) -> Any:
        """``within``: that many seconds for the one attempt, and a 429 is raised, not waited on."""
        attempts = self._max_attempts if within is None else 1
        timeout = httpx.USE_CLIENT_DEFAULT if within is None else within
        for attempt in range(1, attempts + 1):
            try:
                response = self._http.request(method, path, json=body, params=params, files=files, timeout=timeout)
            except httpx.HTTPError as exc:
                raise DiscordError(f"{method} {_route(path)}: {type(exc).__name__}") from exc
            if response.status_code == 429 and attempt < attempts:
                wait = _retry_after(response)
                if wait <= self._max_retry_wait:
                    logger.info("discord rate limited", extra={"route": _route(path), "wait": wait})
                    self._sleep(wait)
                    continue
            if response.status_code >= 400:
                raise _error(method, path, response)
            return response.json() if response.content else None
        raise AssertionError("unreachable")  # the last attempt always returns or raises


def _id(value: str, what: str) -> str:
    """A snowflake that goes into a URL path; anything else is refused before a request is made."""
    if not is_snowflake(value):
        raise ValueError(f"malformed {what}")
    return value


def _retry_after(response: httpx.Response) -> float:
    try:
        return max(0.0, float(response.json()["retry_after"]))
    except Exception:  # noqa: BLE001 - fall back to the header, then to "too long"
        try:
            return max(0.0, float(response.headers.get("retry-after", "inf")))
        except ValueError:
            return float("inf")


def _error(method: str, path: str, response: httpx.Response) -> DiscordError:
    try:
        code = int(response.json().get("code", 0))
    except Exception:  # noqa: BLE001
        code = 0
    kind = DmsClosedError if code == DMS_CLOSED else DiscordError
    return kind(
        f"{method} {_route(path)}: HTTP {response.status_code} code {code}", status=response.status_code, code=code
    )


def _route(path: str) -> str:
    """The path without interaction tokens, for logs."""
    parts = path.split("/")
    if parts[0] == "webhooks" and len(parts) > 2:
        parts[2] = "<token>"
    return "/".join(parts)


def _message(channel_id: str, raw: dict) -> Message:
    author = raw.get("author") or {}
    name = valid_unicode(str(author.get("global_name") or author.get("username") or "someone"))
    content = valid_unicode(str(raw.get("content") or ""))
    return Message(channel_id, str(raw["id"]), str(author.get("id", "")), name, content, bool(author.get("bot")))
