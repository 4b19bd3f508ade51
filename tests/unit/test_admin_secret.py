"""The admin secret: compared in constant time, and nothing but the exact bearer token passes."""

from __future__ import annotations

import hmac

import pytest

from memorybot.core import rollback

SECRET = "s3cret-admin-token"


def test_the_comparison_is_hmac_compare_digest_on_the_whole_token(monkeypatch):
    seen = []
    real = hmac.compare_digest

    def recording(a, b):
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(rollback.hmac, "compare_digest", recording)
    assert rollback.authorized(f"Bearer {SECRET}", SECRET)
    assert not rollback.authorized(f"Bearer {SECRET[:-1]}", SECRET)
    # every candidate token, right or wrong, went through the constant-time comparison
    assert seen == [(SECRET.encode(), SECRET.encode()), (SECRET[:-1].encode(), SECRET.encode())]


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        f"Basic {SECRET}",
        SECRET,
        f"Bearer {SECRET}x",
        f"Bearer x{SECRET}",
        f"Bearer {SECRET.upper()}",
        "Bearer  ",
    ],
)
def test_anything_but_the_exact_bearer_token_is_refused(header):
    assert not rollback.authorized(header, SECRET)


def test_with_no_secret_configured_nobody_is_authorized():
    assert not rollback.authorized("Bearer ", "")
    assert not rollback.authorized("Bearer anything", "")
