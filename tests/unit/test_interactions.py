"""Each command through the interactions handler, signed like Discord, on moto tables and a
loopback fake Discord API."""

from __future__ import annotations

import dataclasses
import json

import pytest

from frontdoor import (
    ALICE,
    APP_ID,
    BOB,
    CHANNEL,
    GUILD,
    SCOPE,
    body_of,
    chat,
    command,
    context,
    event,
    forget,
    owner,
    seed,
    show,
)
from memorybot.adapters.discord_rest import DiscordRest
from memorybot.core.record.catalog import text
from memorybot.core.record.domain import GLOBAL_SCOPE, Action, Actor, ScopeMode, snowflake_time
from memorybot.discord import interactions, requests
from memorybot.handlers.interactions import handler

SECRET = "allergic to penicillin, keeps it quiet"


def call(payload=None, **kw):
    return handler(event(payload, **kw), context())


def nothing_written(front) -> None:
    assert front.invoker.calls == []
    assert front.message_store.recent(CHANNEL, 10) == []
    assert [e for e in front.memory_store.ledger_for(owner(ALICE)) if e.action is not Action.READ] == []


def test_ping_is_answered_with_pong(front):
    response = call({"type": 1})
    assert response["statusCode"] == 200
    assert body_of(response) == {"type": 1}


def test_chat_stores_the_message_at_its_snowflake_time_defers_and_hands_off_to_the_reply_worker(front):
    payload = chat("I just adopted a cat called Miso", user_name="alice")
    response = call(payload)
    assert body_of(response) == {"type": 5}
    [stored] = front.message_store.recent(CHANNEL, 10)
    assert (stored.message_id, stored.author_id, stored.author_name, stored.is_bot) == (
        payload["id"],
        ALICE,
        "alice",
        False,
    )
    assert stored.content == "I just adopted a cat called Miso"
    assert stored.created_at == snowflake_time(payload["id"])
    # alice's own line to the bot, in the server's scope: it may decide her memories there
    assert (stored.scope, stored.conversation_of) == (SCOPE, ALICE)
    assert front.invoker.calls == [
        (
            "reply",
            {
                "interaction_id": payload["id"],
                "token": payload["token"],
                "application_id": APP_ID,
                "channel_id": CHANNEL,
                "user_id": ALICE,
                "user_name": "alice",
                "scope": SCOPE,
                "locale": "",  # the payload names none: the notice will be in English
                "guild_id": GUILD,  # its settings apply to the reply
            },
        )
    ]


def test_chat_in_a_dm_takes_the_user_from_the_top_level(front):
    payload = chat("hello")
    payload["user"] = payload.pop("member")["user"]
    del payload["guild_id"]
    payload["context"] = 1  # the bot's DM
    assert body_of(call(payload)) == {"type": 5}
    assert front.invoker.calls[0][1]["user_id"] == ALICE
    assert front.invoker.calls[0][1]["scope"] == "dm"


def test_chat_in_a_group_dm_is_scoped_to_that_channel(front):
    payload = chat("hello")
    payload["user"] = payload.pop("member")["user"]
    del payload["guild_id"]
    payload["context"] = 2
    assert body_of(call(payload)) == {"type": 5}
    assert front.invoker.calls[0][1]["scope"] == f"channel:{CHANNEL}"


def test_a_guild_interaction_without_a_guild_id_is_refused_with_400(front):
    payload = chat("hello")
    del payload["guild_id"]  # a member but no server: the scope would be unknown
    assert call(payload)["statusCode"] == 400
    nothing_written(front)


def test_with_the_global_scope_mode_every_conversation_shares_one_profile(front):
    front.settings = dataclasses.replace(front.settings, memory_scope=ScopeMode.GLOBAL)
    assert body_of(call(chat("hello"))) == {"type": 5}
    assert front.invoker.calls[0][1]["scope"] == GLOBAL_SCOPE


def test_an_empty_chat_gets_a_polite_ephemeral_and_writes_nothing(front):
    answer = body_of(call(chat("   ")))
    assert answer["type"] == 4 and answer["data"]["flags"] == 64
    nothing_written(front)


@pytest.mark.parametrize(
    "raw",
    [
        b"{not json",
        b"[1, 2]",
        b'{"type": 99}',
        b'{"type": 2}',
        b'{"type": 2, "data": {"name": "chat"}, "channel_id": "1"}',
    ],
    ids=["malformed", "not-an-object", "unknown-type", "no-data", "no-user"],
)
def test_unreadable_requests_get_400_and_nothing_is_written(front, raw):
    response = call(raw=raw)
    assert response["statusCode"] == 400
    nothing_written(front)


def test_an_interaction_id_that_is_not_a_snowflake_is_refused_with_400(front):
    payload = chat("hello")
    payload["id"] = "not-a-number"
    assert call(payload)["statusCode"] == 400
    nothing_written(front)


def test_an_autocomplete_for_an_unknown_option_gets_no_choices(front):
    answer = body_of(call(command("chat", [{"type": 3, "name": "message", "value": "x", "focused": True}], kind=4)))
    assert answer == {"type": 8, "data": {"choices": []}}
    nothing_written(front)


def test_an_unknown_command_gets_a_polite_ephemeral(front):
    answer = body_of(call(command("dance")))
    assert answer["data"]["content"] == text("unsupported")
    assert answer["data"]["flags"] == 64
    nothing_written(front)


def test_a_failing_store_never_becomes_a_500(front):
    class Broken:
        def put(self, message):
            raise RuntimeError("table gone")

    front.message_store = Broken()
    response = call(chat("hello"))
    assert response["statusCode"] == 200
    assert body_of(response)["data"]["flags"] == 64
    assert front.invoker.calls == []


def test_show_sends_the_list_by_dm_and_answers_ephemerally(front):
    mine = seed(front.memory_store, ALICE, "abcde", SECRET)
    seed(front.memory_store, BOB, "bcdef", "bob's own secret")
    answer = body_of(call(show()))
    assert answer["data"]["flags"] == 64
    assert answer["data"]["content"] == text("dm_sent")
    assert SECRET not in json.dumps(answer)
    [dm] = front.recorder.dms_to(ALICE)
    assert mine.preview() in dm.content
    assert "bob" not in dm.content
    assert dm.body["allowed_mentions"] == {"parse": []}
    reads = [e for e in front.memory_store.ledger_for(owner(ALICE)) if e.action is Action.READ]
    assert [(e.actor, e.memory_ids) for e in reads] == [(Actor.COMMAND, ("abcde",))]


def test_show_with_closed_dms_says_so_without_repeating_any_memory(front):
    seed(front.memory_store, ALICE, "abcde", SECRET)
    front.recorder.close_dms(ALICE)
    answer = body_of(call(show()))
    assert answer["data"]["content"] == text("dm_failed")
    assert answer["data"]["flags"] == 64
    assert SECRET not in json.dumps(answer) and "abcde" not in json.dumps(answer)
    # Nothing reached any channel: no message, no edit.
    assert [e.kind for e in front.recorder.events] == ["dm_open"]


def test_show_when_discord_is_unreachable_says_so_without_repeating_any_memory(front):
    seed(front.memory_store, ALICE, "abcde", SECRET)
    front.discord_interactive = DiscordRest("http://127.0.0.1:9/api/v10", "t", timeout=0.5, max_attempts=1)
    answer = body_of(call(show()))
    assert answer["data"]["content"] == text("dm_failed")
    assert SECRET not in json.dumps(answer)


def test_show_with_nothing_remembered_says_so_without_a_dm(front):
    answer = body_of(call(show()))
    assert answer["data"]["content"] == text("nothing_remembered", where=interactions.scope_label(SCOPE))
    assert front.recorder.events == []


def test_forget_deletes_the_callers_memory_and_confirms_ephemerally(front):
    seed(front.memory_store, ALICE, "abcde", SECRET)
    answer = body_of(call(forget("abcde")))
    assert answer["data"]["flags"] == 64
    assert "abcde" in answer["data"]["content"] and "Forgotten" in answer["data"]["content"]
    assert front.memory_store.get(owner(ALICE), "abcde") is None
    [delete] = [e for e in front.memory_store.ledger_for(owner(ALICE)) if e.action is Action.DELETE]
    assert delete.actor is Actor.COMMAND


def test_forget_of_someone_elses_id_is_not_found_and_deletes_nothing(front):
    seed(front.memory_store, BOB, "bcdef", "bob's own secret")
    answer = body_of(call(forget("bcdef", user=ALICE)))
    assert "not found" in answer["data"]["content"]
    assert front.memory_store.get(owner(BOB), "bcdef") is not None


def test_autocomplete_offers_only_the_callers_own_memories_and_logs_the_read(front):
    seed(front.memory_store, ALICE, "abcde", "likes green tea")
    seed(front.memory_store, ALICE, "cdefg", "plays the cello")
    seed(front.memory_store, BOB, "bcdef", "likes black tea")
    answer = body_of(call(forget("tea", kind=4)))
    assert answer["type"] == 8
    assert answer["data"]["choices"] == [{"name": "abcde likes green tea", "value": "abcde"}]
    reads = [e for e in front.memory_store.ledger_for(owner(ALICE)) if e.action is Action.READ]
    assert [e.actor for e in reads] == [Actor.COMMAND]
    assert [e for e in front.memory_store.ledger_for(owner(BOB)) if e.action is Action.READ] == []


def test_show_and_forget_in_one_server_never_reach_what_was_learned_in_another(front):
    seed(front.memory_store, ALICE, "abcde", "learned here")
    seed(front.memory_store, ALICE, "cdefg", SECRET, scope="guild:900000000000000009")
    answer = body_of(call(show()))
    assert answer["data"]["content"] == text("dm_sent")
    [dm] = front.recorder.dms_to(ALICE)
    assert "learned here" in dm.content and SECRET not in dm.content and "cdefg" not in dm.content
    assert "not found" in body_of(call(forget("cdefg")))["data"]["content"]
    assert front.memory_store.get(owner(ALICE, "guild:900000000000000009"), "cdefg") is not None


def test_autocomplete_choices_are_capped_at_25_with_names_of_at_most_100_chars():
    answer = interactions.choices([(f"id{i}", "x" * 300) for i in range(40)])
    assert len(answer["data"]["choices"]) == 25
    assert all(len(c["name"]) == 100 for c in answer["data"]["choices"])


def test_the_registered_commands_are_chat_memory_show_forget_why_export_forget_all_pause_resume_history_and_remember_this():
    chat_cmd, memory_cmd, remember_cmd = (c for c in requests.COMMANDS if c["name"] != "memory-settings")
    message_option = chat_cmd["options"][0]
    assert chat_cmd["name"] == "chat" and (message_option["type"], message_option["name"]) == (3, "message")
    assert message_option["required"] is True
    # the longest line the bot keeps: Discord's client refuses a longer one before it is sent
    assert message_option["max_length"] == requests.MESSAGE_MAX_CHARS
    subs = {o["name"]: o for o in memory_cmd["options"]}
    assert set(subs) == {
        *("show", "forget", "why", "export", "forget-all", "pause", "resume", "history"),
        *("receipts", "everywhere", "here"),
    }
    for name in ("forget", "why", "everywhere", "here"):
        [id_option] = subs[name]["options"]
        assert (id_option["name"], id_option["required"], id_option["autocomplete"]) == ("id", True, True)
    assert all("options" not in subs[name] for name in ("export", "pause", "resume", "history"))
    [everywhere] = subs["forget-all"]["options"]  # everywhere:true clears the "everywhere" memories too
    assert (everywhere["name"], everywhere["type"], everywhere["required"]) == ("everywhere", 5, False)
    [enabled] = subs["receipts"]["options"]
    assert (enabled["name"], enabled["type"], enabled["required"]) == ("enabled", 5, True)
    assert (remember_cmd["type"], remember_cmd["name"]) == (3, "Remember this")
    assert remember_cmd["name_localizations"] == {"ja": "これを覚えて"}
    for defined in (chat_cmd, memory_cmd, remember_cmd):  # in servers, the bot's DM and a person's own DMs and groups
        assert (defined["contexts"], defined["integration_types"]) == ([0, 1, 2], [0, 1])


# ---- every interaction Discord sends gets an answer a person can read


def component(kind: int, custom_id: str | None = "confirm:123") -> dict:
    payload = command("memory")
    payload["type"] = kind
    payload["data"] = {"custom_id": custom_id, "component_type": 2} if custom_id is not None else {"component_type": 2}
    return payload


@pytest.mark.parametrize("kind", [3, 5], ids=["button-click", "modal-submit"])
def test_a_component_the_bot_does_not_act_on_gets_a_polite_ephemeral(front, kind):
    response = call(component(kind))
    assert response["statusCode"] == 200  # a 400 would make Discord show "This interaction failed"
    answer = body_of(response)
    assert answer["type"] == 4 and answer["data"]["flags"] == 64
    assert answer["data"]["content"] == text("stale_component")
    nothing_written(front)


def test_a_component_without_a_custom_id_is_unreadable(front):
    assert call(component(3, custom_id=None))["statusCode"] == 400
    nothing_written(front)


def test_forget_without_an_id_asks_for_one(front):
    seed(front.memory_store, ALICE, "abcde", SECRET)
    answer = body_of(call(forget("")))
    assert answer["data"]["content"] == text("forget_which") and answer["data"]["flags"] == 64
    assert front.memory_store.get(owner(ALICE), "abcde") is not None


def in_bot_dm(payload: dict) -> dict:
    user = payload.pop("member")["user"]
    del payload["guild_id"]
    return {**payload, "user": user, "context": 1, "channel": {"id": payload["channel_id"], "type": 1}}


def in_group_dm(payload: dict) -> dict:
    user = payload.pop("member")["user"]
    del payload["guild_id"]
    return {**payload, "user": user, "context": 2, "channel": {"id": payload["channel_id"], "type": 3}}


@pytest.mark.parametrize(
    "where, scope",
    [(in_bot_dm, "dm"), (in_group_dm, f"channel:{CHANNEL}")],
    ids=["bot-dm", "group-dm"],
)
def test_a_failed_dm_outside_a_server_does_not_send_the_person_to_a_servers_settings(front, where, scope):
    seed(front.memory_store, ALICE, "abcde", SECRET, scope=scope)
    front.recorder.close_dms(ALICE)
    answer = body_of(call(where(show())))
    assert answer["data"]["content"] == text("dm_failed_no_server")
    assert "server" not in answer["data"]["content"]
    assert SECRET not in json.dumps(answer)


def test_a_failed_dm_with_one_profile_everywhere_covers_both_places(front):
    front.settings = dataclasses.replace(front.settings, memory_scope=ScopeMode.GLOBAL)
    seed(front.memory_store, ALICE, "abcde", SECRET, scope=GLOBAL_SCOPE)
    front.recorder.close_dms(ALICE)
    answer = body_of(call(show()))
    assert answer["data"]["content"] == text("dm_failed_anywhere")
