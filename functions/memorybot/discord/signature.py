"""Discord request signatures: Ed25519 over X-Signature-Timestamp + the raw body bytes.

Discord probes an endpoint with bad signatures and drops it unless every one is refused,
so any doubt (missing header, bad hex, wrong length, stale time) is a refusal.
"""

from __future__ import annotations

import time

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

REPLAY_WINDOW_SECONDS = 300  # a request signed further than this from now is refused
SIGNATURE_HEADER = "x-signature-ed25519"
TIMESTAMP_HEADER = "x-signature-timestamp"


class SignatureError(Exception):
    """The request is not provably from Discord (the reason is for logs, never for the caller)."""


class Verifier:
    def __init__(self, public_key_hex: str, *, window_seconds: int = REPLAY_WINDOW_SECONDS) -> None:
        try:
            self._key: VerifyKey | None = VerifyKey(bytes.fromhex(public_key_hex))
        except Exception:  # noqa: BLE001 - a missing or broken key refuses everything
            self._key = None
        self._window = window_seconds

    @property
    def configured(self) -> bool:
        return self._key is not None

    def verify(self, headers: dict[str, str], body: bytes, now: float | None = None) -> None:
        """``headers`` with lower-case names. Raises SignatureError unless the request is good."""
        if self._key is None:
            raise SignatureError("no public key configured")
        signature_hex = headers.get(SIGNATURE_HEADER, "")
        timestamp = headers.get(TIMESTAMP_HEADER, "")
        if not signature_hex or not timestamp:
            raise SignatureError("missing signature header")
        try:
            signature = bytes.fromhex(signature_hex)
            sent_at = int(timestamp)
        except ValueError:
            raise SignatureError("malformed signature header") from None
        if len(signature) != 64:
            raise SignatureError("wrong signature length")
        if abs((time.time() if now is None else now) - sent_at) > self._window:
            raise SignatureError("stale timestamp")
        try:
            self._key.verify(timestamp.encode() + body, signature)
        except BadSignatureError:
            raise SignatureError("bad signature") from None


def new_key_pair() -> tuple[str, str]:
    """(signing key hex, public key hex): for the local stack and tests."""
    key = SigningKey.generate()
    return key.encode().hex(), key.verify_key.encode().hex()


def sign(signing_key_hex: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    """The headers Discord would send with ``body``."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signed = SigningKey(bytes.fromhex(signing_key_hex)).sign(stamp.encode() + body)
    return {"X-Signature-Ed25519": signed.signature.hex(), "X-Signature-Timestamp": stamp}
