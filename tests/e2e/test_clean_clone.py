"""A clean clone tried as a new user would, over HTTP against a local stack in its own process
(offline stand-ins, as `make run` starts it): the forms the bot teaches work in the terminal
client, the client finds the stack from any folder, a second `make run` gets advice it can
follow, and `memorybot rollback` / `memorybot erase` show a dry run and change nothing until
the operator says yes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from stack_process import SCRUBBED_PREFIXES, StackProcess

from memorybot.local import client as terminal
from memorybot.local.client import LocalClient, find_admin_secret, find_signing_key
from memorybot.local.people import user_id_for

MEMORY_LINE = re.compile(r"^(\w+) \[offline\] ")


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """(URL, state dir, runtime dir holding its note) of a stack of its own."""
    state_dir = tmp_path_factory.mktemp("clean-clone") / ".memorybot"
    state_dir.mkdir()
    running = StackProcess(state_dir, {})
    yield running.url, state_dir, running.runtime_dir
    running.stop()


def client_for(stack, name: str) -> LocalClient:
    url, state_dir, _ = stack
    person = LocalClient(
        url,
        name,
        find_signing_key(state_dir),
        http=httpx.Client(timeout=120),
        admin_secret=find_admin_secret(state_dir),
        state_dir=state_dir,
    )
    person.catch_up()
    return person


def memorybot(
    *args: str,
    cwd: Path | None = None,
    runtime_dir: Path | None = None,
    answer: str = "",
    home: Path | None = None,
    terminal: bool = False,
) -> subprocess.CompletedProcess:
    """The command in a subprocess; ``answer`` piped to it, or typed at a terminal (a pty) with ``terminal``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_PREFIXES)}
    if home:  # a home folder with no .memorybot of its own
        env["HOME"] = str(home)
    if runtime_dir:
        env["MEMORYBOT_RUNTIME_DIR"] = str(runtime_dir)
    command = [sys.executable, "-m", "memorybot.cli", *args]
    if not terminal:
        return subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=cwd, env=env, input=answer)
    import pty

    typing, tty = pty.openpty()
    try:
        os.write(typing, answer.encode())  # the line discipline holds it until the command reads
        return subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=cwd, env=env, stdin=tty)
    finally:
        os.close(typing)
        os.close(tty)


def memory_ids(person: LocalClient) -> list[str]:
    shown = "\n".join(person.show())
    return [m.group(1) for line in shown.splitlines() if (m := MEMORY_LINE.match(line))]


# ---- the forms the bot teaches -------------------------------------------------------------------


def test_forget_and_why_take_the_id_form_the_dm_teaches(stack):
    fay = client_for(stack, "fay-clean-clone")
    fay.chat("I love hiking in the Alps")
    [memory_id] = memory_ids(fay)
    assert "/memory forget id:<id>" in "\n".join(fay.show())  # the form the DM teaches

    why = fay.handle_line(f"/memory why id:{memory_id}")
    assert "not found" not in why[0] and memory_id in why[0], why
    forgotten = fay.handle_line(f"/memory forget id:{memory_id}")
    assert forgotten == [f"memorybot: (only you can see this) Forgotten: memory {memory_id} is deleted."]
    assert memory_ids(fay) == []


def test_a_request_the_bot_refuses_says_why_and_the_say_run_exits_nonzero(stack, capsys):
    url, state_dir, _ = stack
    # The CLI refuses such a guild before sending it; the client still reports what the bot answered.
    code = terminal.run(url, "gus-clean-clone", ["hello"], state_dir, guild_id="not-a-guild")
    assert code == 1
    assert "(the bot refused the request: HTTP 400: bad request)" in capsys.readouterr().out


def test_a_url_without_http_reaches_the_stack(stack):
    url, state_dir, _ = stack
    said = memorybot(
        "chat", "--user", "hal-clean-clone", "--url", url.removeprefix("http://"), "--state-dir", str(state_dir),
        "--say", "I love tea",
    )  # fmt: skip
    assert said.returncode == 0, said.stderr
    assert "memorybot: " in said.stdout and "Traceback" not in said.stderr


# ---- from another folder ---------------------------------------------------------------------------


def test_the_client_started_from_another_folder_finds_the_running_stack(stack, tmp_path):
    url, _, runtime_dir = stack
    said = memorybot("chat", "--user", "ivy-clean-clone", "--url", url, "--say", "I love tea", cwd=tmp_path,
                     runtime_dir=runtime_dir)  # fmt: skip
    assert said.returncode == 0, said.stderr
    assert "memorybot: " in said.stdout
    ran = memorybot("nightly", "--url", url, "--now", "2033-01-02T03:00:00+09:00", cwd=tmp_path,
                    runtime_dir=runtime_dir)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert not (tmp_path / ".memorybot").exists()  # nothing was created in the other folder


def test_without_a_note_the_client_says_the_stack_runs_elsewhere_not_to_start_one(stack, tmp_path):
    url, _, _ = stack
    lost = memorybot(
        "chat", "--user", "jo", "--url", url, "--say", "hi", cwd=tmp_path, runtime_dir=tmp_path / "none", home=tmp_path
    )
    assert lost.returncode == 1 and "Traceback" not in lost.stderr
    assert f"A stack answers at {url}" in lost.stderr and "--state-dir" in lost.stderr
    assert "make run" not in lost.stderr


# ---- make run twice -------------------------------------------------------------------------------


def test_a_second_stack_on_a_taken_port_gets_advice_make_run_can_follow(stack, tmp_path):
    url, _, _ = stack
    port = url.rsplit(":", 1)[1]
    second = memorybot("local", "--port", port, "--state-dir", str(tmp_path), runtime_dir=tmp_path / "r")
    assert second.returncode == 1 and "Traceback" not in second.stderr
    advice = re.search(r"make run PORT=(\d+)", second.stderr)
    assert advice and advice.group(1) != port, second.stderr
    assert f"--url http://127.0.0.1:{port}" in second.stderr  # how to talk to the one running
    assert "Try --port 0" not in second.stderr


# ---- rollback and erase from the terminal -----------------------------------------------------


def nightly_run(stack, now: str) -> int:
    url, state_dir, _ = stack
    ran = memorybot("nightly", "--url", url, "--state-dir", str(state_dir), "--now", now)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout.split("\n", 1)[1])["runId"]


def run_record(stack, run_id: int) -> dict:
    url, state_dir, _ = stack
    admin = {"Authorization": f"Bearer {find_admin_secret(state_dir)}"}
    preview = httpx.post(f"{url}/memory/rollback", json={"runId": run_id, "dryRun": True}, headers=admin)
    return {"status": preview.status_code, **preview.json()}


def test_rollback_shows_a_dry_run_and_changes_nothing_until_confirmed(stack):
    url, state_dir, _ = stack
    run_id = nightly_run(stack, "2034-05-02T03:00:00+09:00")
    args = ("rollback", "--url", url, "--state-dir", str(state_dir), "--run-id", str(run_id))

    declined = memorybot(*args, answer="no\n", terminal=True)
    assert declined.returncode == 1
    assert f"Dry run: rolling back nightly run {run_id} would revert" in declined.stdout
    assert "Type yes to go ahead" in declined.stdout and "Nothing was changed." in declined.stdout
    assert run_record(stack, run_id)["status"] == 200  # still not rolled back

    for piped in ("", "yes\n"):  # no terminal: not even a "yes" piped in confirms
        no_terminal = memorybot(*args, answer=piped)
        assert no_terminal.returncode == 2 and run_record(stack, run_id)["status"] == 200
        assert "read only from a terminal" in no_terminal.stderr and "--yes" in no_terminal.stderr
        assert "Nothing was changed." in no_terminal.stdout and "Traceback" not in no_terminal.stderr

    confirmed = memorybot(*args, answer="yes\n", terminal=True)
    assert confirmed.returncode == 0, confirmed.stderr
    assert confirmed.stdout.index("Dry run:") < confirmed.stdout.index(f"Rolled back nightly run {run_id}")
    assert run_record(stack, run_id) == {"status": 409, "runId": run_id, "alreadyRolledBack": True}

    again = memorybot(*args, "--yes")
    assert again.returncode == 1 and f"Run {run_id} is already rolled back" in again.stderr


def test_erase_shows_a_dry_run_then_erases_only_after_yes(stack):
    url, state_dir, _ = stack
    kim, lee = client_for(stack, "kim-clean-clone"), client_for(stack, "lee-clean-clone")
    kim.chat("I love sailing")
    lee.chat("I love chess")
    args = ("erase", "--url", url, "--state-dir", str(state_dir), "--user", "kim-clean-clone")

    declined = memorybot(*args, answer="n\n", terminal=True)
    assert declined.returncode == 1 and "Nothing was changed." in declined.stdout
    assert f"Dry run: erasing user {user_id_for('kim-clean-clone')}: would delete 1 memories" in declined.stdout
    assert len(memory_ids(kim)) == 1

    piped = memorybot(*args, answer="yes\n")
    assert piped.returncode == 2 and "--yes" in piped.stderr and len(memory_ids(kim)) == 1

    confirmed = memorybot(*args, answer="yes\n", terminal=True)
    assert confirmed.returncode == 0, confirmed.stderr
    assert f"Erased user {kim.user_id}: deleted 1 memories" in confirmed.stdout
    assert "sailing" not in confirmed.stdout + confirmed.stderr  # ids and counts, never memory text
    assert memory_ids(kim) == []
    assert len(memory_ids(lee)) == 1  # nobody else's

    stranger = memorybot("erase", "--url", url, "--state-dir", str(state_dir), "--user", "never-spoke", "--yes")
    assert stranger.returncode == 1 and "nothing to erase" in stranger.stderr


def test_rollback_with_the_wrong_secret_says_where_the_secret_comes_from(stack, tmp_path):
    url, _, _ = stack
    (tmp_path / "admin_secret").write_text("not-this-stacks-secret\n")
    refused = memorybot("rollback", "--url", url, "--state-dir", str(tmp_path), "--yes")
    assert refused.returncode == 1 and "HTTP 401" in refused.stderr and "MEMORYBOT_ADMIN_SECRET" in refused.stderr


def test_rollback_with_no_stack_running_says_so(tmp_path):
    (tmp_path / "admin_secret").write_text("x\n")
    nobody = memorybot("rollback", "--url", "127.0.0.1:9", "--state-dir", str(tmp_path))
    assert nobody.returncode == 2 and "No local stack answers at http://127.0.0.1:9" in nobody.stderr


def test_a_stacks_note_is_there_while_it_runs_and_gone_when_it_is_stopped(tmp_path):
    state_dir = tmp_path / ".memorybot"
    state_dir.mkdir()
    running = StackProcess(state_dir, {})
    note = running.runtime_dir / f"{running.url.rsplit(':', 1)[1]}.json"
    try:
        assert json.loads(note.read_text())["stateDir"] == str(state_dir.resolve())
    finally:
        running.stop()  # SIGTERM, as `kill` sends
    assert running.process.returncode == 0 and not note.exists()


def test_an_operator_command_without_any_secret_says_where_to_get_one(tmp_path):
    lost = memorybot("erase", "--url", "https://example.invalid/prod", "--user-id", "123456789012345678",
                     cwd=tmp_path, runtime_dir=tmp_path / "none", home=tmp_path)  # fmt: skip
    assert lost.returncode == 2 and "Traceback" not in lost.stderr
    assert "set MEMORYBOT_ADMIN_SECRET" in lost.stderr and "--state-dir" in lost.stderr
