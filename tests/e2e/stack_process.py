"""The local stack as a real server in a subprocess (`memorybot local --port 0`), its output kept."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx

from loopback.jev_server import JevServer
from memorybot.local.client import LocalClient, find_signing_key

READY = re.compile(r"ready at (http://127\.0\.0\.1:\d+)")
START_TIMEOUT_SECONDS = 60
# The stack must not pick up a developer's real Discord, AWS or model settings.
SCRUBBED_PREFIXES = ("DISCORD_", "MEMORYBOT_", "AWS_", "JEV_", "OPENAI_", "BEDROCK_", "POWERTOOLS_")


def loopback_models(
    jev_url: str, openai_url: str | None = None, *, chat: bool = False, embeddings: bool = False
) -> dict[str, str]:
    """The stack's settings for deciding through a loopback Jev and, where asked, writing (``chat``)
    or embedding (``embeddings``) through a loopback OpenAI-compatible server."""
    env = {"MEMORYBOT_DECISION_MODEL": "http", "JEV_URL": jev_url}
    if chat or embeddings:
        assert openai_url, "an OpenAI-compatible model needs its server's URL"
        env |= {"OPENAI_BASE_URL": openai_url, "OPENAI_API_KEY": "sk-loopback"}
    if chat:
        env["MEMORYBOT_CHAT_MODEL"] = "openai"
    if embeddings:
        env["MEMORYBOT_EMBEDDING_MODEL"] = "openai"
    return env


class StackProcess:
    def __init__(self, state_dir: Path, env: dict[str, str]) -> None:
        clean = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_PREFIXES)}
        # Its note for clients in other folders goes beside its state dir, never in the developer's home.
        self.runtime_dir = state_dir.parent / f"{state_dir.name}-running"
        clean.update({"PYTHONUNBUFFERED": "1", "MEMORYBOT_RUNTIME_DIR": str(self.runtime_dir), **env})
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memorybot.cli", "local", "--port", "0", "--state-dir", str(state_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=clean,
            cwd=state_dir,
        )
        self.output: list[str] = []  # every line the stack printed, logs included
        lines: queue.Queue[str] = queue.Queue()

        def pump() -> None:
            for line in self.process.stdout:  # type: ignore[union-attr]
                self.output.append(line)
                lines.put(line)

        threading.Thread(target=pump, daemon=True).start()
        self.url = ""
        while not self.url:
            try:
                line = lines.get(timeout=START_TIMEOUT_SECONDS)
            except queue.Empty:
                self.stop()
                raise RuntimeError("the local stack did not start:\n" + "".join(self.output)) from None
            if match := READY.search(line):
                self.url = match.group(1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            # Generous: on a loaded machine a stack's orderly exit (its servers, its note) took over 10 s.
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextmanager
def stack_with_jev(
    state_dir: Path, admin_secret: str, channels: Iterator[int], env: dict[str, str] | None = None
) -> Iterator[tuple[StackProcess, JevServer, Callable[..., LocalClient], httpx.Client]]:
    """A local stack deciding through a loopback Jev (keep, add), with a known admin secret and every
    log level on (the most an operator could turn on), and a factory of terminal clients: each
    person in a channel of their own from ``channels`` unless one is named. ``env``: more settings
    (a moto server of the test's own, to read the tables)."""
    with JevServer(worth=0.9, add=0.9, verdict="keep", review="keep") as jev:
        env = {
            **loopback_models(jev.url),
            "MEMORYBOT_ADMIN_SECRET": admin_secret,
            "POWERTOOLS_LOG_LEVEL": "DEBUG",
            **(env or {}),
        }
        running = StackProcess(state_dir, env)
        http = httpx.Client(timeout=120)
        key = find_signing_key(state_dir)

        def person(name: str, channel: str | None = None, **options: object) -> LocalClient:
            client = LocalClient(
                running.url,
                name,
                key,
                channel or str(next(channels)),
                http=http,
                admin_secret=admin_secret,
                **options,  # type: ignore[arg-type]
            )
            client.catch_up()
            return client

        try:
            yield running, jev, person, http
        finally:
            http.close()
            running.stop()


class StackOnMoto:
    """A local stack in its own process whose tables (under ``prefix``) are on a moto server the
    test reads too, with a known admin secret: terminal clients, the operator's routes, and a scan
    of what is stored. Modules add their own readings in a subclass."""

    def __init__(
        self,
        running: StackProcess,
        dynamo: Any,
        http: httpx.Client,
        key: str,
        channels: Iterator[int],
        *,
        prefix: str,
        admin_secret: str,
    ) -> None:
        self.running, self.dynamo, self.http, self.key, self.channels = running, dynamo, http, key, channels
        self.prefix, self.admin_secret = prefix, admin_secret
        self.admin = {"Authorization": f"Bearer {admin_secret}"}

    @property
    def url(self) -> str:
        return self.running.url

    def person(self, name: str, *, catch_up: bool = True) -> LocalClient:
        """A terminal client in a channel of its own; ``catch_up``: past what the stack has posted so far."""
        client = LocalClient(
            self.url, name, self.key, str(next(self.channels)), http=self.http, admin_secret=self.admin_secret
        )
        if catch_up:
            client.catch_up()
        return client

    def post(self, path: str, body: dict | None = None) -> httpx.Response:
        return self.http.post(f"{self.url}{path}", json=body, headers=self.admin)

    def drain(self) -> dict:
        answer = self.post("/local/drain").json()
        assert answer["drained"], answer
        return answer

    def events(self, after: int = 0) -> list[dict]:
        answer = self.http.get(f"{self.url}/local/discord/events", params={"after": after}, headers=self.admin)
        return answer.json()["events"]

    def scan(self, table: str) -> list[dict]:
        pages = self.dynamo.get_paginator("scan").paginate(TableName=self.prefix + table, ConsistentRead=True)
        return [item for page in pages for item in page["Items"]]


Stack = TypeVar("Stack", bound=StackOnMoto)


@contextmanager
def stack_on_moto(
    kind: type[Stack],
    moto_server: Any,
    state_dir: Path,
    models: dict[str, str],
    channels: Iterator[int],
    *,
    prefix: str,
    admin_secret: str,
    timeout: float = 120,
) -> Iterator[Stack]:
    """A ``kind`` of StackOnMoto: the stack deciding (and writing) through ``models``
    (loopback_models), its tables under ``prefix`` on ``moto_server``; stopped on exit."""
    running = StackProcess(
        state_dir,
        {
            "AWS_ENDPOINT_URL_DYNAMODB": moto_server.endpoint,
            "MEMORYBOT_TABLE_PREFIX": prefix,
            **models,
            "MEMORYBOT_ADMIN_SECRET": admin_secret,
        },
    )
    http = httpx.Client(timeout=timeout)
    try:
        key = find_signing_key(state_dir)
        yield kind(running, moto_server.client(), http, key, channels, prefix=prefix, admin_secret=admin_secret)
    finally:
        http.close()
        running.stop()
