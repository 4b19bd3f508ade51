"""A newcomer's first run, over HTTP against a fresh local stack in its own process with the
offline stand-ins (as `make run` starts it): the walk-through's nightly, and a clear answer for
every mistake on the way (no tracebacks, the fix in the message)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from stack_process import StackProcess

from memorybot.core.record.catalog import text
from memorybot.local.client import TEXT_FORGET_WHICH, LocalClient, StackRefused, find_admin_secret, find_signing_key


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """(URL, state dir, the stack's output) of a stack of its own: no nightly has run on it."""
    state_dir = tmp_path_factory.mktemp("first-run-state")
    running = StackProcess(state_dir, {})
    yield running.url, state_dir, running.output
    running.stop()


def client_for(fresh, name: str) -> LocalClient:
    url, state_dir, _ = fresh
    client = LocalClient(
        url,
        name,
        find_signing_key(state_dir),
        http=httpx.Client(timeout=120),
        admin_secret=find_admin_secret(state_dir),
        state_dir=state_dir,
    )
    client.catch_up()
    return client


def memorybot(*args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memorybot.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def events(fresh) -> list[dict]:
    url, state_dir, _ = fresh
    admin = {"Authorization": f"Bearer {find_admin_secret(state_dir)}"}
    return httpx.get(f"{url}/local/discord/events", headers=admin).json()["events"]


# ---- the walk-through's nightly --------------------------------------------------------------


def test_the_walk_through_nightly_consolidates_what_was_just_said_and_runs_each_day_once(fresh):
    alice = client_for(fresh, "alice-first-run")
    alice.chat("I love hiking in the Alps")
    alice.chat("My sister Yuki lives in Osaka")

    first = alice.handle_line("/nightly")
    assert first[0].startswith("Ran the nightly run for JST day "), first
    run = json.loads(first[1])
    assert run["summary"]["speakers"] == 1  # alice's lines are in the night it ran
    assert "1人が" in run["diary"]  # the stand-in diary counted one person
    assert run["dayLabel"] in first[0]

    again = alice.handle_line("/nightly")
    assert len(again) == 1 and again[0].startswith("Already done") and "each JST day runs once" in again[0]

    other_day = alice.handle_line("/nightly 2031-01-02T03:00:00+09:00")
    assert other_day[0].startswith("Ran the nightly run for JST day 2031-01-01:")
    assert json.loads(other_day[1])["summary"]["speakers"] == 0  # nobody spoke that night


def test_memorybot_nightly_says_which_window_it_ran_and_refuses_a_bad_time(fresh):
    url, state_dir, _ = fresh
    ran = memorybot("nightly", "--url", url, "--state-dir", str(state_dir), "--now", "2031-02-01T03:00:00+09:00")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(
        "Ran the nightly run for JST day 2031-01-31: the messages from 2031-01-31 03:00 to 2031-02-01 03:00 JST."
    )
    assert json.loads(ran.stdout.split("\n", 1)[1])["dayLabel"] == "2031-01-31"

    again = memorybot("nightly", "--url", url, "--state-dir", str(state_dir), "--now", "2031-02-01T03:00:00+09:00")
    assert again.returncode == 1 and "Already done" in again.stderr and "nightly --now" in again.stderr

    bad = memorybot("nightly", "--url", url, "--state-dir", str(state_dir), "--now", "yesterday")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "not an ISO 8601 time" in bad.stderr and "2026-11-20T18:00:00Z" in bad.stderr


def test_the_client_refuses_a_bad_nightly_time_without_asking_the_stack(fresh):
    alice = client_for(fresh, "alice-bad-time")
    assert "not an ISO 8601 time" in alice.handle_line("/nightly last tuesday")[0]


# ---- friendly errors -------------------------------------------------------------------------


def test_memorybot_nightly_with_no_stack_running_says_so(fresh):
    _, state_dir, _ = fresh
    nobody = memorybot("nightly", "--url", "http://127.0.0.1:9", "--state-dir", str(state_dir))
    assert nobody.returncode == 2 and "Traceback" not in nobody.stderr
    assert "No local stack answers at http://127.0.0.1:9" in nobody.stderr and "make run" in nobody.stderr


def test_another_state_dir_is_named_when_the_stack_refuses_its_secret(fresh, tmp_path):
    url, _, _ = fresh
    (tmp_path / "admin_secret").write_text("not-this-stacks-secret\n")
    (tmp_path / "signing_key").write_text("11" * 32 + "\n")
    nightly = memorybot("nightly", "--url", url, "--state-dir", str(tmp_path))
    assert nightly.returncode == 1 and "Traceback" not in nightly.stderr
    assert "HTTP 401" in nightly.stderr and f"--state-dir {tmp_path}" in nightly.stderr
    chat = memorybot("chat", "--user", "zed", "--url", url, "--state-dir", str(tmp_path), "--say", "hi")
    assert chat.returncode == 1 and "Traceback" not in chat.stderr
    assert f"--state-dir {tmp_path}" in chat.stderr


def test_the_client_raises_a_clear_refusal_instead_of_a_key_error(fresh):
    url, state_dir, _ = fresh
    stranger = LocalClient(url, "kai", find_signing_key(state_dir), admin_secret="wrong", state_dir=state_dir)
    with pytest.raises(StackRefused, match="--state-dir"):
        _ = stranger.application_id


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_port_out_of_range_is_refused_without_a_traceback(port, tmp_path):
    refused = memorybot("local", "--port", port, "--state-dir", str(tmp_path), timeout=60)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "is not a port" in refused.stderr and "0 for any free port" in refused.stderr
    assert not any(tmp_path.iterdir())  # refused before anything was created


@pytest.mark.parametrize("user", ["", "   "])
def test_an_empty_user_name_is_refused(fresh, user):
    url, state_dir, _ = fresh
    refused = memorybot("chat", "--user", user, "--url", url, "--state-dir", str(state_dir), "--say", "hi")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr and "--user alice" in refused.stderr


def test_an_unknown_command_is_not_sent_as_a_chat_message(fresh):
    bea = client_for(fresh, "bea-first-run")
    before = len(events(fresh))
    for line in ("/memroy show", "/memory list", "/shw"):
        [answer] = bea.handle_line(line)
        assert answer.startswith("Unknown command /") and "/help" in answer
    assert len(events(fresh)) == before  # nothing reached the bot, so it posted nothing
    assert bea.handle_line("/chat /shw is my favourite typo")[0].startswith("memorybot: ")  # sent on purpose


def test_forget_without_an_id_asks_for_one(fresh):
    bea = client_for(fresh, "bea-forget")
    assert bea.handle_line("/memory forget") == [TEXT_FORGET_WHICH]
    assert bea.handle_line("/memory forget   ") == [TEXT_FORGET_WHICH]


def test_the_stacks_hint_names_its_state_dir_and_a_command_that_runs_as_printed(fresh):
    _, state_dir, output = fresh
    [hint] = [line for line in output if "Chat with it" in line]
    command = hint.split("Chat with it from this folder: ", 1)[1].split()
    assert command[command.index("--state-dir") + 1] == str(state_dir)
    program = Path(command[0])
    assert program.is_absolute() or command[0] == "memorybot"  # the stack's folder is not this one
    shown = subprocess.run([*command[:1], "chat", "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "--user" in shown.stdout


# ---- DMs, by the name the client uses ------------------------------------------------------------


def test_close_dms_takes_the_clients_name_and_open_dms_undoes_it(fresh):
    url, state_dir, _ = fresh
    admin = {"Authorization": f"Bearer {find_admin_secret(state_dir)}"}
    cleo = client_for(fresh, "cleo-first-run")
    cleo.chat("I love rock climbing")
    closed = httpx.post(f"{url}/local/discord/close-dms", json={"user": "cleo-first-run"}, headers=admin)
    assert closed.status_code == 200 and closed.json() == {"closed": cleo.user_id}
    assert cleo.show() == [f"memorybot: (only you can see this) {text('dm_failed')}"]
    opened = httpx.post(f"{url}/local/discord/open-dms", json={"user": "cleo-first-run"}, headers=admin)
    assert opened.status_code == 200 and opened.json() == {"opened": cleo.user_id}
    assert cleo.show()[0] == f"memorybot: (only you can see this) {text('dm_sent')}"


def test_a_name_given_as_user_id_is_refused_and_changes_nothing(fresh):
    url, state_dir, _ = fresh
    admin = {"Authorization": f"Bearer {find_admin_secret(state_dir)}"}
    dan = client_for(fresh, "dan-first-run")
    dan.chat("I love jazz")
    refused = httpx.post(f"{url}/local/discord/close-dms", json={"user_id": "dan-first-run"}, headers=admin)
    assert refused.status_code == 400 and '{"user": "alice"}' in refused.json()["error"]
    assert dan.show()[0] == f"memorybot: (only you can see this) {text('dm_sent')}"


def test_say_mode_prints_the_user_id_once(fresh):
    url, state_dir, _ = fresh
    said = memorybot(
        "chat",
        "--user",
        "eve-first-run",
        "--url",
        url,
        "--state-dir",
        str(state_dir),
        "--say",
        "hello",
        "--say",
        "/help",
    )
    assert said.returncode == 0, said.stderr
    lines = said.stdout.splitlines()
    eve = LocalClient(url, "eve-first-run", "")
    assert lines[0] == f"(eve-first-run is user id {eve.user_id})"
    assert sum("user id" in line for line in lines) == 1


def test_with_the_default_state_dir_the_hint_leaves_it_out(tmp_path):
    import os

    from stack_process import SCRUBBED_PREFIXES

    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_PREFIXES)}
    stack = subprocess.Popen(
        [sys.executable, "-m", "memorybot.cli", "local", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
        env={**env, "PYTHONUNBUFFERED": "1", "MEMORYBOT_RUNTIME_DIR": str(tmp_path / "running")},
    )
    try:
        hint = next(line for line in stack.stdout if "Chat with it" in line)  # type: ignore[union-attr]
    finally:
        stack.terminate()
        stack.wait(timeout=30)
    assert "--state-dir" not in hint and "chat --user alice --url http://127.0.0.1:" in hint
    assert (tmp_path / ".memorybot" / "signing_key").exists()  # the default, in the folder it was started from
