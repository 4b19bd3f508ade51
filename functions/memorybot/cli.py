"""`memorybot`: run the local stack, chat with it, register the slash commands, run a nightly."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

DEFAULT_STATE_DIR = Path(".memorybot")


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


def _user_name(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("give a name, e.g. --user alice (the same name is the same person)")
    return text.strip()


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
    sub = parser.add_subparsers(dest="command", required=True)

    local = sub.add_parser("local", help="run the whole bot locally, in the foreground")
    local.add_argument("--host", default="127.0.0.1")
    local.add_argument("--port", type=_port, default=8787, help="0 picks a free port")
    local.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR, help="where the local signing key is kept")

    chat = sub.add_parser("chat", help="a terminal client for the local stack")
    chat.add_argument("--user", required=True, type=_user_name, help="your name (the same name is the same person)")
    chat.add_argument("--url", default="http://127.0.0.1:8787")
    chat.add_argument("--say", action="append", default=[], help="send this line and exit (repeatable)")
    chat.add_argument("--channel", default=None, help="channel id (default: the one local channel)")
    where = chat.add_mutually_exclusive_group()
    where.add_argument(
        "--guild", default=None, help="server id (default: the one local server); memories stay in their server"
    )
    where.add_argument("--dm", action="store_true", help="talk in your DM with the bot (its own memory scope)")
    chat.add_argument("--state-dir", type=Path, default=None, help="where to find the local signing key")
    chat.add_argument("--locale", default="en-US", help="your Discord language, as Discord sends it (e.g. ja)")

    register = sub.add_parser("register-commands", help="install /chat and /memory on Discord (bulk overwrite)")
    register.add_argument("--guild", default=None, help="a guild id: instant, for testing (default: global)")

    nightly = sub.add_parser("nightly", help="run the nightly consolidation on a local stack now")
    nightly.add_argument("--url", default="http://127.0.0.1:8787")
    nightly.add_argument(
        "--now",
        default=None,
        help="ISO 8601 time to run as of: the night before the latest 03:00 JST at or before it "
        "(default: the night about to end, so what was just said is in it)",
    )
    nightly.add_argument("--state-dir", type=Path, default=None, help="where to find the stack's admin secret")

    args = parser.parse_args(argv)
    return {"local": _local, "chat": _chat, "register-commands": _register, "nightly": _nightly}[args.command](args)


def _local(args: argparse.Namespace) -> int:
    import threading

    from .local import server

    try:
        stack = server.start(args.host, args.port, args.state_dir)
    except OSError as exc:  # most often: the port is taken (another stack still running?)
        print(
            f"Cannot listen on {args.host}:{args.port}: {exc.strerror or exc}. Try --port 0 for any free port.",
            file=sys.stderr,
        )
        return 1
    for note in stack.notes:
        print(f"  {note}")
    print(f"memorybot local stack ready at {stack.url}", flush=True)
    state = "" if args.state_dir == DEFAULT_STATE_DIR else f" --state-dir {args.state_dir}"
    print(f"  Interactions endpoint: {stack.url}/interactions")
    print(f"  Chat with it from this folder: {command_name()} chat --user alice --url {stack.url}{state}")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        print("stopping")
        stack.stop()
    return 0


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
        )
    channel = args.channel or client.LOCAL_CHANNEL_ID
    guild = args.guild or client.LOCAL_GUILD_ID
    return client.run(args.url, args.user, args.say, args.state_dir, channel, guild, locale=args.locale)


def _register(args: argparse.Namespace) -> int:
    from .adapters.discord_rest import DiscordRest
    from .config import settings
    from .discord.requests import COMMANDS

    config = settings()
    token, app_id = config.secret("DISCORD_BOT_TOKEN"), config.discord_application_id
    if not token or not app_id:
        print("Set DISCORD_APPLICATION_ID and DISCORD_BOT_TOKEN first.", file=sys.stderr)
        return 2
    registered = DiscordRest(config.discord_api_base, token).bulk_overwrite_commands(app_id, COMMANDS, args.guild)
    where = f"guild {args.guild}" if args.guild else "all guilds (global commands can take a while to appear)"
    print(f"Registered {', '.join('/' + c['name'] for c in registered)} for {where}.")
    return 0


def _nightly(args: argparse.Namespace) -> int:
    import httpx

    from .local import client

    url = args.url.rstrip("/")
    try:
        with httpx.Client() as http:
            status, answer, window = client.nightly_request(
                http, url, client.admin_headers(client.find_admin_secret(args.state_dir)), args.now
            )
    except ValueError as exc:
        print(f"--now: {exc}", file=sys.stderr)
        return 2
    except httpx.TransportError:
        print(client.no_stack_hint(url), file=sys.stderr)
        return 1
    if status == 401:
        print(client.refused_hint(url, args.state_dir), file=sys.stderr)
        return 1
    another_day = f"{command_name()} nightly --now 2031-01-02T03:00:00+09:00"
    lines = client.nightly_lines(status, answer, window, another_day)
    print("\n".join(lines), file=sys.stdout if status == 200 else sys.stderr)
    return 0 if status == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
