"""The admin secret: compared in constant time, and nothing but the exact bearer token passes."""

from __future__ import annotations

import hmac

import pytest

from memorybot import admin_api

SECRET = "s3cret-admin-token"


def test_the_comparison_is_hmac_compare_digest_on_the_whole_token(monkeypatch):
    seen = []
    real = hmac.compare_digest

    def recording(a, b):
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(admin_api.hmac, "compare_digest", recording)
    assert admin_api.authorized(f"Bearer {SECRET}", SECRET)
    assert not admin_api.authorized(f"Bearer {SECRET[:-1]}", SECRET)
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
    assert not admin_api.authorized(header, SECRET)


def test_with_no_secret_configured_nobody_is_authorized():
    assert not admin_api.authorized("Bearer ", "")
    assert not admin_api.authorized("Bearer anything", "")
