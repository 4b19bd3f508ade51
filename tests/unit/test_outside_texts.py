"""Text from outside shown as written on Discord (markdown_escaped), times in the deployment's zone
(local_stamp), the terminal client's button hints, export saving and nightly hint, and the
offline stand-in's ordinary lines with "forget" in them."""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakes import T0, Clock, FakeMemoryStore, memory, message
from memorybot.adapters.offline import OfflineChatModel, OfflineDecisionModel, _is_forget
from memorybot.core.record.dates import local_stamp
from memorybot.core.record.domain import GLOBAL_SCOPE, Speaker
from memorybot.core.turn.extraction import Extractor
from memorybot.discord.formats import markdown_escaped, markdown_shown
from memorybot.local import client as client_module
from memorybot.local.client import LocalClient, button_command, nightly_lines

# What Discord's markdown makes of a line, as a reader sees it: each rule finds markup that is
# not escaped (no backslash right before it).
UNESCAPED = {
    "masked link": re.compile(r"(?<!\\)\[[^\]\n]*(?<!\\)\]\("),
    "bold or italics": re.compile(r"(?<!\\)\*"),
    "underline or italics": re.compile(r"(?<!\\)_"),
    "strike": re.compile(r"(?<!\\)~"),
    "spoiler": re.compile(r"(?<!\\)\|"),
    "code": re.compile(r"(?<!\\)`"),
    "mention or tag": re.compile(r"(?<!\\)<[@#:/at]"),
    "heading, quote or list": re.compile(r"^[ \t]*(?:#|>|-|\+|[0-9]+[.)])", re.MULTILINE),
}


def discord_shows(raw: str) -> str:
    """A backslash before punctuation is not shown (Discord's escape rule), written independently."""
    return re.sub(r"\\([^0-9A-Za-z\s])", r"\1", raw)


def markup_in(raw: str) -> list[str]:
    return [name for name, rule in UNESCAPED.items() if rule.search(raw)]


HOSTILE = [
    "[evil](https://x.example) @everyone",
    "# Heading\n## two\n-# subtext\n> quote\n>>> all of it",
    "- item\n+ item\n* item\n  1. numbered\n2) also",
    "**bold** *it* __under__ _it_ ~~strike~~ ||spoiler|| `code` ```block```",
    "<@123456789012345678> <@&1> <#2> <t:1700000000:R> </memory show:1> <:e:3>",
    "back\\slash \\*not bold\\* and a trailing \\",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_outside_text_is_shown_as_written_with_no_markup_taken_from_it(text):
    raw = markdown_escaped(text)
    assert markup_in(raw) == []
    assert discord_shows(raw) == text == markdown_shown(raw)


def test_plain_text_is_left_as_it_is():
    for text in ("Loves green tea", "京都に住んでいます", "until 2026-12-31 (a plan)", "08:44 JST"):
        assert markdown_escaped(text) == text


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60))
def test_any_text_round_trips_and_carries_no_markup(text):
    raw = markdown_escaped(text)
    assert discord_shows(raw) == text
    assert markup_in(raw) == []


def test_a_stamp_names_its_zone_and_a_zone_without_an_abbreviation_by_its_offset():
    at = datetime(2026, 12, 1, 23, 44, tzinfo=UTC)
    assert local_stamp(at, ZoneInfo("Asia/Tokyo")) == "2026-12-02 08:44 JST"
    assert local_stamp(at, ZoneInfo("America/New_York")) == "2026-12-01 18:44 EST"
    assert local_stamp(at, UTC) == "2026-12-01 23:44 UTC"
    assert local_stamp(at, ZoneInfo("America/Sao_Paulo")) == "2026-12-01 20:44 UTC-03"


# ---- the terminal client


def test_each_button_hint_names_the_command_that_clicks_it():
    client = LocalClient("http://127.0.0.1:1", "ann", "00" * 32)
    data = {
        "components": [
            {
                "type": 1,
                "components": [
                    {"label": "Undo 1", "custom_id": "memory-undo:1:k1"},
                    {"label": "取り消し 2", "custom_id": "memory-undo:1:k2"},
                    {"label": "Older", "custom_id": "memory-history:1:k2"},
                ],
            }
        ]
    }
    assert client._buttons(data) == [
        "  [button: Undo 1] (type /undo 1 to click it)",
        "  [button: 取り消し 2] (type /undo 2 to click it)",
        "  [button: Older] (type /older to click it)",
    ]
    assert button_command("memory-forget-all:1:2", "Forget everything") == "/confirm"


def test_a_replys_why_stays_clickable_after_the_receipt_that_follows_it(monkeypatch):
    client = LocalClient("http://127.0.0.1:1", "ann", "00" * 32)
    clicked: list[str | None] = []
    monkeypatch.setattr(client, "click", lambda custom_id=None, **_: clicked.append(custom_id) or [])
    client._buttons({"components": [{"type": 1, "components": [{"label": "Why?", "custom_id": "memory-because:1:9"}]}]})
    client._buttons({"components": [{"type": 1, "components": [{"label": "Undo 1", "custom_id": "memory-undo:1:k"}]}]})
    client.button_starting("memory-because")
    assert clicked == ["memory-because:1:9"]
    assert client.button_starting("memory-overnight") == ["(no such button shown lately)"]


EXPORTED = {"version": 1, "scopes": [{"scope": "guild:1", "memories": [{"text": "京都 **x**"}]}]}


def exporting_client(monkeypatch) -> LocalClient:
    client = LocalClient("http://127.0.0.1:1", "ann", "00" * 32)
    text = json.dumps(EXPORTED, ensure_ascii=False, indent=2)

    def export() -> list[str]:  # what _posted makes of the DM that carries the file
        client.files.append(("memorybot-export.json", text))
        return [
            "memorybot: (only you can see this) I sent you a DM with a JSON file",
            "[DM from memorybot to ann]\nYour memorybot export (every scope).",
            f"[attached file memorybot-export.json]\n{text}",
        ]

    monkeypatch.setattr(client, "export", export)
    return client


def test_export_saves_the_file_here_by_default_and_says_where(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    client = exporting_client(monkeypatch)
    lines = client.handle_line("/memory export")
    saved = tmp_path / "memorybot-export.json"
    assert json.loads(saved.read_text(encoding="utf-8")) == EXPORTED
    assert lines[-1].startswith(f"[attached file memorybot-export.json: saved to {saved}")
    assert not any('"scopes"' in line for line in lines)  # the file's text is in the file, not the terminal


def test_export_saves_to_the_path_or_folder_given(monkeypatch, tmp_path):
    client = exporting_client(monkeypatch)
    named = tmp_path / "mine.json"
    assert str(named) in client.handle_line(f"/memory export {named}")[-1]
    assert json.loads(named.read_text(encoding="utf-8")) == EXPORTED
    folder = tmp_path / "exports"
    folder.mkdir()
    client.handle_line(f"/memory export {folder}")
    assert json.loads((folder / "memorybot-export.json").read_text(encoding="utf-8")) == EXPORTED
    missing = tmp_path / "no" / "such" / "dir" / "x.json"
    assert "not saved to" in client.handle_line(f"/memory export {missing}")[-1]


def test_the_second_nightly_suggests_the_next_night_not_a_fixed_date():
    at = client_module.night_about_to_end(datetime(2026, 12, 1, 23, 44, tzinfo=UTC))  # 08:44 JST on 2 December
    [line] = nightly_lines(409, {"status": "already_claimed"}, at)
    assert "JST day 2026-12-02" in line
    assert line.endswith("/nightly 2026-12-04T03:00:00+09:00")  # the night of 3 December
    [cli] = nightly_lines(409, {}, at, "memorybot nightly --now")
    assert cli.endswith("memorybot nightly --now 2026-12-04T03:00:00+09:00")


# ---- the offline stand-in


@pytest.mark.parametrize(
    ("line", "asks"),
    [
        ("forget that I like jazz", True),
        ("Please forget my sister", True),
        ("Can you forget about my cat?", True),
        ("I no longer like tea", True),
        ("忘れてください", True),
        ("Don't forget the milk", False),
        ("I always forget my keys", False),
        ("I tend to forget names", False),
        ("昨日の約束を忘れてた", False),
    ],
)
def test_forget_is_a_request_only_when_nothing_before_it_says_otherwise(line, asks):
    assert _is_forget(line) is asks


@pytest.mark.parametrize(
    ("line", "profile"),
    [
        ("Don't forget the milk", 0),
        ("Don't forget the milk", 1),
        ("I always forget my keys", 0),
        ("I always forget my keys", 1),
        ("forget that I like tea", 1),  # the memory is deleted; the add's draft beside it was dropped
    ],
)
def test_an_ordinary_line_with_forget_logs_no_failure(line, profile, caplog):
    clock = Clock()
    store = FakeMemoryStore(clock)
    if profile:
        store.seed(memory("u1", "k3x9a", "[offline] Loves tea", at=T0))
    extractor = Extractor(store, OfflineDecisionModel(), OfflineChatModel(), clock=clock)
    with caplog.at_level(logging.DEBUG):
        extractor.run(Speaker("u1", "alice"), GLOBAL_SCOPE, [message("u1", line, name="alice", at=T0)])
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
