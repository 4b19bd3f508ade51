"""The terminal client: talks to the local stack the way Discord would.

It signs /chat and /memory interactions with the local signing key, waits for the bot's
background work, and prints what the bot posted: its replies, its DMs to you, and the
answers only you can see.
"""

from __future__ import annotations

import itertools
import json
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..core.night.nightly_steps import scheduled_time
from ..core.night.window import WINDOW, window_for
from ..core.record.catalog import REMEMBER_THIS
from ..core.record.domain import JST, snowflake_at
from ..discord.formats import markdown_shown
from ..discord.signature import sign
from .discord_recorder import LOCAL_GUILD_ID
from .people import user_id_for
from .running import state_dir_for
from .server import ADMIN_SECRET_FILE, DEFAULT_HOST, DEFAULT_PORT, SIGNING_KEY_FILE, STATE_DIR

DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
LOCAL_CHANNEL_ID = "1100000000000000001"
HELP = """Type a message to /chat with the bot. Other commands:
  /memory show          the bot DMs you what it remembers about you
  /memory forget <id>   forget one memory (ids come from /memory show)
  /memory suggest <txt> what autocomplete would offer for forget (and why)
  /memory why <id>      when and from which of your messages a memory was learned
  /memory export [file] the bot DMs you a JSON file of all your memories and their history;
                        the client saves it (default: memorybot-export.json here) and says where
  /memory forget-all    asks to forget everything here, with a button
  /memory pause         stop the bot learning from you and using what it remembers (everywhere)
  /memory resume        start learning again, from your next message
  /memory history       what changed about you here lately (only you see it), with Undo buttons
  /memory receipts on|off   be told (or not) what each conversation changed, with Undo buttons
  /memory everywhere <id>   have one memory read in every server and DM; /memory here <id>: back here
  /because              click the last reply's "Why?" (which memories were in its prompt)
  /overnight            click the night's "Show history" button
  /undo <n>             click the history's "Undo <n>" button; /older: its "Older" button
  /remember <text>      say <text> in the channel as an ordinary message, then use the
                        "Remember this" message command on it (Apps -> Remember this)
  /remember @<name> <text>  the same on a message <name> posted: the bot refuses
  /confirm              click the last confirmation button you were shown
  /memory-settings ...  a server admin's settings (chat --admin; /memory-settings alone lists them)
  /nightly [ISO time]   run the nightly consolidation for the night about to end
                        (or for the night that time falls after, as the 03:00 JST schedule would)
  /help, /quit"""
TEXT_FORGET_WHICH = "Which memory? Give its id: /memory forget <id> (ids come from /memory show)."
TEXT_WHY_WHICH = "Which memory? Give its id: /memory why <id> (ids come from /memory show)."
TEXT_UNKNOWN_COMMAND = "Unknown command {command}: /help lists the commands (to say it to the bot: /chat {command})."


ATTACHED = "[attached file "  # how a file the bot DMed is printed: its name, then its text


def button_command(custom_id: str, label: str) -> str:
    """What to type to click a button: /confirm for forget-all's, /undo <n> for "Undo <n>" (the
    number its label ends with, in either language), /older for "Older"."""
    if custom_id.startswith("memory-forget-all"):
        return "/confirm"
    if custom_id.startswith("memory-history:"):
        return "/older"
    if custom_id.startswith("memory-because:"):
        return "/because"  # a reply's "Why?"
    if custom_id.startswith("memory-overnight:"):
        return "/overnight"  # the night's "Show history"
    number = label.split()[-1:]
    return f"/undo {number[0]}" if number and number[0].isdigit() else "/undo <n>"


class StackRefused(SystemExit):
    """The stack answered 401: this client holds another stack's key or secret."""


def memory_id_typed(text: str) -> str:
    """The id in what a person typed after /memory forget or why: the bare id, or the
    ``id:<id>`` form Discord's own command shows and the bot's DM teaches."""
    text = text.strip()
    if text[:3].lower() == "id:":
        text = text[3:].strip()
    return text


def normalize_url(text: str) -> str:
    """A stack's URL as typed: ``127.0.0.1:8787`` means http://127.0.0.1:8787; ValueError (the
    message names the form) for anything that is not an http(s) address."""
    text = text.strip()
    if "://" not in text:
        text = "http://" + text
    text = text.rstrip("/")
    parts = urlsplit(text)
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = parts._replace(netloc="")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{text!r} is not a stack's address: give e.g. http://127.0.0.1:8787")
    return text


def resolve_state_dir(state_dir: Path | None, url: str) -> Path | None:
    """The folder to read the key and secret from: the one given, else the one the stack running
    at ``url`` left a note of (so the client works from any folder), else None (this folder's
    .memorybot, then the home folder's)."""
    return state_dir or state_dir_for(url)


def refused_hint(url: str, state_dir: Path | None) -> str:
    where = f"--state-dir {state_dir}" if state_dir else f"--state-dir (default {STATE_DIR})"
    return (
        f"The stack at {url} refused this client's signature or admin secret (HTTP 401). "
        f"It keeps them in its own state dir: pass the same {where} the stack was started with "
        "(its startup lines print the folder), or run this from the folder you started it in."
    )


def bad_time_hint(text: str) -> str:
    return f'"{text}" is not an ISO 8601 time: use e.g. 2026-11-20T18:00:00Z or 2026-11-21T03:00:00+09:00.'


def parse_time(text: str) -> datetime:
    """An ISO 8601 time as the stack reads it (no zone means UTC); ValueError with the format's example."""
    try:
        datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(bad_time_hint(text)) from None
    return scheduled_time(text.strip())  # the stack's own rule: its range too (ValueError past it)


def night_about_to_end(now: datetime) -> datetime:
    """The 03:00 JST that ends the night ``now`` is in: run as of it, the nightly covers what was
    said up to now (run as of now, it would cover the 24 hours before the latest 03:00 JST)."""
    return window_for(now).end + WINDOW


def describe_window(at: datetime) -> str:
    window = window_for(at)
    start, end = (t.astimezone(JST).strftime("%Y-%m-%d %H:%M") for t in (window.start, window.end))
    return f"nightly run for JST day {window.day_label}: the messages from {start} to {end} JST"


def next_night(at: datetime) -> str:
    """The time that runs the night after the one ``at`` runs: the 03:00 JST that ends it."""
    return (window_for(at).end + WINDOW).astimezone(JST).isoformat()


def nightly_request(http: httpx.Client, url: str, admin: dict[str, str], now: str | None) -> tuple[int, dict, datetime]:
    """POST /local/nightly for the night about to end (or the night ``now`` falls after):
    (status, answer, the time it ran as of). ValueError for a time that does not parse."""
    at = parse_time(now) if now else night_about_to_end(datetime.now(UTC))
    response = http.post(f"{url}/local/nightly", json={"now": at.isoformat()}, headers=admin, timeout=600)
    return response.status_code, (response.json() if response.content else {}), at


def nightly_lines(status: int, answer: dict, at: datetime, command: str = "/nightly") -> list[str]:
    """What a nightly run as of ``at`` answered, in words; "already done" names the time that runs
    the next night (``command`` followed by it: the client's /nightly, or the CLI's)."""
    window = describe_window(at)
    if status == 200:
        return [f"Ran the {window}.", json.dumps(answer, ensure_ascii=False, indent=2)]
    if status == 409:
        return [
            f"Already done: the {window} has run (each JST day runs once; a fresh stack starts with none). "
            "To run another day, give a time at or after the 03:00 JST that ends it; the next night: "
            f"{command} {next_night(at)}"
        ]
    return [f"The nightly run did not finish (HTTP {status}): {json.dumps(answer, ensure_ascii=False)}"]


# One sequence for every client in this process: two people typing in the same millisecond
# still get distinct interaction ids, as they would from Discord.
_SEQUENCE = itertools.count(secrets.randbelow(1 << 20))


def find_signing_key(state_dir: Path | None) -> str:
    candidates = [state_dir] if state_dir else [STATE_DIR, Path.home() / STATE_DIR]
    for directory in candidates:
        path = directory / SIGNING_KEY_FILE
        if path.exists():
            return path.read_text().strip()
    where = " or ".join(str(d / SIGNING_KEY_FILE) for d in candidates)
    raise SystemExit(f"No local signing key at {where}: start the stack first (make run), from the same folder.")


def find_admin_secret(state_dir: Path | None) -> str:
    """The secret the stack's /local/* routes ask for: MEMORYBOT_ADMIN_SECRET if set (the stack
    uses it then), else the one the stack generated in its state dir."""
    import os

    if os.environ.get("MEMORYBOT_ADMIN_SECRET"):
        return os.environ["MEMORYBOT_ADMIN_SECRET"]
    candidates = [state_dir] if state_dir else [STATE_DIR, Path.home() / STATE_DIR]
    for directory in candidates:
        path = directory / ADMIN_SECRET_FILE
        if path.exists():
            return path.read_text().strip()
    where = " or ".join(str(d / ADMIN_SECRET_FILE) for d in candidates)
    raise SystemExit(
        f"No admin secret at {where} and MEMORYBOT_ADMIN_SECRET is unset: start the stack first (make run)."
    )


def no_stack_hint(url: str) -> str:
    if httpx.URL(url).host not in ("127.0.0.1", "localhost", "::1"):  # a deployed API
        return (
            f"Nothing answers at {url}: check the network and the URL (the API's base URL, "
            "https://ID.execute-api.REGION.amazonaws.com/prod, from the deploy's outputs)."
        )
    return f"No local stack answers at {url}: start it with `make run` first (or pass the --url it printed)."


def stack_answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/local/info", timeout=5)
    except httpx.HTTPError:
        return False
    return True


def elsewhere_hint(url: str) -> str:
    return (
        f"A stack answers at {url}, but its signing key is not in this folder's {STATE_DIR} and it left no note "
        "of its folder: run this from the folder it was started in, or pass --state-dir <that folder>/.memorybot."
    )


def admin_headers(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"} if secret else {}


@dataclass
class LocalClient:
    url: str
    user_name: str
    signing_key: str
    channel_id: str = LOCAL_CHANNEL_ID
    guild_id: str | None = LOCAL_GUILD_ID  # None: the person's DM with the bot
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=180))
    admin_secret: str = ""  # for the stack's /local/* routes
    state_dir: Path | None = None  # where the key and secret came from (named when the stack refuses them)
    last_button: str = ""  # custom_id of the last button the bot showed this person
    buttons: list[dict] = field(default_factory=list)  # the buttons of the bot's last answer with any
    # the last reply's "Why?": still clickable after the notice or receipt that follows the reply
    why_button: dict = field(default_factory=dict)
    locale: str = "en-US"  # the Discord client's language, as Discord sends it
    refusals: int = 0  # requests the bot refused (a --say run then exits 1)
    admin: bool = False  # send a server admin's permissions (Manage Server) instead of a member's
    files: list[tuple[str, str]] = field(default_factory=list)  # (name, text) of the files DMed to this person
    _seen: int = 0
    _application_id: str = ""

    @property
    def user_id(self) -> str:
        return user_id_for(self.user_name)

    @property
    def application_id(self) -> str:
        if not self._application_id:
            response = self.http.get(f"{self.url}/local/info", headers=self._admin)
            self._check_refused(response.status_code)
            self._application_id = response.json()["applicationId"]
        return self._application_id

    def catch_up(self) -> None:
        """Skip what the bot posted before this session started."""
        self._seen = max([self._seen] + [e["seq"] for e in self._events()])

    # ------------------------------------------------------------ what a person does

    def chat(self, text: str) -> list[str]:
        return self._command("chat", [{"type": 3, "name": "message", "value": text}])

    def show(self) -> list[str]:
        return self._command("memory", [{"type": 1, "name": "show", "options": []}])

    def forget(self, memory_id: str) -> list[str]:
        return self._command(
            "memory", [{"type": 1, "name": "forget", "options": [{"type": 3, "name": "id", "value": memory_id}]}]
        )

    def why(self, memory_id: str) -> list[str]:
        return self._command(
            "memory", [{"type": 1, "name": "why", "options": [{"type": 3, "name": "id", "value": memory_id}]}]
        )

    def export(self) -> list[str]:
        return self._command("memory", [{"type": 1, "name": "export", "options": []}])

    def export_to(self, path: str = "") -> list[str]:
        """/memory export, the file it DMs saved to ``path`` (default: ``memorybot-export.json`` in
        this folder; a folder: that name inside it), and where it went said in place of its text."""
        self.files.clear()
        lines = [line for line in self.export() if not line.startswith(ATTACHED)]
        for name, content in self.files:
            target = Path(path).expanduser() if path else Path(name)
            if target.is_dir():
                target = target / name
            try:
                target.write_text(content, encoding="utf-8")
            except OSError as exc:
                lines.append(f"[attached file {name}: not saved to {target}: {exc.strerror or exc}]")
                continue
            lines.append(f"[attached file {name}: saved to {target.resolve()} ({len(content.encode())} bytes)]")
        return lines

    def forget_all(self) -> list[str]:
        return self._command("memory", [{"type": 1, "name": "forget-all", "options": []}])

    def pause(self) -> list[str]:
        return self._command("memory", [{"type": 1, "name": "pause", "options": []}])

    def resume(self) -> list[str]:
        return self._command("memory", [{"type": 1, "name": "resume", "options": []}])

    def history(self) -> list[str]:
        return self._command("memory", [{"type": 1, "name": "history", "options": []}])

    def receipts(self, enabled: bool) -> list[str]:
        option = {"type": 5, "name": "enabled", "value": enabled}
        return self._command("memory", [{"type": 1, "name": "receipts", "options": [option]}])

    def everywhere(self, memory_id: str) -> list[str]:
        return self._move("everywhere", memory_id)

    def here(self, memory_id: str) -> list[str]:
        return self._move("here", memory_id)

    def _move(self, name: str, memory_id: str) -> list[str]:
        return self._command(
            "memory", [{"type": 1, "name": name, "options": [{"type": 3, "name": "id", "value": memory_id}]}]
        )

    def forget_all_everywhere(self) -> list[str]:
        """/memory forget-all everywhere:true (the "everywhere" memories too)."""
        option = {"type": 5, "name": "everywhere", "value": True}
        return self._command("memory", [{"type": 1, "name": "forget-all", "options": [option]}])

    def button_starting(self, prefix: str) -> list[str]:
        """Click the newest button shown whose custom_id starts with ``prefix`` (a reply's "Why?",
        the night's "Show history")."""
        shown = [*([self.why_button] if self.why_button else []), *self.buttons]
        chosen = [b for b in shown if b.get("custom_id", "").startswith(prefix)]
        return self.click(chosen[-1]["custom_id"]) if chosen else ["(no such button shown lately)"]

    def history_button(self, word: str) -> list[str]:
        """Click the last history page's "Undo <n>" (``word`` a number) or its "Older" button."""
        prefix = "memory-history:" if word == "older" else "memory-undo:"
        undo = [b for b in self.buttons if b.get("custom_id", "").startswith(prefix)]
        chosen = undo[-1:] if word == "older" else [b for b in undo if b.get("label", "").split()[-1:] == [word]]
        if not chosen:
            return ["(no such button on the last history page: /memory history shows them)"]
        return self.click(chosen[0]["custom_id"])

    def click(self, custom_id: str | None = None, *, wait: bool = True) -> list[str]:
        """Click a button (the last one shown, unless ``custom_id`` names another) as Discord
        sends it: a MESSAGE_COMPONENT interaction carrying the button's custom_id. A forget-all's
        deletes run as a job: with ``wait``, its update of the confirmation is shown too."""
        custom_id = custom_id or self.last_button
        if not custom_id:
            return ["(no button to click: ask with /memory forget-all first)"]
        payload = self._payload("", [], kind=3)
        payload["data"] = {"custom_id": custom_id, "component_type": 2}
        status, answer = self.send(payload)
        if status != 200:
            return [self._refusal(status, answer)]
        data = answer.get("data") or {}
        updated = (
            "(the confirmation now reads) " if custom_id.startswith("memory-forget-all") else "(the page now reads) "
        )
        prefix = "(only you can see this) " if data.get("flags", 0) & 64 else updated
        lines = [f"memorybot: {prefix}{markdown_shown(data.get('content', ''))}", *self._buttons(data)]
        if wait and custom_id.startswith("memory-forget-all"):
            # The deletes run as a job, which rewrites the confirmation when it is done.
            self.http.post(f"{self.url}/local/drain", headers=self._admin)
            lines += [
                line.replace("memorybot: ", f"memorybot: {updated}", 1) for line in self._posted(payload["token"])
            ]
        return lines

    def _buttons(self, data: dict) -> list[str]:
        """The answer's buttons, remembered for /confirm, /undo and /older, each with the command
        that clicks it."""
        buttons = [b for row in data.get("components") or [] for b in row.get("components") or []]
        if buttons:
            self.buttons = buttons
        self.why_button = next(
            (b for b in buttons if b.get("custom_id", "").startswith("memory-because:")), self.why_button
        )
        lines = []
        for button in buttons:
            self.last_button = button.get("custom_id", "")
            label = button.get("label", "")
            lines.append(f"  [button: {label}] (type {button_command(self.last_button, label)} to click it)")
        return lines

    def remember(self, content: str, author: str | None = None) -> list[str]:
        """Post ``content`` in the channel as an ordinary message of ``author`` (by default this
        person), then use "Remember this" on it."""
        message = self.post_message(content, author)
        return self._interact(self.remember_payload(message))

    def post_message(self, content: str, author: str | None = None) -> dict:
        """``content`` said in the channel as an ordinary message of ``author`` (by default this
        person): the message as Discord resolves it for a message command."""
        author_name = author or self.user_name
        author_id = user_id_for(author_name)
        said = {"channel_id": self.channel_id, "author_id": author_id, "author_name": author_name, "content": content}
        response = self.http.post(f"{self.url}/local/discord/someone-said", json=said, headers=self._admin)
        self._check_refused(response.status_code)
        message_id = response.json()["id"] if response.status_code == 200 else snowflake_at(datetime.now(UTC))
        return {
            "id": message_id,
            "channel_id": self.channel_id,
            "type": 0,
            "content": content,
            "author": {"id": author_id, "username": author_name},
        }

    def remember_payload(self, message: dict) -> dict:
        """ "Remember this" on ``message`` as Discord sends the message command (each a new
        interaction): the message itself in ``data.resolved.messages``."""
        data = {
            "name": REMEMBER_THIS,
            "type": 3,
            "target_id": message["id"],
            "resolved": {"messages": {message["id"]: message}},
        }
        return self._payload(REMEMBER_THIS, [], data=data)

    def remember_typed(self, typed: str) -> list[str]:
        """/remember <text> (your own message) or /remember @<name> <text> (someone else's)."""
        author, _, text = typed.partition(" ") if typed.startswith("@") else ("", "", typed)
        if not text.strip():
            return ["Give the message to remember: /remember <text> (or /remember @<name> <text>)."]
        return self.remember(text.strip(), author[1:] or None)

    def suggest(self, typed: str, subcommand: str = "forget") -> list[str]:
        option = {"type": 3, "name": "id", "value": typed, "focused": True}
        status, answer = self.send(
            self._payload("memory", [{"type": 1, "name": subcommand, "options": [option]}], kind=4)
        )
        choices = (answer.get("data") or {}).get("choices", []) if status == 200 else []
        return [f"  {c['value']}: {c['name']}" for c in choices] or ["  (no suggestions)"]

    def settings(self, typed: str) -> list[str]:
        """/memory-settings as Discord sends it, from what was typed after it (SETTINGS_HELP)."""
        options = settings_options(typed)
        if options is None:
            return [SETTINGS_HELP]
        return self._command("memory-settings", options)

    def nightly(self, now: str | None = None) -> list[str]:
        try:
            status, answer, at = nightly_request(self.http, self.url, self._admin, now)
        except ValueError as exc:
            return [str(exc)]
        self._check_refused(status)
        return nightly_lines(status, answer, at)

    # ------------------------------------------------------------ plumbing

    @property
    def _admin(self) -> dict[str, str]:
        return admin_headers(self.admin_secret)

    def _refusal(self, status: int, answer: dict) -> str:
        self.refusals += 1
        reason = answer.get("error") if isinstance(answer, dict) else None
        return f"(the bot refused the request: HTTP {status}{f': {reason}' if reason else ''})"

    def _check_refused(self, status: int) -> None:
        if status == 401:
            raise StackRefused(refused_hint(self.url, self.state_dir))

    def _payload(self, name: str, options: list, kind: int = 2, data: dict | None = None) -> dict:
        payload: dict[str, Any] = {
            "id": snowflake_at(datetime.now(UTC), next(_SEQUENCE)),
            "application_id": self.application_id,
            "type": kind,
            "token": secrets.token_urlsafe(24),
            "channel_id": self.channel_id,
            "locale": self.locale,
            "data": data or {"name": name, "options": options},
        }
        user = {"id": self.user_id, "username": self.user_name}
        if self.guild_id is None:  # as Discord sends a command in the bot's DM
            return {**payload, "context": 1, "channel": {"id": self.channel_id, "type": 1}, "user": user}
        permissions = ADMIN_PERMISSIONS if self.admin else MEMBER_PERMISSIONS
        return {
            **payload,
            "guild_id": self.guild_id,
            "context": 0,
            "member": {"user": user, "permissions": permissions},
        }

    def send(self, payload: dict) -> tuple[int, dict]:
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json", **sign(self.signing_key, body)}
        response = self.http.post(f"{self.url}/interactions", content=body, headers=headers)
        return response.status_code, (response.json() if response.content else {})

    def _command(self, name: str, options: list) -> list[str]:
        return self._interact(self._payload(name, options))

    def _interact(self, payload: dict) -> list[str]:
        status, answer = self.send(payload)
        lines: list[str] = []
        self._check_refused(status)
        if status != 200:
            return [self._refusal(status, answer)]
        data = answer.get("data") or {}
        if data.get("content"):
            prefix = "(only you can see this) " if data.get("flags", 0) & 64 else ""
            lines.append(f"memorybot: {prefix}{markdown_shown(data['content'])}")
        lines += self._buttons(data)
        drained = self.http.post(
            f"{self.url}/local/drain", headers=self._admin
        ).json()  # reply and extraction run in the background
        # A deferred answer Discord was told is ephemeral stays so when the bot fills it in.
        deferred_ephemeral = answer.get("type") == 5 and bool(data.get("flags", 0) & 64)
        posted = list(self._posted(payload["token"], deferred_ephemeral))
        if answer.get("type") == 5 and not posted:
            failed = drained.get("failedInvocations", 0)
            posted.append(
                f"(no reply was posted; {failed} background invocation(s) failed so far: see the stack's output)"
            )
        return lines + posted

    def _posted(self, token: str, deferred_ephemeral: bool = False) -> Iterable[str]:
        for event in self._events():
            self._seen = max(self._seen, event["seq"])
            content = (event.get("body") or {}).get("content", "")
            content = markdown_shown(content)  # as Discord shows it: its escapes are not seen
            if event["kind"] == "edit" and event["interaction_token"] == token:
                yield f"memorybot: {'(only you can see this) ' if deferred_ephemeral else ''}{content}"
                yield from self._buttons(event.get("body") or {})
            elif event["kind"] == "followup" and event["interaction_token"] == token:
                ephemeral = (event.get("body") or {}).get("flags", 0) & 64
                yield f"memorybot: {'(only you can see this) ' if ephemeral else ''}{content}"
                yield from self._buttons(event.get("body") or {})
            elif event["kind"] == "message" and event["recipient_id"] == self.user_id:
                yield f"[DM from memorybot to {self.user_name}]\n{content}"
                for attachment in event.get("attachments") or []:
                    self.files.append((attachment["filename"], attachment["text"]))
                    yield f"{ATTACHED}{attachment['filename']}]\n{attachment['text']}"

    def _events(self) -> list[dict]:
        """What the bot posted since last time (empty when the stack talks to real Discord)."""
        response = self.http.get(f"{self.url}/local/discord/events", params={"after": self._seen}, headers=self._admin)
        self._check_refused(response.status_code)
        return response.json()["events"] if response.status_code == 200 else []

    def handle_line(self, line: str) -> list[str] | None:
        """One typed line; None means quit. A line that is not a command is said to the bot."""
        line = line.strip()
        if line in ("/quit", "/exit"):
            return None
        if not line.startswith("/"):
            return self.chat(line) if line else []
        name, rest = command_of(line)
        action = TYPED_COMMANDS.get(name)
        if action is None:  # a mistyped command is not something to say to the bot
            return [TEXT_UNKNOWN_COMMAND.format(command=name)]
        return action(self, rest)

    def with_memory_id(self, typed: str, act: Callable[[str], list[str]], which: str) -> list[str]:
        """``act`` on the id typed after /memory forget or why; without one, ``which`` asks for it."""
        memory_id = memory_id_typed(typed)
        return act(memory_id) if memory_id else [which]


# A server member's permissions as Discord sends them (view, send, read history, use commands), and
# a server admin's: the same with Manage Server (1 << 5).
MEMBER_PERMISSIONS = str((1 << 10) | (1 << 11) | (1 << 16) | (1 << 31))
ADMIN_PERMISSIONS = str(int(MEMBER_PERMISSIONS) | (1 << 5))
SETTINGS_HELP = """/memory-settings (server admins: start the client with --admin):
  show                              the settings, who changed them, the server's figures
  memory on|off                     memory in this whole server
  channels all | only <channel id> | except <channel id>
  persona <text>                    the community's instructions for replies (nothing: clears)
  diary <channel id> | off | language ja|en
  daily-limit <turns>               /chat turns per member a day (0: none)
  language auto|en|ja               the bot's answers here"""


def settings_options(typed: str) -> list[dict] | None:
    """The options Discord sends for what was typed after /memory-settings; None when it does not parse."""
    words = typed.split()
    if not words:
        return None
    name, rest = words[0], words[1:]

    def sub(sub_name: str, *options: dict) -> list[dict]:
        return [{"type": 1, "name": sub_name, "options": list(options)}]

    if name == "show" and not rest:
        return sub("show")
    if name == "memory" and rest in (["on"], ["off"]):
        return sub("memory", {"type": 5, "name": "enabled", "value": rest[0] == "on"})
    if name == "channels" and rest and rest[0] in ("all", "only", "except") and len(rest) <= 2:
        channel = [{"type": 7, "name": "channel", "value": rest[1]}] if len(rest) == 2 else []
        return sub("channels", {"type": 3, "name": "mode", "value": rest[0]}, *channel)
    if name == "persona":
        text = typed.strip()[len("persona") :].strip()
        return sub("persona", *([{"type": 3, "name": "text", "value": text}] if text else []))
    if name == "diary" and rest == ["off"]:
        return [{"type": 2, "name": "diary", "options": [{"type": 1, "name": "off", "options": []}]}]
    if name == "diary" and len(rest) == 2 and rest[0] == "language":
        language = {"type": 1, "name": "language", "options": [{"type": 3, "name": "value", "value": rest[1]}]}
        return [{"type": 2, "name": "diary", "options": [language]}]
    if name == "diary" and len(rest) == 1:
        diary_channel = {"type": 1, "name": "channel", "options": [{"type": 7, "name": "channel", "value": rest[0]}]}
        return [{"type": 2, "name": "diary", "options": [diary_channel]}]
    if name == "daily-limit" and len(rest) == 1 and rest[0].isdigit():
        return sub("daily-limit", {"type": 4, "name": "turns", "value": int(rest[0])})
    if name == "language" and len(rest) == 1:
        return sub("language", {"type": 3, "name": "value", "value": rest[0]})
    return None


def command_of(line: str) -> tuple[str, str]:
    """(the command's name, the rest of the line): "/memory why id:ab12c" is ("/memory why", "id:ab12c")."""
    words = line.split(maxsplit=2)
    if words[0] == "/memory" and len(words) > 1:
        return f"/memory {words[1]}", words[2] if len(words) > 2 else ""
    return words[0], line[len(words[0]) :].strip()


# What each typed command does with the rest of the line (HELP lists them).
TYPED_COMMANDS: dict[str, Callable[[LocalClient, str], list[str]]] = {
    "/help": lambda client, _rest: [HELP],
    "/chat": lambda client, rest: client.chat(rest) if rest else ["Say something after /chat."],
    "/memory show": lambda client, _rest: client.show(),
    "/memory forget": lambda client, rest: client.with_memory_id(rest, client.forget, TEXT_FORGET_WHICH),
    "/memory suggest": lambda client, rest: client.suggest(rest),
    "/memory why": lambda client, rest: client.with_memory_id(rest, client.why, TEXT_WHY_WHICH),
    "/memory export": lambda client, rest: client.export_to(rest),
    "/memory forget-all": lambda client, _rest: client.forget_all(),
    "/memory pause": lambda client, _rest: client.pause(),
    "/memory resume": lambda client, _rest: client.resume(),
    "/memory history": lambda client, _rest: client.history(),
    "/memory receipts": lambda client, rest: client.receipts(
        rest.strip().lower() not in ("off", "false", "enabled:false")
    ),
    "/memory everywhere": lambda client, rest: client.with_memory_id(rest, client.everywhere, TEXT_FORGET_WHICH),
    "/memory here": lambda client, rest: client.with_memory_id(rest, client.here, TEXT_FORGET_WHICH),
    "/because": lambda client, _rest: client.button_starting("memory-because"),
    "/overnight": lambda client, _rest: client.button_starting("memory-overnight"),
    "/undo": lambda client, rest: client.history_button(rest.split()[0] if rest else "undo"),
    "/older": lambda client, _rest: client.history_button("older"),
    "/remember": lambda client, rest: client.remember_typed(rest),
    "/confirm": lambda client, _rest: client.click(),
    "/nightly": lambda client, rest: client.nightly(rest or None),
    "/memory-settings": lambda client, rest: client.settings(rest),
}


def run(
    url: str,
    user_name: str,
    says: list[str],
    state_dir: Path | None,
    channel_id: str = LOCAL_CHANNEL_ID,
    guild_id: str | None = LOCAL_GUILD_ID,
    *,
    locale: str = "en-US",
    admin: bool = False,
) -> int:
    url = url.rstrip("/")
    state_dir = resolve_state_dir(state_dir, url)
    try:
        signing_key, admin_secret = find_signing_key(state_dir), find_admin_secret(state_dir)
    except SystemExit:
        if stack_answers(url):
            raise SystemExit(elsewhere_hint(url)) from None
        raise
    client = LocalClient(
        url,
        user_name,
        signing_key,
        channel_id,
        guild_id,
        admin_secret=admin_secret,
        state_dir=state_dir,
        locale=locale,
        admin=admin,
    )
    try:
        client.catch_up()
    except httpx.HTTPError:
        raise SystemExit(no_stack_hint(url)) from None
    if says:
        print(f"({user_name} is user id {client.user_id})")
        for line in says:
            print(f"{user_name}> {line}")
            for printed in _handle(client, line) or []:
                print(printed)
        return 1 if client.refusals else 0
    print(f"Chatting as {user_name} (user id {client.user_id}) on {url}. /help for commands.")
    while True:
        try:
            line = input(f"{user_name}> ")
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        out = _handle(client, line)
        if out is None:
            return 0
        for text in out:
            print(text)


def _handle(client: LocalClient, line: str) -> list[str] | None:
    try:
        return client.handle_line(line)
    except httpx.TransportError:  # the stack stopped while we talked
        raise SystemExit(no_stack_hint(client.url)) from None
