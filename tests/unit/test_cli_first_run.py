"""The `memorybot` command's first-run answers that need no stack: plain `memorybot` shows the
help, a bad --guild or --url is refused with the reason (exit 2), the forms the bot's own DM
teaches are read, and a command missing its id asks for it without sending anything."""

from __future__ import annotations

import json

import pytest

from memorybot import cli
from memorybot.local import running
from memorybot.local.client import TEXT_FORGET_WHICH, TEXT_WHY_WHICH, LocalClient, memory_id_typed, normalize_url


def test_plain_memorybot_prints_the_help_and_exits_zero(capsys):
    assert cli.main([]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("usage: memorybot")
    for command in ("local", "chat", "nightly", "rollback", "erase"):
        assert command in shown


@pytest.mark.parametrize("option", ["--guild", "--channel"])
@pytest.mark.parametrize("value", ["abc", "1200000000000000001x", "-1", "", "99999999999999999999999"])
def test_a_guild_or_channel_that_is_not_a_discord_id_is_refused_with_the_reason(option, value, capsys):
    with pytest.raises(SystemExit) as refused:
        cli.main(["chat", "--user", "alice", option, value])
    assert refused.value.code == 2
    error = capsys.readouterr().err
    assert "is not a Discord id" in error and "1200000000000000001" in error and "Traceback" not in error


def test_a_discord_id_is_accepted_as_guild(monkeypatch):
    seen = {}
    monkeypatch.setattr(cli, "_chat", lambda args: seen.setdefault("guild", args.guild) and 0)
    cli.main(["chat", "--user", "alice", "--guild", "1200000000000000002"])
    assert seen == {"guild": "1200000000000000002"}


@pytest.mark.parametrize(
    ("typed", "url"),
    [
        ("127.0.0.1:8787", "http://127.0.0.1:8787"),
        ("localhost:8788/", "http://localhost:8788"),
        ("http://127.0.0.1:8787/", "http://127.0.0.1:8787"),
        (
            "https://abc.execute-api.eu-west-1.amazonaws.com/prod",
            "https://abc.execute-api.eu-west-1.amazonaws.com/prod",
        ),
    ],
)
def test_a_url_without_its_scheme_is_read_as_http(typed, url):
    assert normalize_url(typed) == url


@pytest.mark.parametrize("typed", ["ftp://127.0.0.1:8787", "http://", "127.0.0.1:port", ":8787"])
def test_a_url_that_is_no_address_is_refused_with_the_form_to_use(typed, capsys):
    with pytest.raises(ValueError, match="http://127.0.0.1:8787"):
        normalize_url(typed)
    with pytest.raises(SystemExit) as refused:
        cli.main(["nightly", "--url", typed])
    assert refused.value.code == 2 and "give e.g. http://127.0.0.1:8787" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("typed", "memory_id"),
    [("cq6u9", "cq6u9"), ("id:cq6u9", "cq6u9"), ("ID: cq6u9", "cq6u9"), (" id:cq6u9 ", "cq6u9"), ("id:", "")],
)
def test_the_id_form_the_dm_teaches_is_read_as_the_id(typed, memory_id):
    assert memory_id_typed(typed) == memory_id


def _offline_client() -> LocalClient:
    """A client whose stack does not exist: any request it sent would fail."""
    return LocalClient("http://127.0.0.1:9", "alice", "11" * 32, _application_id="1")


@pytest.mark.parametrize(
    ("line", "answer"),
    [
        ("/memory why", TEXT_WHY_WHICH),
        ("/memory why   ", TEXT_WHY_WHICH),
        ("/memory why id:", TEXT_WHY_WHICH),
        ("/memory forget id:", TEXT_FORGET_WHICH),
    ],
)
def test_why_or_forget_without_an_id_asks_for_one_and_sends_nothing(line, answer):
    assert _offline_client().handle_line(line) == [answer]


def test_forget_and_why_send_the_bare_id_of_the_id_form(monkeypatch):
    client = _offline_client()
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(client, "forget", lambda memory_id: sent.append(("forget", memory_id)) or [])
    monkeypatch.setattr(client, "why", lambda memory_id: sent.append(("why", memory_id)) or [])
    client.handle_line("/memory forget id:cq6u9")
    client.handle_line("/memory why id:kjp8y")
    assert sent == [("forget", "cq6u9"), ("why", "kjp8y")]


def test_a_stacks_note_names_its_state_dir_until_it_stops(tmp_path, monkeypatch):
    monkeypatch.setenv(running.RUNTIME_DIR_ENV, str(tmp_path / "running"))
    state_dir = tmp_path / "elsewhere" / ".memorybot"
    state_dir.mkdir(parents=True)
    note = running.leave_note("http://127.0.0.1:8790", state_dir)
    assert json.loads(note.read_text())["stateDir"] == str(state_dir.resolve())
    assert running.state_dir_for("http://127.0.0.1:8790") == state_dir.resolve()
    assert running.state_dir_for("http://localhost:8790/") == state_dir.resolve()  # the port decides
    assert running.state_dir_for("http://127.0.0.1:8791") is None  # another port: no note
    running.remove_note(note)
    assert running.state_dir_for("http://127.0.0.1:8790") is None


def test_a_note_left_by_a_later_stack_on_the_port_is_not_removed(tmp_path, monkeypatch):
    monkeypatch.setenv(running.RUNTIME_DIR_ENV, str(tmp_path))
    note = running.leave_note("http://127.0.0.1:8790", tmp_path)
    note.write_text(json.dumps({"url": "http://127.0.0.1:8790", "stateDir": str(tmp_path), "pid": -1}))
    running.remove_note(note)
    assert note.exists()


def test_a_note_whose_folder_is_gone_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv(running.RUNTIME_DIR_ENV, str(tmp_path))
    running.leave_note("http://127.0.0.1:8790", tmp_path / "gone")
    assert running.state_dir_for("http://127.0.0.1:8790") is None


@pytest.mark.parametrize(
    ("line", "called"),
    [
        ("/memory show", ("show",)),
        ("/memory show please", ("show",)),
        ("/memory suggest bees", ("suggest", "bees")),
        ("/memory export", ("export",)),
        ("/memory forget-all", ("forget_all",)),
        ("/memory pause", ("pause",)),
        ("/memory resume", ("resume",)),
        ("/confirm", ("click",)),
        ("/nightly", ("nightly", None)),
        ("/nightly 2026-12-02T03:00:00+09:00", ("nightly", "2026-12-02T03:00:00+09:00")),
        ("/chat /memory show", ("chat", "/memory show")),
        ("I like tea", ("chat", "I like tea")),
        ("/remember I like tea", ("remember", "I like tea", None)),
        ("/remember @bob I like tea", ("remember", "I like tea", "bob")),
    ],
)
def test_each_typed_command_reaches_its_action_with_the_rest_of_the_line(monkeypatch, line, called):
    client = _offline_client()
    seen: list[tuple] = []
    for name in ("show", "suggest", "export", "forget_all", "pause", "resume", "click", "nightly", "chat", "remember"):
        monkeypatch.setattr(client, name, lambda *args, _name=name: seen.append((_name, *args)) or [])
    assert client.handle_line(line) == []
    assert seen == [called]


@pytest.mark.parametrize("line", ["/memory", "/memory dance", "/memorything", "/dance", "/quit now"])
def test_an_unknown_command_is_named_and_nothing_is_sent(line):
    [answer] = _offline_client().handle_line(line)
    assert answer.startswith(f"Unknown command {line.split()[0] if line.split()[0] != '/memory' else line}:")


def test_chat_and_remember_without_text_ask_for_it_and_quit_quits():
    client = _offline_client()
    assert client.handle_line("/chat") == ["Say something after /chat."]
    assert client.handle_line("/remember   ")[0].startswith("Give the message to remember")
    assert client.handle_line("") == []
    assert client.handle_line("/quit") is None and client.handle_line(" /exit ") is None
