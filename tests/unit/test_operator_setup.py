"""An operator's first day without a traceback: the operator commands take the region from
--region, AWS_REGION, AWS_DEFAULT_REGION in that order; a missing region, missing credentials, a
missing secret or no network is one line with the fix and exit 2; every --help lists the
environment variables it reads; a confirmation is read only from a terminal; Ctrl-C during a
client request is quiet; ``memorybot --version`` says the version.

The commands run as an operator runs them: in a subprocess, against AWS endpoints that refuse
the connection or moto's server, and Discord on a loopback port that answers nothing.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from memorybot import cli
from memorybot.core.night.nightly_steps import scheduled_time
from memorybot.local import operator
from memorybot.ops.setup import SETUP_FAILED, resolve_region

SCRUBBED = ("AWS_", "DISCORD_", "MEMORYBOT_", "BOTO_")
CLOSED = "http://127.0.0.1:9"  # nothing listens there: a connection is refused at once


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
    # No profile, config or instance metadata of the machine's: only what the test gives.
    clean |= {
        "AWS_CONFIG_FILE": "/nonexistent/config",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_MAX_ATTEMPTS": "1",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "memorybot.cli", *args], capture_output=True, text=True, env=clean, timeout=timeout
    )


def one_line_exit_2(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == SETUP_FAILED, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


KEYS = {"AWS_ACCESS_KEY_ID": "operator", "AWS_SECRET_ACCESS_KEY": "operator"}


# ---- the region, in the documented order


def test_the_region_is_the_flag_then_aws_region_then_aws_default_region():
    both = {"AWS_REGION": "eu-west-3", "AWS_DEFAULT_REGION": "us-west-2"}
    assert resolve_region("ap-northeast-1", both) == "ap-northeast-1"
    assert resolve_region(None, both) == "eu-west-3"
    assert resolve_region(None, {"AWS_DEFAULT_REGION": "us-west-2"}) == "us-west-2"
    assert resolve_region(None, {}) is None


@pytest.mark.parametrize(
    ("args", "env", "region"),
    [
        ((), {"AWS_REGION": "eu-west-3"}, "eu-west-3"),  # the variable the docs export
        ((), {"AWS_DEFAULT_REGION": "us-west-2"}, "us-west-2"),
        (("--region", "ap-northeast-1"), {"AWS_REGION": "eu-west-3"}, "ap-northeast-1"),
    ],
)
def test_doctor_uses_the_region_it_is_given_and_says_so_when_aws_is_unreachable(args, env, region):
    line = one_line_exit_2(run("doctor", *args, env={**KEYS, **env, "AWS_ENDPOINT_URL": CLOSED}))
    assert f"Cannot reach AWS in {region}" in line and "network" in line


def test_doctor_without_a_region_or_credentials_says_how_to_give_them():
    line = one_line_exit_2(run("doctor", env=KEYS))
    assert "No AWS region" in line and "--region" in line and "AWS_REGION" in line
    line = one_line_exit_2(run("doctor", env={"AWS_REGION": "us-east-1"}))
    assert "No AWS credentials" in line and "aws sts get-caller-identity" in line


# ---- register-commands


def test_register_commands_names_what_is_missing_in_one_line(moto_server):
    assert "DISCORD_APPLICATION_ID" in one_line_exit_2(run("register-commands"))
    app = {"DISCORD_APPLICATION_ID": "1100000000000000001"}
    assert "DISCORD_BOT_TOKEN" in one_line_exit_2(run("register-commands", env=app))

    by_secret = {**app, **KEYS, "DISCORD_BOT_TOKEN_SECRET_NAME": "memorybot/discord-bot-token"}
    assert "No AWS region" in one_line_exit_2(run("register-commands", env=by_secret))
    unreachable = {**by_secret, "AWS_REGION": "eu-west-3", "AWS_ENDPOINT_URL": CLOSED}
    assert "Cannot reach AWS in eu-west-3" in one_line_exit_2(run("register-commands", env=unreachable))
    missing = {**by_secret, "AWS_ENDPOINT_URL": moto_server.endpoint}
    line = one_line_exit_2(run("register-commands", "--region", "eu-west-1", env=missing))
    assert "memorybot/discord-bot-token does not exist in eu-west-1" in line

    offline = {**app, "DISCORD_BOT_TOKEN": "token", "DISCORD_API_BASE": CLOSED}
    assert f"Cannot reach Discord at {CLOSED}" in one_line_exit_2(run("register-commands", env=offline))


# ---- help, version, confirmation


@pytest.mark.parametrize("command", sorted(cli.COMMAND_VARIABLES))
def test_every_help_lists_the_variables_its_command_reads(command, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"])
    assert done.value.code == 0
    help_text = capsys.readouterr().out
    assert "environment variables:" in help_text
    for name in cli.COMMAND_VARIABLES[command]:
        assert name in help_text, (command, name)


def test_the_nightly_help_says_it_runs_a_local_stack(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "LOCAL stack" in capsys.readouterr().out


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"memorybot {version('memorybot')}"


def test_a_confirmation_is_read_only_from_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("yes\n"))  # piped in: no terminal
    assert operator.ask("Erase?") is None


# ---- Ctrl-C during a client request


def test_ctrl_c_while_the_client_waits_for_the_stack_is_quiet(tmp_path: Path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    accepted = threading.Event()
    held: list[socket.socket] = []

    def hold() -> None:  # accepts, and never answers
        connection, _ = listener.accept()
        held.append(connection)
        accepted.set()

    threading.Thread(target=hold, daemon=True).start()
    (tmp_path / "signing_key").write_text("11" * 32 + "\n")
    (tmp_path / "admin_secret").write_text("secret\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
    client = subprocess.Popen(
        [sys.executable, "-m", "memorybot.cli", "chat", "--user", "ann", "--url", f"http://127.0.0.1:{port}"]
        + ["--state-dir", str(tmp_path), "--say", "hello"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean,
    )
    try:
        assert accepted.wait(30), "the client never connected"
        time.sleep(0.2)  # inside its request now
        client.send_signal(signal.SIGINT)
        out, err = client.communicate(timeout=30)
    finally:
        client.kill()
        for connection in held:
            connection.close()
        listener.close()
    assert client.returncode == cli.INTERRUPTED and "Traceback" not in err and err.strip() == "", err


# ---- a night's time, in its range


@pytest.mark.parametrize("raw", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-05:00", "1969-12-31T00:00:00Z"])
def test_a_night_outside_the_calendar_is_refused_in_one_line(raw):
    with pytest.raises(ValueError, match="is outside 1970-01-02 .. 9999-12-30"):
        scheduled_time(raw)
    line = one_line_exit_2(run("nightly", "--now", raw, "--url", CLOSED, env={"MEMORYBOT_ADMIN_SECRET": "x"}))
    assert line.startswith("--now: ") and "is outside" in line
    assert scheduled_time("2026-11-20T18:00:00Z").year == 2026
