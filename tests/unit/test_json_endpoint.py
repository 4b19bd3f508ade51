"""The model services' HTTP path (``adapters/json_http.py``) against loopback servers: what goes
on the wire, the proxy the environment names, and the loopback servers' own latency model (a
delay counts from the request's arrival)."""

from __future__ import annotations

import gzip
import json
import time

import pytest

from loopback import LoopbackServer
from loopback.openai_server import OpenAIServer
from memorybot.adapters.json_http import JsonEndpoint, environment_proxy
from memorybot.adapters.openai_chat import OpenAICompatibleClient
from retrying import quick_retrier

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
def no_proxies(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def test_a_post_sends_compact_json_with_the_key_and_reads_the_whole_answer(no_proxies):
    with LoopbackServer() as service:
        service.answer("/v1/x", {"ok": "はい"})
        endpoint = JsonEndpoint(service.url + "/v1/", api_key="sk-1")
        response = endpoint.post("/x", {"text": "東京", "n": [1, 2]}, timeout=2.0)
        endpoint.close()
        sent = service.last("/v1/x")
    assert response.status_code == 200 and json.loads(response.content) == {"ok": "はい"}
    assert sent.body == '{"text":"東京","n":[1,2]}'.encode()  # as httpx's json= sends it
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["authorization"] == "Bearer sk-1"
    assert sent.headers["accept"] == "application/json"
    assert sent.headers["accept-encoding"] == "gzip, deflate"  # as httpx's client asked


def test_a_compressed_answer_is_read_as_its_json(no_proxies):
    with LoopbackServer() as service:
        service.answer("/z", raw=gzip.compress(b'{"data": [1.5]}'), headers={"Content-Encoding": "gzip"})
        response = JsonEndpoint(service.url).post("/z", {}, timeout=2.0)
    assert json.loads(response.content) == {"data": [1.5]}


def test_without_a_key_no_authorization_is_sent(no_proxies):
    with LoopbackServer() as service:
        service.answer("/y", {})
        JsonEndpoint(service.url).post("/y", {}, timeout=2.0)
        assert "authorization" not in service.last("/y").headers


def test_the_proxy_the_environment_names_carries_the_model_calls(no_proxies):
    """As httpx's client did: HTTP_PROXY for an http:// service (the request goes to the proxy,
    naming the service's whole URL)."""
    target = "http://model.invalid:8080/v1/chat/completions"
    with LoopbackServer() as proxy:
        proxy.answer(target, {"choices": [{"message": {"content": "via the proxy"}, "finish_reason": "stop"}]})
        no_proxies.setenv("HTTP_PROXY", proxy.url)
        client = OpenAICompatibleClient(
            "http://model.invalid:8080/v1", "m", timeout_seconds=2.0, retrier=quick_retrier()
        )
        answer = client.complete([{"role": "user", "content": "hi"}], max_tokens=5)
        client.close()
        assert proxy.last().path == target
    assert answer.text == "via the proxy"


@pytest.mark.parametrize(
    ("variables", "url", "expected"),
    [
        ({}, "https://api.example.com/v1", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://api.example.com/v1", "http://proxy:3128"),
        ({"HTTPS_PROXY": "proxy:3128"}, "https://api.example.com/v1", "http://proxy:3128"),
        ({"HTTP_PROXY": "http://proxy:3128"}, "https://api.example.com/v1", None),  # the other scheme's
        ({"ALL_PROXY": "http://proxy:3128"}, "https://api.example.com/v1", "http://proxy:3128"),
        ({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "example.com"}, "https://api.example.com/v1", None),
        (
            {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "other.org"},
            "https://api.example.com/v1",
            "http://proxy:3128",
        ),
    ],
)
def test_which_proxy_the_environment_names(no_proxies, variables, url, expected):
    for name, value in variables.items():
        no_proxies.setenv(name, value)
    assert environment_proxy(url) == expected


def test_a_loopback_delay_counts_from_the_request_s_arrival(no_proxies):
    """The server's own time on a request (here a responder that takes 0.3 s) is spent inside the
    delay, not added to it: a delay of L is a service that answers in L."""
    with OpenAIServer() as llm:
        llm.set_delay(0.3)
        llm.responder = lambda body: (time.sleep(0.3), "done")[1]
        endpoint = JsonEndpoint(llm.url)
        ask = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        endpoint.post("/chat/completions", ask, timeout=5.0)  # the connection is open
        started = time.monotonic()
        response = endpoint.post("/chat/completions", ask, timeout=5.0)
        elapsed = time.monotonic() - started
        endpoint.close()
    assert json.loads(response.content)["choices"][0]["message"]["content"] == "done"
    assert 0.3 <= elapsed < 0.5  # 0.6 s when the server's time came on top of the delay
