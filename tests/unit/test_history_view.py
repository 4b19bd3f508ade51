"""/memory history's Discord edge: the page in the deployment's time zone and the person's
language, its buttons (custom_ids Discord accepts and the parser reads back), and the command
through the interactions handler on moto tables."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from frontdoor import ALICE, BOB, body_of, click, command, context, event, owner, seed
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import Action, Actor
from memorybot.core.rights.history import ChangeKind, HistoryLine, HistoryPage, Who
from memorybot.discord import history_view, requests
from memorybot.handlers.interactions import handler

AT = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)
KEY = "2026-11-30T23:30:00.000000Z#0123456789ab"
LONGEST_USER = "18446744073709551615"


def line(n: int = 1, *, undoable: bool = True) -> HistoryLine:
    return HistoryLine(KEY, "kjp8y", ChangeKind.UPDATED, Who.CONVERSATION, AT, "x" * 80, "y" * 80, False, undoable)


def test_dates_are_in_the_deployments_time_zone():
    page = HistoryPage((line(),))
    tokyo = history_view.page_answer(page, ALICE, "dm", ZoneInfo("Asia/Tokyo"), "en-US", older=False)["content"]
    paris = history_view.page_answer(page, ALICE, "dm", ZoneInfo("Europe/Paris"), "en-US", older=False)["content"]
    assert "2026-12-01 08:30 JST" in tokyo  # 23:30 UTC is the next morning in Tokyo
    assert "2026-12-01 00:30 CET" in paris


def test_the_page_is_in_japanese_for_a_japanese_locale():
    data = history_view.page_answer(HistoryPage((line(),)), ALICE, "dm", UTC, "ja", older=False)
    assert "会話が更新" in data["content"] and "「" in data["content"]
    assert data["components"][0]["components"][0]["label"] == "取り消し 1"
    assert "取り消しました" in history_view.undo_text(
        history_view.UndoResult(history_view.UndoOutcome.UNDONE, "kjp8y", ChangeKind.UPDATED), "ja"
    )


def test_a_full_page_fits_one_message_and_its_buttons_fit_discords_limits():
    page = HistoryPage(tuple(line(n) for n in range(6)), older=KEY)
    data = history_view.page_answer(page, LONGEST_USER, "guild:" + LONGEST_USER, UTC, "en-US", older=False)
    assert len(data["content"]) <= 2000 and data["content"].count("→") == 6  # nothing cut off
    buttons = [b for row in data["components"] for b in row["components"]]
    assert len(buttons) == 7 and all(len(row["components"]) <= 5 for row in data["components"])
    assert all(len(b["custom_id"]) <= 100 for b in buttons)
    assert [b["label"] for b in buttons][-1] == "Older"


def test_a_page_of_texts_made_of_markup_is_shown_as_written_and_still_fits_one_message():
    marked = dataclasses.replace(line(), before="*" * 80, after="[x](https://x.example) " * 4)
    page = HistoryPage((marked,) * 6, older=KEY)
    content = history_view.page_answer(page, LONGEST_USER, "guild:1", UTC, "en-US", older=False)["content"]
    assert len(content) <= 2000 and content.count("→") == 6 and content.endswith("since).")
    assert "“" + "\\*" * 60 + "”" in content  # cut in the text, never inside an escape
    assert "[x](" not in content and "\\[x\\](https://x.example)" in content


def test_only_undoable_changes_get_a_button():
    page = HistoryPage((line(1), line(2, undoable=False)))
    data = history_view.page_answer(page, ALICE, "dm", UTC, "en-US", older=False)
    assert [b["label"] for row in data["components"] for b in row["components"]] == ["Undo 1"]


def test_the_buttons_custom_ids_are_read_back_as_the_requests_they_name():
    undo = requests.parse(json.dumps(click(history_view.undo_button(BOB, KEY))).encode())
    assert isinstance(undo, requests.UndoChange) and (undo.requester, undo.key, undo.caller.user_id) == (
        BOB,
        KEY,
        ALICE,
    )
    older = requests.parse(json.dumps(click(history_view.older_button(ALICE, KEY))).encode())
    assert isinstance(older, requests.ShowHistory) and (older.older_than, older.requester) == (KEY, ALICE)
    forged = requests.parse(json.dumps(click(f"{history_view.UNDO_BUTTON}:{ALICE}:not-a-key")).encode())
    assert isinstance(forged, requests.UnknownComponent)


def history_command(**kw):
    return command("memory", [{"type": 1, "name": "history", "options": []}], **kw)


def call(payload):
    return body_of(handler(event(payload), context()))


def test_history_and_undo_through_the_handler(front):
    front.settings = dataclasses.replace(front.settings, timezone="Europe/Paris")
    memory = seed(front.memory_store, ALICE, "kjp8y", "lives in Osaka")
    after = dataclasses.replace(memory, text="lives in Kyoto", updated_at=datetime.now(UTC))
    front.memory_store.apply(Change(Action.UPDATE, memory, after, "jev"), actor=Actor.EXTRACTION)
    answer = call(history_command())
    assert answer["data"]["flags"] == 64  # only the caller sees it
    assert "updated by a conversation" in answer["data"]["content"] and "CET" in answer["data"]["content"]
    undo = next(
        b["custom_id"]
        for row in answer["data"]["components"]
        for b in row["components"]
        if b["label"] == "Undo 1"  # the update: the newest change
    )
    assert "only the person" in call(click(undo, user=BOB))["data"]["content"]
    assert front.memory_store.get(owner(ALICE), "kjp8y").text == "lives in Kyoto"
    done = call(click(undo))
    assert "Undone: memory kjp8y" in done["data"]["content"]
    assert front.memory_store.get(owner(ALICE), "kjp8y").text == "lives in Osaka"
    again = call(click(undo))  # a new click on the same button: judged afresh
    assert "has changed since" in again["data"]["content"]
