"""Ed25519 request signatures: only Discord's own, fresh requests get through, and a refused
request changes nothing."""

from __future__ import annotations

import json
import time

import pytest

from frontdoor import PUBLIC_KEY, SIGNING_KEY, body_of, chat, context, event
from memorybot.discord.signature import REPLAY_WINDOW_SECONDS, SignatureError, Verifier, new_key_pair, sign
from memorybot.handlers import interactions as interactions_handler

BODY = b'{"type":1}'


def headers_for(body: bytes, key: str = SIGNING_KEY, timestamp: int | None = None) -> dict[str, str]:
    return {k.lower(): v for k, v in sign(key, body, timestamp).items()}


def test_a_valid_signature_passes():
    Verifier(PUBLIC_KEY).verify(headers_for(BODY), BODY)


def test_a_tampered_body_is_refused():
    with pytest.raises(SignatureError):
        Verifier(PUBLIC_KEY).verify(headers_for(BODY), b'{"type":2}')


def test_a_signature_from_another_key_is_refused():
    other_signing_key, _ = new_key_pair()
    with pytest.raises(SignatureError):
        Verifier(PUBLIC_KEY).verify(headers_for(BODY, other_signing_key), BODY)


@pytest.mark.parametrize("missing", ["x-signature-ed25519", "x-signature-timestamp"])
def test_a_missing_header_is_refused(missing):
    headers = headers_for(BODY)
    del headers[missing]
    with pytest.raises(SignatureError):
        Verifier(PUBLIC_KEY).verify(headers, BODY)


@pytest.mark.parametrize("bad", ["zz" * 64, "abc", "00" * 63, ""])
def test_a_signature_that_is_not_64_bytes_of_hex_is_refused(bad):
    headers = headers_for(BODY)
    headers["x-signature-ed25519"] = bad
    with pytest.raises(SignatureError):
        Verifier(PUBLIC_KEY).verify(headers, BODY)


def test_a_timestamp_that_is_not_a_number_is_refused():
    headers = headers_for(BODY)
    headers["x-signature-timestamp"] = "yesterday"
    with pytest.raises(SignatureError):
        Verifier(PUBLIC_KEY).verify(headers, BODY)


@pytest.mark.parametrize("offset", [-(REPLAY_WINDOW_SECONDS + 5), REPLAY_WINDOW_SECONDS + 5])
def test_a_stale_or_future_timestamp_is_refused_even_when_correctly_signed(offset):
    now = int(time.time())
    headers = headers_for(BODY, timestamp=now + offset)
    with pytest.raises(SignatureError):
        Verifier(PUBLIC_KEY).verify(headers, BODY, now=now)


def test_a_timestamp_inside_the_window_passes():
    now = int(time.time())
    Verifier(PUBLIC_KEY).verify(headers_for(BODY, timestamp=now - 60), BODY, now=now)


@pytest.mark.parametrize("key", ["", "not hex", "00" * 16])
def test_without_a_usable_public_key_everything_is_refused(key):
    verifier = Verifier(key)
    assert not verifier.configured
    with pytest.raises(SignatureError):
        verifier.verify(headers_for(BODY), BODY)


# ---- through the handler: 401, and nothing else happens


def _refused(front, ev) -> None:
    response = interactions_handler.handler(ev, context())
    assert response["statusCode"] == 401
    assert front.invoker.calls == []
    assert front.message_store.recent("700000000000000001", 10) == []
    assert front.recorder.events == []


def test_handler_answers_401_to_a_tampered_chat_and_stores_nothing(front):
    ev = event(chat("hello"))
    ev["body"] = __import__("base64").b64encode(json.dumps(chat("something else")).encode()).decode()
    _refused(front, ev)


def test_handler_answers_401_without_signature_headers(front):
    ev = event(chat("hello"))
    ev["headers"] = {"content-type": "application/json"}
    _refused(front, ev)


def test_handler_answers_401_to_a_replayed_old_request(front):
    _refused(front, event(chat("hello"), timestamp=int(time.time()) - 3600))


def test_handler_answers_401_to_a_wrong_key(front):
    other, _ = new_key_pair()
    _refused(front, event(chat("hello"), key=other))


def test_handler_accepts_mixed_case_headers_and_a_v1_event_with_a_plain_body(front):
    ev = event({"type": 1}, v1=True)
    ev["headers"] = {k.upper(): v for k, v in ev["headers"].items()}
    response = interactions_handler.handler(ev, context())
    assert response["statusCode"] == 200
    assert body_of(response) == {"type": 1}
