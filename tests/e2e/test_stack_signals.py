"""The local stack (`memorybot local`, its own process) stopped as people stop it: Ctrl-C (SIGINT) in
its terminal and `kill` (SIGTERM), at once, whatever it is doing, its note gone; and a client that
goes away mid-request (its own Ctrl-C) leaves no traceback in the stack's terminal."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time

import httpx
import pytest
from stack_process import SCRUBBED_PREFIXES, StackProcess, loopback_models

from loopback.jev_server import JevServer
from memorybot.local.client import LocalClient, find_signing_key

ADMIN_SECRET = "signals-admin-secret"
HELD_SECONDS = 30.0  # Jev holds the turn's extraction open longer than any test waits
STOPPED_WITHIN_SECONDS = 2.0


@pytest.fixture
def jev():
    with JevServer(worth=0.9, add=0.9) as server:
        yield server


def start(tmp_path, jev: JevServer) -> tuple[StackProcess, LocalClient]:
    state_dir = tmp_path / ".memorybot"
    state_dir.mkdir()
    env = {**loopback_models(jev.url), "MEMORYBOT_ADMIN_SECRET": ADMIN_SECRET}
    running = StackProcess(state_dir, env)
    client = LocalClient(running.url, "sig", find_signing_key(state_dir), admin_secret=ADMIN_SECRET)
    return running, client


def a_turn_in_flight(running: StackProcess, client: LocalClient, jev: JevServer) -> None:
    """A /chat whose extraction is held at Jev: the stack has background work it would drain."""
    jev.set_delay(HELD_SECONDS, path="/worth")
    payload = client._payload("chat", [{"type": 3, "name": "message", "value": "I keep bees on my roof"}])
    assert client.send(payload) == (200, {"type": 5})
    deadline = time.monotonic() + 30
    while not jev.requests_to("/worth"):
        assert time.monotonic() < deadline, "the extraction never reached Jev"
        time.sleep(0.02)


def note_of(running: StackProcess):
    return running.runtime_dir / f"{running.url.rsplit(':', 1)[1]}.json"


def test_ctrl_c_stops_the_stack_within_two_seconds_with_a_turn_in_flight_and_its_note_goes(tmp_path, jev):
    """It drained its background work first, up to two minutes (SIGTERM's handler, the same, is
    shown at once below)."""
    sent = signal.SIGINT
    running, client = start(tmp_path, jev)
    note = note_of(running)
    try:
        a_turn_in_flight(running, client, jev)
        assert json.loads(note.read_text())["pid"] == running.process.pid
        signalled = time.monotonic()
        running.process.send_signal(sent)
        running.process.wait(timeout=30)
        took = time.monotonic() - signalled
    finally:
        client.http.close()
        running.stop()
    assert running.process.returncode == 0
    assert took < STOPPED_WITHIN_SECONDS, f"stopped {took:.1f} s after {sent.name}"
    assert not note.exists()
    output = "".join(running.output)
    assert "Traceback" not in output
    assert "stopping" in output


# The stack signals itself at the named moment of its start (a script that kills the stack as soon
# as it sees it can do so at any of them).
SIGNALLED_AT = """
import os, signal, sys
from memorybot import cli
from memorybot.local import running, server
module, name = sys.argv[2].split(".")
real = getattr({"running": running, "server": server}[module], name)
def at_once(*args, **kwargs):
    result = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGTERM)
    return result
setattr({"running": running, "server": server}[module], name, at_once)
sys.exit(cli.main(["local", "--port", "0", "--state-dir", sys.argv[1]]))
"""


@pytest.mark.parametrize("moment", ["server.start", "running.leave_note"], ids=["started", "note-written"])
def test_sigterm_at_any_moment_of_the_start_ends_the_stack_cleanly_with_no_note_left(tmp_path, moment):
    """It once died of the signal (-15) when SIGTERM came right after its note appeared, before its
    handler was set; and the note stayed behind."""
    state_dir = tmp_path / ".memorybot"
    state_dir.mkdir()
    runtime = tmp_path / "running"
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_PREFIXES)}
    env.update({"MEMORYBOT_RUNTIME_DIR": str(runtime), "MEMORYBOT_ADMIN_SECRET": ADMIN_SECRET})
    done = subprocess.run(
        [sys.executable, "-c", SIGNALLED_AT, str(state_dir), moment],
        capture_output=True,
        text=True,
        env=env,
        cwd=state_dir,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not runtime.exists() or list(runtime.iterdir()) == []
    assert "Traceback" not in done.stderr


def test_a_client_gone_mid_request_leaves_no_traceback_in_the_stacks_output(tmp_path, jev):
    running, client = start(tmp_path, jev)
    host = running.url.removeprefix("http://")
    try:
        jev.set_delay(1.0, path="/worth")  # the drain below answers only once the turn's extraction is done
        for _ in range(3):
            payload = client._payload("chat", [{"type": 3, "name": "message", "value": "I play the oboe"}])
            assert client.send(payload) == (200, {"type": 5})
            gone = socket.create_connection(tuple(host.split(":")))  # type: ignore[arg-type]
            gone.sendall(
                f"POST /local/drain HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {ADMIN_SECRET}\r\n"
                "Content-Length: 0\r\n\r\n".encode()
            )
            time.sleep(0.2)  # the stack is waiting on the drain
            gone.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # Ctrl-C: reset
            gone.close()
            drained = httpx.post(f"{running.url}/local/drain", headers={"Authorization": f"Bearer {ADMIN_SECRET}"})
            assert drained.json()["drained"] is True
        time.sleep(0.3)  # the abandoned answers have been written (or failed to be)
    finally:
        client.http.close()
        running.stop()
    output = "".join(running.output)
    assert "Traceback" not in output and "BrokenPipe" not in output and "ConnectionReset" not in output, output
