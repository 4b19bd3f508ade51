"""What a red team found, each as a regression over HTTP against the local stack in its own process:
input edges of the interactions endpoint, and the local routes' authentication and Host check."""

from __future__ import annotations

import json

import httpx
import pytest
from stack_process import StackProcess

from memorybot.core.record.catalog import text
from memorybot.discord.signature import sign
from memorybot.local.client import LocalClient, StackRefused, find_admin_secret, find_signing_key


def send_raw(url: str, key: str, body: bytes, headers: dict | None = None) -> httpx.Response:
    return httpx.post(f"{url}/interactions", content=body, headers={**sign(key, body), **(headers or {})}, timeout=60)


def posted_since(url: str, admin: dict, seq: int) -> list[dict]:
    events = httpx.get(f"{url}/local/discord/events", params={"after": seq}, headers=admin).json()["events"]
    return events


def last_seq(url: str, admin: dict) -> int:
    return max([0] + [e["seq"] for e in posted_since(url, admin, 0)])


# ---- input edges ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "where, value",
    [
        ("user", "²³"),  # superscript digits pass str.isdigit()
        ("user", "١٢٣٤٥"),  # Arabic-Indic digits too
        ("channel", "１２３４５"),  # full-width
        ("user", str(2**64)),  # one past the largest snowflake
        ("channel", "-1"),
        ("interaction", "12 34"),
    ],
)
def test_ids_must_be_ascii_digit_snowflakes_in_range(person, stack, admin, where, value):
    url, _ = stack
    client = person(f"ids-{where}")
    payload = client._payload("chat", [{"type": 3, "name": "message", "value": "I like tea"}])
    if where == "user":
        payload["member"]["user"]["id"] = value
    elif where == "channel":
        payload["channel_id"] = value
    else:
        payload["id"] = value
    seq = last_seq(url, admin)
    assert client.send(payload) == (400, {"error": "bad request"})
    httpx.post(f"{url}/local/drain", headers=admin, timeout=60)
    assert posted_since(url, admin, seq) == []  # no reply worker ran: nothing was stored or handed off


def test_the_largest_snowflake_is_still_an_id(person):
    client = person("ids-max")
    payload = client._payload("memory", [{"type": 1, "name": "show", "options": []}])
    payload["channel_id"] = str(2**64 - 1)
    status, answer = client.send(payload)
    assert status == 200 and answer["type"] == 4


@pytest.mark.parametrize(
    "field, value",
    [
        ("application_id", "../../users/@me"),
        ("application_id", "1000000000000000001/../../channels/1"),
        ("token", "../../../channels/1300000000000000001/messages"),
        ("token", "abc/def"),
        ("token", "a.b"),
        ("token", "x" * 501),
    ],
)
def test_application_id_and_token_are_checked_before_any_url_is_built(person, stack, admin, field, value):
    url, _ = stack
    client = person("webhook-path")
    payload = client._payload("chat", [{"type": 3, "name": "message", "value": "hello"}])
    payload[field] = value
    seq = last_seq(url, admin)
    assert client.send(payload)[0] == 400
    httpx.post(f"{url}/local/drain", headers=admin, timeout=60)
    assert posted_since(url, admin, seq) == []  # nothing went to Discord, under any path


@pytest.mark.parametrize("kind", [2.0, True, 1.0, "2", None, [2]])
def test_the_interaction_type_must_be_an_integer(person, kind):
    client = person("type-edges")
    payload = client._payload("chat", [{"type": 3, "name": "message", "value": "hello"}])
    payload["type"] = kind
    assert client.send(payload) == (400, {"error": "bad request"})  # not a command, not a PONG


def test_deeply_nested_json_is_a_400_not_an_error(stack):
    url, state_dir = stack
    key = find_signing_key(state_dir)
    deep = b'{"type": 2, "data": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    assert send_raw(url, key, deep).status_code == 400
    moderately = b'{"type": 2, "x": ' + b"[" * 40 + b"]" * 40 + b"}"
    assert send_raw(url, key, moderately).status_code == 400


def test_a_replayed_memory_show_sends_no_second_dm(person, stack, admin):
    url, _ = stack
    ivy = person("ivy-replay")
    ivy.chat("I love old fountain pens")
    payload = ivy._payload("memory", [{"type": 1, "name": "show", "options": []}])
    seq = last_seq(url, admin)
    first = ivy.send(payload)
    assert first[0] == 200 and first[1]["data"]["content"] == text("dm_sent")
    replay = ivy.send(payload)  # the same signed interaction again, inside the signature window
    assert replay == first
    dms = [e for e in posted_since(url, admin, seq) if e["kind"] == "message"]
    assert len(dms) == 1


# ---- the local routes ------------------------------------------------------------------------

LOCAL_ROUTES = [
    ("POST", "/local/drain", None),
    ("POST", "/local/nightly", {}),
    ("GET", "/local/info", None),
    ("GET", "/local/discord/events", None),
    ("POST", "/local/discord/close-dms", {"user_id": "1"}),
    ("POST", "/local/discord/open-dms", {"user": "alice"}),
    ("POST", "/local/discord/someone-said", {"channel_id": "1", "author_id": "2", "author_name": "x", "content": "y"}),
]


@pytest.mark.parametrize("method, path, body", LOCAL_ROUTES)
def test_local_routes_refuse_requests_without_the_admin_secret(stack, method, path, body):
    url, _ = stack
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic x"}):
        response = httpx.request(method, url + path, json=body, headers=headers, timeout=60)
        assert response.status_code == 401, (path, headers)
    # A browser's cross-site "simple" POST (text/plain, no credentials) gets nowhere either.
    simple = httpx.request(method, url + path, content=json.dumps(body or {}), headers={"Content-Type": "text/plain"})
    assert simple.status_code == 401


@pytest.mark.parametrize("method, path, body", LOCAL_ROUTES + [("POST", "/memory/rollback", {"dryRun": True})])
def test_a_foreign_host_is_refused_even_with_the_secret(stack, admin, method, path, body):
    url, _ = stack
    for host in ("evil.example", "attacker.example:8787", "127.0.0.1.nip.io"):
        response = httpx.request(method, url + path, json=body, headers={**admin, "Host": host}, timeout=60)
        assert response.status_code == 403, (path, host)


def test_events_with_the_secret_and_the_bound_host_are_served(stack, admin):
    url, _ = stack
    assert httpx.get(f"{url}/local/discord/events", headers=admin).status_code == 200
    port = url.rsplit(":", 1)[1]
    assert httpx.get(f"{url}/local/info", headers={**admin, "Host": f"localhost:{port}"}).status_code == 200


def test_interactions_answer_under_any_host_since_a_tunnel_forwards_its_own(stack):
    url, state_dir = stack
    body = json.dumps({"type": 1}).encode()
    response = send_raw(url, find_signing_key(state_dir), body, {"Host": "bot.trycloudflare.example"})
    assert response.status_code == 200 and response.json() == {"type": 1}


@pytest.mark.parametrize(
    "path, body, message",
    [
        ("/local/nightly", b"not json", "not valid JSON"),
        ("/local/nightly", b"[1, 2]", "JSON object"),
        ("/local/nightly", b'{"now": 5}', "now must be"),
        ("/local/nightly", b'{"now": "yesterday"}', "ISO 8601"),
        ("/local/nightly", b'{"when": "2031-01-01T00:00:00Z"}', "unknown field"),
        ("/local/nightly", b"[" * 3000 + b"]" * 3000, "small JSON object"),
        ("/local/discord/close-dms", b"{}", 'give one of "user"'),
        ("/local/discord/close-dms", b"", 'give one of "user"'),
        ("/local/discord/close-dms", b"alice", "not valid JSON"),
        ("/local/discord/close-dms", b'{"user_id": 7}', "user_id must be"),
        ("/local/discord/close-dms", b'{"user": "  "}', "user must be a name"),
        ("/local/discord/open-dms", b'{"user": "a", "user_id": "1"}', 'give one of "user"'),
        ("/local/discord/someone-said", b'{"channel_id": "1"}', "missing field"),
        ("/local/discord/someone-said", b"", "missing field"),
    ],
)
def test_bad_bodies_on_local_routes_get_400_with_a_message(stack, admin, path, body, message):
    url, _ = stack
    response = httpx.post(url + path, content=body, headers=admin, timeout=60)
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]


def test_bad_events_cursor_is_a_400(stack, admin):
    url, _ = stack
    assert httpx.get(f"{url}/local/discord/events", params={"after": "x"}, headers=admin).status_code == 400


def test_talking_to_real_discord_the_nightly_route_still_needs_the_secret(moto_server, tmp_path):
    """Behind a tunnel, in real-Discord mode: /local/nightly must not run for anyone."""
    env = {
        "AWS_ENDPOINT_URL_DYNAMODB": moto_server.endpoint,
        "MEMORYBOT_TABLE_PREFIX": "real-discord-",
        "DISCORD_API_BASE": "http://127.0.0.1:9/api/v10",  # nothing listens: never reached here
        "MEMORYBOT_ADMIN_SECRET": "real-discord-admin-secret",
    }
    running = StackProcess(tmp_path, env)
    try:
        assert httpx.post(f"{running.url}/local/nightly", json={}, timeout=60).status_code == 401
        ok = httpx.post(
            f"{running.url}/local/nightly",
            json={"now": "2031-02-01T18:00:00Z"},
            timeout=120,
            headers={"Authorization": "Bearer real-discord-admin-secret"},
        )
        assert ok.status_code == 200, ok.text
    finally:
        running.stop()


def test_the_terminal_client_sends_the_secret_it_finds_in_the_state_dir(stack):
    url, state_dir = stack
    without = LocalClient(url, "kai-client", find_signing_key(state_dir), admin_secret="")
    with pytest.raises(StackRefused):
        _ = without.application_id  # /local/info refused (401): the client says where to look
    found = LocalClient(url, "kai-client", find_signing_key(state_dir), admin_secret=find_admin_secret(state_dir))
    assert found.application_id.isdigit()
