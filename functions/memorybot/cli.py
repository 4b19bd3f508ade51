"""`memorybot`: run the local stack, chat with it, register the slash commands, run a nightly."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memorybot", description="Per-person long-term memory for a Discord bot.")
    sub = parser.add_subparsers(dest="command", required=True)

    local = sub.add_parser("local", help="run the whole bot locally, in the foreground")
    local.add_argument("--host", default="127.0.0.1")
    local.add_argument("--port", type=int, default=8787, help="0 picks a free port")
    local.add_argument("--state-dir", type=Path, default=Path(".memorybot"), help="where the local signing key is kept")

    chat = sub.add_parser("chat", help="a terminal client for the local stack")
    chat.add_argument("--user", required=True, help="your name (the same name is the same person)")
    chat.add_argument("--url", default="http://127.0.0.1:8787")
    chat.add_argument("--say", action="append", default=[], help="send this line and exit (repeatable)")
    chat.add_argument("--channel", default=None, help="channel id (default: the one local channel)")
    where = chat.add_mutually_exclusive_group()
    where.add_argument("--guild", default=None, help="server id (default: the one local server); memories stay in their server")
    where.add_argument("--dm", action="store_true", help="talk in your DM with the bot (its own memory scope)")
    chat.add_argument("--state-dir", type=Path, default=None, help="where to find the local signing key")

    register = sub.add_parser("register-commands", help="install /chat and /memory on Discord (bulk overwrite)")
    register.add_argument("--guild", default=None, help="a guild id: instant, for testing (default: global)")

    nightly = sub.add_parser("nightly", help="run the nightly consolidation on a local stack now")
    nightly.add_argument("--url", default="http://127.0.0.1:8787")
    nightly.add_argument("--now", default=None, help="ISO 8601 time to run as of (default: now)")
    nightly.add_argument("--state-dir", type=Path, default=None, help="where to find the stack's admin secret")

    args = parser.parse_args(argv)
    return {"local": _local, "chat": _chat, "register-commands": _register, "nightly": _nightly}[args.command](args)


def _local(args: argparse.Namespace) -> int:
    import threading

    from .local import server

    try:
        stack = server.start(args.host, args.port, args.state_dir)
    except OSError as exc:  # most often: the port is taken (another stack still running?)
        print(f"Cannot listen on {args.host}:{args.port}: {exc.strerror or exc}. Try --port 0 for any free port.", file=sys.stderr)
        return 1
    for note in stack.notes:
        print(f"  {note}")
    print(f"memorybot local stack ready at {stack.url}", flush=True)
    print(f"  Interactions endpoint: {stack.url}/interactions   Chat with it: memorybot chat --user alice --url {stack.url}")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        print("stopping")
        stack.stop()
    return 0


def _chat(args: argparse.Namespace) -> int:
    from .local import client

    if args.dm:
        return client.run(args.url, args.user, args.say, args.state_dir, args.channel or client.dm_channel_for(args.user), None)
    channel = args.channel or client.LOCAL_CHANNEL_ID
    return client.run(args.url, args.user, args.say, args.state_dir, channel, args.guild or client.LOCAL_GUILD_ID)


def _register(args: argparse.Namespace) -> int:
    from .adapters.discord_rest import DiscordRest
    from .config import settings
    from .interactions import COMMANDS

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
    import json

    import httpx

    from .local.client import admin_headers, find_admin_secret

    response = httpx.post(
        f"{args.url.rstrip('/')}/local/nightly",
        json={"now": args.now} if args.now else {},
        headers=admin_headers(find_admin_secret(args.state_dir)),
        timeout=600,
    )
    print(json.dumps(response.json(), ensure_ascii=False, indent=2))
    return 0 if response.status_code == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
