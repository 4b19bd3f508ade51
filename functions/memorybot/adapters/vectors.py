"""A memory's vector as stored: compact bytes (a DynamoDB Binary attribute), not a JSON list.

Format, version 1: one version byte, the scale as a little-endian float32, then one signed
byte per dimension (``round(x / scale * 127)``, scale = the largest magnitude). 256 dimensions
take 261 bytes (a JSON list of floats: ~5 KB). Quantisation moves a cosine by well under 0.01,
far below the gaps that decide a top ten; the vector is renormalised when read.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Sequence

VERSION = 1
_HEADER = struct.Struct("<Bf")


def encode(vector: Sequence[float]) -> bytes:
    scale = max((abs(x) for x in vector), default=0.0)
    codes = array("b", (round(x / scale * 127) if scale else 0 for x in vector))
    return _HEADER.pack(VERSION, scale) + codes.tobytes()


def decode(data: bytes) -> tuple[float, ...]:
    version, scale = _HEADER.unpack_from(data)
    if version != VERSION:
        raise ValueError(f"unknown vector format {version}")
    codes = array("b")
    codes.frombytes(data[_HEADER.size :])
    # The scale cancels out of a normalised vector: the codes, normalised, are the vector.
    norm = math.sqrt(sum(c * c for c in codes))
    if not norm:
        return tuple(0.0 for _ in codes)
    inverse = 1.0 / norm
    return tuple(c * inverse for c in codes)
