"""A memory's vector as stored: compact bytes (a DynamoDB Binary attribute), not a JSON list.

Format, version 1: one version byte, a little-endian float32, then one signed byte per
dimension: the codes ``round(x / max|x| * 127)``; the float is ``1 / ‖codes‖``, so that reading
the vector back normalised is one multiplication per dimension (the whole profile is read on
every turn). 256 dimensions take 261 bytes (a JSON list of floats: ~5 KB). Quantisation moves a
cosine by well under 0.01, far below the gaps that decide a top ten.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Sequence

from ..core.record.domain import StoredVector

VERSION = 1
_HEADER = struct.Struct("<Bf")


def encode(vector: Sequence[float]) -> bytes:
    if isinstance(vector, StoredVector):  # as read: its bytes again, exactly
        return _HEADER.pack(VERSION, vector.scale) + array("b", vector.codes).tobytes()
    scale = max((abs(x) for x in vector), default=0.0)
    codes = array("b", (round(x / scale * 127) if scale else 0 for x in vector))
    norm = math.sqrt(sum(c * c for c in codes))
    return _HEADER.pack(VERSION, 1.0 / norm if norm else 0.0) + codes.tobytes()


def decode(data: bytes) -> StoredVector:
    version, inverse_norm = _HEADER.unpack_from(data)
    if version != VERSION:
        raise ValueError(f"unknown vector format {version}")
    codes = array("b")
    codes.frombytes(data[_HEADER.size :])
    return StoredVector(tuple(codes), inverse_norm)
