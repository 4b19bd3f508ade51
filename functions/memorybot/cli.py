"""`memorybot`: run the local stack, chat with it, register the slash commands, run a nightly,
import memories (operators), check a deployed stack (doctor), score the configured models (eval)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .ops.setup import SETUP_FAILED  # the environment stopped the command: one line says the fix

DEFAULT_STATE_DIR = Path(".memorybot")
INTERRUPTED = 130  # Ctrl-C, as a shell reports it

# The environment variables each command reads, listed in its --help (the variables of the
# stack itself are in docs/configuration.md).
_ADMIN = {
    "MEMORYBOT_ADMIN_SECRET": "the admin secret (a deployed stack's; locally it is read from --state-dir)",
    "MEMORYBOT_RUNTIME_DIR": "where running local stacks leave their note (default ~/.memorybot/running)",
}
_AWS = {
    "AWS_REGION, AWS_DEFAULT_REGION": "the region, in that order after --region",
    "AWS_PROFILE": "an AWS CLI profile (or the usual credential chain: AWS_ACCESS_KEY_ID, ...)",
}
COMMAND_VARIABLES: dict[str, dict[str, str]] = {
    "local": {
        "MEMORYBOT_*, JEV_*, OPENAI_*, BEDROCK_*, DISCORD_*": "the stack's settings (docs/configuration.md)",
        "AWS_ENDPOINT_URL_DYNAMODB": "a DynamoDB to use instead of moto in this process",
        "MEMORYBOT_RUNTIME_DIR": _ADMIN["MEMORYBOT_RUNTIME_DIR"],
    },
    "chat": _ADMIN,
    "register-commands": {
        "DISCORD_APPLICATION_ID": "the application's id (developer portal -> General Information)",
        "DISCORD_BOT_TOKEN": "the bot token, or DISCORD_BOT_TOKEN_SECRET_NAME: the Secrets Manager secret holding it",
        "DISCORD_API_BASE": "Discord's API (default https://discord.com/api/v10)",
        **_AWS,
    },
    "nightly": _ADMIN,
    "rollback": _ADMIN,
    "erase": _ADMIN,
    "import": _ADMIN,
    "doctor": {**_AWS, "DISCORD_API_BASE": "Discord's API (default https://discord.com/api/v10)"},
    "eval": {
        "MEMORYBOT_DECISION_MODEL, MEMORYBOT_CHAT_MODEL": "the backends to score (http, bedrock, openai, offline)",
        "JEV_*, OPENAI_*, BEDROCK_*, MEMORYBOT_MODEL_*": "their settings, as deployed (docs/configuration.md)",
        "MEMORYBOT_MODEL_PRICES": "USD per million input and output tokens by model id, for the cost column",
        **_AWS,
    },
}


def _variables(command: str) -> str:
    width = max(map(len, COMMAND_VARIABLES[command]))
    rows = [f"  {name.ljust(width)}  {meaning}" for name, meaning in COMMAND_VARIABLES[command].items()]
    return "environment variables:\n" + "\n".join(rows)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memorybot")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _setup_failed(message: str) -> int:
    print(message, file=sys.stderr)
    return SETUP_FAILED


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port: give a number from 1 to 65535, or 0 for any free port"
        )
    return port


def _sample(text: str) -> int:
    try:
        sample = int(text)
    except ValueError:
        sample = 0
    if sample < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a sample size: give a number of turns, 1 or more")
    return sample


def _user_name(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("give a name, e.g. --user alice (the same name is the same person)")
    return text.strip()


def _snowflake(text: str) -> str:
    from .discord.formats import is_snowflake  # the rule the stack applies, checked before sending

    if not is_snowflake(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a Discord id: give its digits (e.g. 1200000000000000001), or leave it out "
            "for the one local server and channel"
        )
    return text


def _url(text: str) -> str:
    from .local.client import normalize_url

    try:
        return normalize_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def command_name() -> str:
    """How to run this command again, as typed in this shell: `memorybot` only when it is on PATH
    (an activated venv), else the console script's path (e.g. `.venv/bin/memorybot`)."""
    script = Path(sys.executable).parent / "memorybot"
    on_path = shutil.which("memorybot")
    if on_path and script.exists() and Path(on_path).resolve() == script.resolve():
        return "memorybot"
    if not script.exists():
        return f"{sys.executable} -m memorybot.cli"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memorybot", description="Per-person long-term memory for a Discord bot.")
    parser.add_argument("--version", action="version", version=f"memorybot {_version()}")
    sub = parser.add_subparsers(dest="command")

    def command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """A subcommand whose --help ends with the environment variables it reads."""
        return sub.add_parser(
            name, epilog=_variables(name), formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs
        )

    local = command("local", help="run the whole bot locally, in the foreground")
    local.add_argument("--host", default="127.0.0.1")
    local.add_argument("--port", type=_port, default=8787, help="0 picks a free port")
    local.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR, help="where the local signing key is kept")

    chat = command("chat", help="a terminal client for the local stack")
    chat.add_argument("--user", required=True, type=_user_name, help="your name (the same name is the same person)")
    chat.add_argument("--url", type=_url, default="http://127.0.0.1:8787")
    chat.add_argument("--say", action="append", default=[], help="send this line and exit (repeatable)")
    chat.add_argument("--channel", type=_snowflake, default=None, help="channel id (default: the one local channel)")
    where = chat.add_mutually_exclusive_group()
    where.add_argument(
        "--guild",
        type=_snowflake,
        default=None,
        help="server id (default: the one local server); memories stay in their server",
    )
    where.add_argument("--dm", action="store_true", help="talk in your DM with the bot (its own memory scope)")
    chat.add_argument("--state-dir", type=Path, default=None, help="where to find the local signing key")
    chat.add_argument("--locale", default="en-US", help="your Discord language, as Discord sends it (e.g. ja)")
    chat.add_argument(
        "--admin", action="store_true", help="as a server admin (Manage Server): /memory-settings works; else a member"
    )

    register = command(
        "register-commands", help='install /chat, /memory and "Remember this" on Discord (bulk overwrite)'
    )
    register.add_argument("--guild", default=None, help="a guild id: instant, for testing (default: global)")
    register.add_argument(
        "--region",
        default=None,
        help="the region of DISCORD_BOT_TOKEN_SECRET_NAME (default: AWS_REGION, AWS_DEFAULT_REGION)",
    )

    nightly = command(
        "nightly",
        help="run the nightly consolidation on a LOCAL stack now (a deployed one: docs/deploy.md, a night by hand)",
    )
    nightly.add_argument("--url", type=_url, default="http://127.0.0.1:8787")
    nightly.add_argument(
        "--now",
        default=None,
        help="ISO 8601 time to run as of: the night before the latest 03:00 JST at or before it "
        "(default: the night about to end, so what was just said is in it)",
    )
    nightly.add_argument("--state-dir", type=Path, default=None, help="where to find the stack's admin secret")

    admin_help = (
        "the local stack's (default) or a deployed API's base URL, e.g. https://…/prod "
        "(set MEMORYBOT_ADMIN_SECRET for a deployed one)"
    )
    rollback = command("rollback", help="undo a nightly run: shows a dry run, then asks to confirm")
    rollback.add_argument("--run-id", type=int, default=None, help="the run to undo (default: the latest)")
    erase = command("erase", help="erase everything stored about a person: a dry run, then asks to confirm")
    who = erase.add_mutually_exclusive_group(required=True)
    who.add_argument("--user", type=_user_name, help="the person's name, as in chat --user (local stack)")
    who.add_argument("--user-id", type=_snowflake, help="the person's Discord user id")
    for admin in (rollback, erase):
        admin.add_argument("--url", type=_url, default="http://127.0.0.1:8787", help=admin_help)
        admin.add_argument("--state-dir", type=Path, default=None, help="where to find the local stack's admin secret")
        admin.add_argument("--yes", action="store_true", help="skip the confirmation (the dry run is still shown)")

    imports = command(
        "import",
        help='import memories into a stack: a /memory export file, or {"memories": [rows]} (operators)',
    )
    imports.add_argument("file", type=Path, help="the JSON file")
    imports.add_argument(
        "--url",
        type=_url,
        default="http://127.0.0.1:8787",
        help="the stack: local, or a deployed API's base URL (.../prod)",
    )
    imports.add_argument("--dry-run", action="store_true", help="check every row and count, write nothing")
    imports.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="where to find the local stack's admin secret (MEMORYBOT_ADMIN_SECRET, if set, is used instead)",
    )

    doctor = command("doctor", help="check a deployed stack and its Discord application (read-only: changes nothing)")
    doctor.add_argument("--stack-name", default="MemoryBot", help="the CloudFormation stack (context stack_name)")
    doctor.add_argument(
        "--region", default=None, help="the stack's region (default: AWS_REGION, AWS_DEFAULT_REGION, your profile's)"
    )
    doctor.add_argument("--profile", default=None, help="an AWS CLI profile (default: the usual credential chain)")
    doctor.add_argument("--guild", default=None, help="check the commands registered for this guild, not global ones")
    doctor.add_argument(
        "--discord-api-base", default=None, help="the Discord API base URL (default: DISCORD_API_BASE or Discord's)"
    )

    evaluation = command(
        "eval",
        help="ask the configured decision and chat models the generated English and Japanese turns, and score them",
    )
    evaluation.add_argument(
        "--sample", type=_sample, default=24, help="turns a language, from the start of its file (default 24)"
    )
    evaluation.add_argument(
        "--lang", choices=("en", "ja"), action="append", default=None, help="one language (repeatable; default both)"
    )
    evaluation.add_argument("--json", action="store_true", help="print the figures as JSON instead of the table")
    evaluation.add_argument(
        "--data", type=Path, default=None, help="the folder of eval_en.jsonl and eval_ja.jsonl (default: the repo's)"
    )

    args = parser.parse_args(argv)
    if args.command is None:  # plain `memorybot`: what it can do, not a usage error
        parser.print_help()
        return 0
    commands = {
        "local": _local,
        "chat": _chat,
        "register-commands": _register,
        "nightly": _nightly,
        "rollback": _operator,
        "erase": _operator,
        "import": _import,
        "doctor": _doctor,
        "eval": _eval,
    }
    try:
        return commands[args.command](args)
    except KeyboardInterrupt:  # Ctrl-C while a request was on its way: no traceback
        print(file=sys.stderr)
        return INTERRUPTED


def _local(args: argparse.Namespace) -> int:
    import threading

    from .local import running, server

    # Ctrl-C and `kill` (SIGTERM) end the stack at once from the moment it can be signalled, at any
    # size: its data is meant to go with the process, so nothing is drained or torn down.
    stop = _Stop()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        stack = server.start(args.host, args.port, args.state_dir)
    except OSError as exc:  # most often: the port is taken (another stack still running?)
        print(port_taken_hint(args.host, args.port, exc), file=sys.stderr)
        return 1
    with stop.held():  # a signal now waits for the note to be written, then removes it
        stop.note = running.leave_note(stack.url, args.state_dir)
    for line in stack.notes:
        print(f"  {line}")
    print(f"memorybot local stack ready at {stack.url}", flush=True)
    state = "" if args.state_dir == DEFAULT_STATE_DIR else f" --state-dir {args.state_dir}"
    print(f"  Interactions endpoint: {stack.url}/interactions")
    print(f"  Chat with it from this folder: {command_name()} chat --user alice --url {stack.url}{state}")
    print("  Stop it with Ctrl-C (its data goes with it).", flush=True)
    threading.Event().wait()
    return 0


class _Stop:
    """The local stack's SIGINT and SIGTERM handler: remove the stack's note and leave, now."""

    def __init__(self) -> None:
        self.note: Path | None = None
        self._held = False
        self._pending: int | None = None

    def __call__(self, signum: int, _frame: object) -> None:
        if self._held:
            self._pending = signum
            return
        self.now(signum)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self._held = True
        try:
            yield
        finally:
            self._held = False
            if self._pending is not None:
                self.now(self._pending)

    def now(self, signum: int) -> None:
        from .local import running

        if signum == signal.SIGINT:
            print("stopping", flush=True)
        running.remove_note(self.note)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # no drain, no teardown: a large heap is not freed object by object


def port_taken_hint(host: str, port: int, exc: OSError) -> str:
    """Why the stack cannot start, and a way round it that works however it was started."""
    import socket

    with socket.socket() as probe:  # a port that is free now, to name in the advice
        probe.bind((host, 0))
        free = probe.getsockname()[1]
    return (
        f"Cannot listen on {host}:{port}: {exc.strerror or exc}. If another memorybot stack is running there, "
        f"chat with it ({command_name()} chat --user alice --url http://{host}:{port}) or stop it (Ctrl-C in its "
        f"terminal). To run a second one, pick another port: make run PORT={free} "
        f"(or {command_name()} local --port {free}; 0 picks any free port)."
    )


def _chat(args: argparse.Namespace) -> int:
    from .local import client
    from .local.people import dm_channel_for

    if args.dm:
        return client.run(
            args.url,
            args.user,
            args.say,
            args.state_dir,
            args.channel or dm_channel_for(args.user),
            None,
            locale=args.locale,
            admin=args.admin,
        )
    channel = args.channel or client.LOCAL_CHANNEL_ID
    guild = args.guild or client.LOCAL_GUILD_ID
    return client.run(
        args.url, args.user, args.say, args.state_dir, channel, guild, locale=args.locale, admin=args.admin
    )


def _register(args: argparse.Namespace) -> int:
    from .adapters.discord_rest import DiscordRest
    from .config import Settings
    from .core.record.ports import DiscordError
    from .discord.requests import COMMANDS
    from .ops.doctor import command_label
    from .ops.setup import aws_problem, use_region

    region = use_region(args.region)
    try:
        config = Settings.from_env()
    except ValueError as exc:
        return _setup_failed(str(exc))
    app_id = config.discord_application_id
    secret_name = config.secret_names.get("DISCORD_BOT_TOKEN", "")
    if not app_id:
        token_too = "" if secret_name or config.plain_secrets.get("DISCORD_BOT_TOKEN") else " and DISCORD_BOT_TOKEN"
        return _setup_failed(f"Set DISCORD_APPLICATION_ID (developer portal -> General Information){token_too}.")
    try:
        token = config.secret("DISCORD_BOT_TOKEN")
    except Exception as exc:  # noqa: BLE001 - reading the secret: the environment's problem, said in one line
        problem = aws_problem(exc, region=region, reading=f"the secret {secret_name}")
        if problem is None:
            raise
        return _setup_failed(problem)
    if not token:
        return _setup_failed(
            "Set DISCORD_BOT_TOKEN, or DISCORD_BOT_TOKEN_SECRET_NAME=memorybot/discord-bot-token to read it from "
            "Secrets Manager."
        )
    try:
        registered = DiscordRest(config.discord_api_base, token).bulk_overwrite_commands(app_id, COMMANDS, args.guild)
    except DiscordError as exc:
        return _setup_failed(_discord_problem(exc, config.discord_api_base, args.guild))
    where = f"guild {args.guild}" if args.guild else "all guilds (global commands can take a while to appear)"
    print(f"Registered {', '.join(command_label(c) for c in registered)} for {where}.")
    return 0


def _discord_problem(exc: Exception, api_base: str, guild: str | None) -> str:
    status = getattr(exc, "status", 0)
    if not status:
        return f"Cannot reach Discord at {api_base}: check the network (or DISCORD_API_BASE)."
    if status == 401:
        return (
            "Discord refused the bot token (HTTP 401): put the current one (developer portal -> Bot -> Reset Token) "
            "in DISCORD_BOT_TOKEN or its secret."
        )
    if status in (403, 404):
        where = f" and that the bot is in guild {guild}" if guild else ""
        return f"Discord refused the registration (HTTP {status}): check DISCORD_APPLICATION_ID is this bot's{where}."
    return f"Discord answered HTTP {status}: try again in a minute."


def _nightly(args: argparse.Namespace) -> int:
    import httpx

    from .local import client

    url = args.url
    state_dir = client.resolve_state_dir(args.state_dir, url)
    secret = _admin_secret(state_dir)
    if secret is None:
        return SETUP_FAILED
    try:
        with httpx.Client() as http:
            status, answer, at = client.nightly_request(http, url, client.admin_headers(secret), args.now)
    except ValueError as exc:
        print(f"--now: {exc}", file=sys.stderr)
        return 2
    except httpx.TransportError:
        return _setup_failed(client.no_stack_hint(url))
    if status == 401:
        print(client.refused_hint(url, state_dir), file=sys.stderr)
        return 1
    lines = client.nightly_lines(status, answer, at, f"{command_name()} nightly --now")
    print("\n".join(lines), file=sys.stdout if status == 200 else sys.stderr)
    return 0 if status == 200 else 1


def _operator(args: argparse.Namespace) -> int:
    import httpx

    from .local import client
    from .local.operator import Operator
    from .local.people import user_id_for

    secret = _admin_secret(client.resolve_state_dir(args.state_dir, args.url))
    if secret is None:
        return SETUP_FAILED
    complain = functools.partial(print, file=sys.stderr)
    try:
        with httpx.Client(timeout=120) as http:
            operator = Operator(http, args.url, secret, complain=complain)
            if args.command == "rollback":
                return operator.rollback(args.run_id, yes=args.yes)
            return operator.erase(args.user_id or user_id_for(args.user), yes=args.yes)
    except httpx.TransportError:
        return _setup_failed(client.no_stack_hint(args.url))


def _admin_secret(state_dir: Path | None) -> str | None:
    """The admin secret (MEMORYBOT_ADMIN_SECRET, or the local stack's); None, with the fix said, if there is none."""
    from .local import client

    try:
        return client.find_admin_secret(state_dir)
    except SystemExit:
        _setup_failed(
            "No admin secret: for a deployed stack set MEMORYBOT_ADMIN_SECRET; for a local one run this from "
            "the folder it was started in, or pass its --state-dir."
        )
        return None


# Answers after which the same request is simply sent again: the admin routes' throttle (429),
# an interrupted import (503) or one cut by API Gateway's 29 s (504). Safe, as every row is
# imported once whatever the number of attempts.
IMPORT_RETRY_STATUSES = frozenset({429, 502, 503, 504})
IMPORT_ATTEMPTS = 6
IMPORT_BACKOFF_SECONDS = 1.0  # doubled after each answer, up to 10 s


def _post_import(http: Any, url: str, body: dict, headers: dict) -> Any:
    import time

    for attempt in range(IMPORT_ATTEMPTS):
        response = http.post(url, json=body, headers=headers)
        if response.status_code not in IMPORT_RETRY_STATUSES or attempt == IMPORT_ATTEMPTS - 1:
            return response
        time.sleep(min(IMPORT_BACKOFF_SECONDS * 2**attempt, 10.0))
    raise AssertionError("unreachable")


# Rows per request: 100 rows of at most 500 characters (4 bytes each in UTF-8) and a 64-character
# id stay far below the route's byte limit, and half its row limit.
IMPORT_BATCH_ROWS = 100


def _import(args: argparse.Namespace) -> int:
    """Check the whole file here, then every batch on the stack as a dry run (its scopes), and only
    then import: a bad row anywhere means nothing is written. A run that stops half way can
    simply be repeated: rows imported already count as unchanged."""
    import json

    import httpx

    from .core.record.domain import utcnow
    from .core.rights.importing import BadImport, parse_import, source_rows
    from .local import client

    try:
        data = json.loads(args.file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"{args.file}: not a readable JSON file ({exc})", file=sys.stderr)
        return 2
    if not isinstance(data, dict):
        print(f'{args.file}: expected a JSON object (an export file, or {{"memories": [...]}})', file=sys.stderr)
        return 2
    data.pop("dryRun", None)  # the command line decides
    try:
        parse_import(data, now=utcnow(), max_rows=None)
        rows = source_rows(data)
    except BadImport as exc:
        print(f"{args.file}: {exc}; nothing was imported", file=sys.stderr)
        return 2
    url = args.url.rstrip("/") + "/memory/import"
    secret = _admin_secret(client.resolve_state_dir(args.state_dir, args.url))
    if secret is None:
        return SETUP_FAILED
    headers = client.admin_headers(secret)
    batches = [rows[i : i + IMPORT_BATCH_ROWS] for i in range(0, len(rows), IMPORT_BATCH_ROWS)]
    done = 0
    totals = {}
    try:
        with httpx.Client(timeout=120) as http:  # moto, locally, is slow with transactions
            for dry_run in (True,) if args.dry_run else (True, False):
                totals = dict.fromkeys(IMPORT_COUNTS, 0)
                for batch in batches:
                    body = {"memories": [raw for _, raw in batch], "dryRun": dry_run}
                    response = _post_import(http, url, body, headers)
                    answer = response.json() if response.content else {}
                    if response.status_code != 200:
                        print(_import_refusal(args, response.status_code, answer, batch, done), file=sys.stderr)
                        return 1
                    totals = {k: totals[k] + answer.get(k, 0) for k in totals}
                    if not dry_run:
                        done += len(batch)
    except httpx.TransportError:
        return _setup_failed(client.no_stack_hint(args.url.rstrip("/")))
    print(import_summary(totals, args.url.rstrip("/"), dry_run=args.dry_run))
    return 0


# The answer's counts, in the order the summary names them.
IMPORT_COUNTS = ("imported", "unchanged", "alreadyHere", "refused")


def import_summary(totals: dict[str, int], stack: str, *, dry_run: bool) -> str:
    """What the import did (or would do), naming the stack it went to: each count by what it
    means, and only the counts that are not zero past the first."""
    parts = [
        f"{totals['unchanged']} unchanged (imported before)" if totals["unchanged"] else "",
        f"{totals['alreadyHere']} already there (this stack's own memories)" if totals["alreadyHere"] else "",
        f"{totals['refused']} refused (that person's data is being erased)" if totals["refused"] else "",
    ]
    rest = "".join(f", {part}" for part in parts if part)
    if dry_run:
        return f"Dry run against the stack at {stack}: {totals['imported']} would be imported{rest}; nothing written."
    return f"Imported {totals['imported']} memories into the stack at {stack}{rest}."


def _import_refusal(args: argparse.Namespace, status: int, answer: dict, batch: list, done: int) -> str:
    from .local import client

    if status == 401:
        return client.refused_hint(args.url, args.state_dir) + " For a deployed stack, set MEMORYBOT_ADMIN_SECRET."
    if status == 400 and isinstance(answer.get("row"), int) and 0 <= answer["row"] < len(batch):
        where = batch[answer["row"]][0]
        problem = str(answer.get("error", "")).split(": ", 1)[-1]
        message = f"{args.file}: {where}.{answer.get('field')}: {problem}"
    else:
        message = f"{args.url}: HTTP {status}: {answer.get('error', answer)}"
    if done:
        return f"{message}\n{done} rows were imported before this; run the same command again to finish."
    return f"{message}; nothing was imported"


def _doctor(args: argparse.Namespace) -> int:
    import os

    from botocore.exceptions import BotoCoreError

    from .config import DEFAULT_DISCORD_API_BASE
    from .ops import doctor
    from .ops.setup import aws_problem, use_region

    region = use_region(args.region)
    api_base = args.discord_api_base or os.environ.get("DISCORD_API_BASE") or DEFAULT_DISCORD_API_BASE
    try:
        return doctor.run(
            args.stack_name, region=region, profile=args.profile, discord_api_base=api_base, guild_id=args.guild
        )
    except BotoCoreError as exc:  # no credentials, no region, AWS unreachable: before any check could run
        return _setup_failed(aws_problem(exc, region=region) or f"Cannot reach AWS: {exc}. Check --region.")


def _eval(args: argparse.Namespace) -> int:
    from .config import Settings
    from .ops import evaluation

    try:
        settings = Settings.from_env()
    except ValueError as exc:  # a setting that does not parse: its message names it
        return _setup_failed(str(exc))
    try:
        return evaluation.main(
            settings,
            languages=args.lang or evaluation.LANGUAGES,
            sample=args.sample,
            data_dir=args.data or evaluation.DATA_DIR,
            as_json=args.json,
        )
    except (FileNotFoundError, ValueError) as exc:  # no data; a backend's settings refused
        return _setup_failed(str(exc))


if __name__ == "__main__":
    sys.exit(main())
