"""Whatever a signed body holds, parsing either understands it or refuses it with BadRequest
(a 400): it never raises anything else, so the handler never answers 500 for a bad payload."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hypothesis_profiles import examples
from memorybot.discord import requests

SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=30)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
KEYS = ("type", "id", "token", "application_id", "channel_id", "channel", "member", "user", "data")
VALID = {
    "type": 2,
    "id": "1234567890123456789",
    "token": "t",
    "application_id": "1",
    "channel_id": "42",
    "member": {"user": {"id": "7", "username": "alice"}},
    "data": {
        "name": "memory",
        "options": [{"type": 1, "name": "forget", "options": [{"name": "id", "value": "abcde"}]}],
    },
}


def _parses_or_refuses(body: bytes) -> None:
    try:
        request = requests.parse(body)
    except requests.BadRequest:
        return
    assert isinstance(
        request,
        (
            requests.Ping,
            requests.Chat,
            requests.ShowMemories,
            requests.ForgetMemory,
            requests.SuggestForget,
            requests.Unsupported,
        ),
    )


@settings(max_examples=examples(150), deadline=None)
@given(JSON)
def test_any_json_value(value):
    _parses_or_refuses(json.dumps(value).encode())


@settings(max_examples=examples(150), deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), JSON, max_size=len(KEYS)), st.sampled_from([1, 2, 4, 3, "2", None]))
def test_a_valid_payload_with_fields_replaced_by_anything(replaced, kind):
    _parses_or_refuses(json.dumps({**VALID, **replaced, "type": replaced.get("type", kind)}).encode())


@settings(max_examples=examples(100), deadline=None)
@given(st.binary(max_size=64))
def test_arbitrary_bytes(body):
    _parses_or_refuses(body)
