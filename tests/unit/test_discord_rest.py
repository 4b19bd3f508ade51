"""The Discord REST client against a loopback fake of the API (the local stack's recorder)."""

from __future__ import annotations

import time

import pytest

from frontdoor import ALICE, APP_ID, CHANNEL
from memorybot.adapters.discord_rest import USER_AGENT, DiscordRest
from memorybot.core.record.ports import DiscordError, DmsClosedError
from memorybot.discord.requests import COMMANDS


@pytest.fixture
def api(discord_api):
    recorder, base = discord_api
    sleeps: list[float] = []
    client = DiscordRest(base, "s3cret", max_attempts=3, max_retry_wait=2.0, sleep=sleeps.append)
    yield recorder, client, sleeps
    client.close()


def test_every_call_carries_the_bot_token_and_a_discordbot_user_agent(api):
    recorder, client, _ = api
    client.send_message(client.open_dm(ALICE), "hi")
    assert USER_AGENT.startswith("DiscordBot (http") and USER_AGENT.endswith(")")
    for e in recorder.events:
        assert e.headers == {"authorization": "Bot s3cret", "user-agent": USER_AGENT}


def test_posts_and_edits_never_ping_anyone(api):
    recorder, client, _ = api
    client.send_message(CHANNEL, "@everyone look")
    client.edit_original(APP_ID, "tok", "<@123> hello")
    posted = recorder.of_kind("message") + recorder.of_kind("edit")
    assert len(posted) == 2
    assert all(e.body["allowed_mentions"] == {"parse": []} for e in posted)


def test_edit_original_patches_the_deferred_answer_and_returns_its_message_id(api):
    recorder, client, _ = api
    first = client.edit_original(APP_ID, "tok", "one")
    assert client.edit_original(APP_ID, "tok", "two") == first
    assert [e.path for e in recorder.of_kind("edit")] == [f"webhooks/{APP_ID}/tok/messages/@original"] * 2


def test_a_follow_up_is_an_ephemeral_post_to_the_interactions_webhook_after_the_answer(api):
    recorder, client, _ = api
    with pytest.raises(DiscordError):  # before the deferred answer is filled in, it would replace it
        client.follow_up(APP_ID, "tok", "too early")
    client.edit_original(APP_ID, "tok", "the answer")
    message_id = client.follow_up(APP_ID, "tok", "<@123> only you see this")
    [sent] = recorder.of_kind("followup")
    assert (sent.method, sent.path, sent.message_id) == ("POST", f"webhooks/{APP_ID}/tok", message_id)
    assert sent.body == {"content": "<@123> only you see this", "flags": 64, "allowed_mentions": {"parse": []}}
    with pytest.raises(ValueError):
        client.follow_up(APP_ID, "../../channels/1", "x")  # a token never goes into a URL unchecked


def test_a_429_is_retried_after_retry_after(api):
    recorder, client, sleeps = api
    recorder.rate_limit_next(2, retry_after=0.25)
    client.send_message(CHANNEL, "hi")
    assert sleeps == [0.25, 0.25]
    assert len(recorder.of_kind("message")) == 1


def test_retries_are_bounded_in_attempts(api):
    recorder, client, sleeps = api
    recorder.rate_limit_next(5, retry_after=0.1)
    with pytest.raises(DiscordError) as raised:
        client.send_message(CHANNEL, "hi")
    assert raised.value.status == 429
    assert len(sleeps) == 2  # three attempts in all
    assert recorder.of_kind("message") == []


def test_a_wait_longer_than_allowed_is_not_slept(api):
    recorder, client, sleeps = api
    recorder.rate_limit_next(1, retry_after=60)
    with pytest.raises(DiscordError):
        client.send_message(CHANNEL, "hi")
    assert sleeps == []


def test_closed_dms_are_recognised_as_error_50007(api):
    recorder, client, _ = api
    recorder.close_dms(ALICE)
    channel = client.open_dm(ALICE)
    with pytest.raises(DmsClosedError) as raised:
        client.send_message(channel, "your memories")
    assert (raised.value.status, raised.value.code) == (403, 50007)


def test_errors_never_carry_the_interaction_token(api):
    _, client, _ = api
    with pytest.raises(DiscordError) as raised:
        client._request("PATCH", "webhooks/1/very-secret-token/messages/unknown")
    assert "very-secret-token" not in str(raised.value)
    assert raised.value.status == 404


def test_an_unreachable_api_is_a_discord_error():
    client = DiscordRest("http://127.0.0.1:9/api/v10", "t", timeout=0.5)
    with pytest.raises(DiscordError):
        client.open_dm(ALICE)


def test_channel_history_becomes_domain_messages_oldest_first(api):
    recorder, client, _ = api
    client.send_message(CHANNEL, "first")
    client.send_message(CHANNEL, "second")
    history = client.recent_channel_messages(CHANNEL, 50)
    assert [m.content for m in history] == ["first", "second"]
    assert all(m.is_bot and m.channel_id == CHANNEL for m in history)


@pytest.mark.parametrize("guild", [None, "555"])
def test_commands_are_registered_by_bulk_overwrite(api, guild):
    recorder, client, _ = api
    client.bulk_overwrite_commands(APP_ID, COMMANDS, guild)
    [put] = recorder.of_kind("commands")
    assert put.method == "PUT"
    assert put.path == (f"applications/{APP_ID}/guilds/555/commands" if guild else f"applications/{APP_ID}/commands")
    assert [c["name"] for c in put.body] == ["chat", "memory", "Remember this", "memory-settings"]


def test_a_client_without_a_token_fills_in_answers_and_never_sends_a_bot_token(discord_api):
    recorder, base = discord_api
    recorder.bot_token = "s3cret"  # Discord's webhooks take none; everything else needs it
    client = DiscordRest(base, None)
    try:
        client.edit_original(APP_ID, "tok", "filled in")
        with pytest.raises(DiscordError) as refused:
            client.open_dm(ALICE)
    finally:
        client.close()
    assert refused.value.status == 401
    [edit] = recorder.of_kind("edit")
    assert edit.headers == {"user-agent": USER_AGENT} and edit.content == "filled in"


def test_a_servers_name_is_read_with_the_bot_token_and_an_unknown_server_is_an_error(api):
    recorder, client, _ = api
    recorder.guilds["555"] = "Tea Club"
    assert client.guild_name("555") == "Tea Club"
    with pytest.raises(DiscordError) as unknown:
        client.guild_name("556")
    assert unknown.value.code == 10004
    with pytest.raises(ValueError):
        client.guild_name("../users/@me")  # never put into a URL
    assert recorder.calls == [("GET", "guilds/555"), ("GET", "guilds/556")]


def test_a_servers_name_gets_one_short_attempt_a_slow_or_rate_limited_discord_is_not_waited_for():
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server name
            if self.path.endswith("/555"):
                time.sleep(8)  # far slower than the name's budget
            self.send_response(429 if self.path.endswith("/556") else 200)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"message": "rate limited", "retry_after": 1, "name": "x"}')

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    slept: list[float] = []
    client = DiscordRest(f"http://127.0.0.1:{server.server_port}", "t", sleep=slept.append)
    try:
        started = time.monotonic()
        with pytest.raises(DiscordError):
            client.guild_name("555")
        assert time.monotonic() - started < 5  # not the client's own 10 s timeout
        with pytest.raises(DiscordError):
            client.guild_name("556")
        assert slept == []  # a 429 on a courtesy read is raised, not waited on
    finally:
        client.close()
        server.shutdown()
