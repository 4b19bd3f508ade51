"""`memorybot register-commands` installs /chat and /memory with one bulk overwrite."""

from __future__ import annotations

from frontdoor import APP_ID
from memorybot import cli, config


def _configure(monkeypatch, base: str, **extra: str) -> None:
    monkeypatch.setenv("DISCORD_API_BASE", base)
    for name in ("DISCORD_APPLICATION_ID", "DISCORD_BOT_TOKEN", "DISCORD_BOT_TOKEN_SECRET_NAME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in extra.items():
        monkeypatch.setenv(name, value)
    config.settings.cache_clear()


def test_register_commands_for_a_guild(discord_api, monkeypatch, capsys):
    recorder, base = discord_api
    _configure(monkeypatch, base, DISCORD_APPLICATION_ID=APP_ID, DISCORD_BOT_TOKEN="tok")
    try:
        assert cli.main(["register-commands", "--guild", "42"]) == 0
    finally:
        config.settings.cache_clear()
    [put] = recorder.of_kind("commands")
    assert (put.method, put.path) == ("PUT", f"applications/{APP_ID}/guilds/42/commands")
    assert put.headers["authorization"] == "Bot tok"
    assert "/chat, /memory" in capsys.readouterr().out


def test_register_commands_without_credentials_says_what_is_missing(discord_api, monkeypatch, capsys):
    recorder, base = discord_api
    _configure(monkeypatch, base)
    try:
        assert cli.main(["register-commands"]) == 2
    finally:
        config.settings.cache_clear()
    assert recorder.events == []
    assert "DISCORD_BOT_TOKEN" in capsys.readouterr().err
