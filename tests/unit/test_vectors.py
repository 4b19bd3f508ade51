"""The stored form of a vector (adapters/vectors.py): compact, close, normalised."""

from __future__ import annotations

import math
import random

import pytest

from memorybot.adapters import vectors
from memorybot.core.prompting.selection import cosine
from memorybot.core.record.domain import StoredVector


def unit_vector(rng: random.Random, dimensions: int) -> list[float]:
    raw = [rng.gauss(0, 1) for _ in range(dimensions)]
    norm = math.sqrt(sum(x * x for x in raw))
    return [x / norm for x in raw]


@pytest.mark.parametrize("dimensions", [256, 512, 1024])
def test_one_byte_a_dimension_and_cosines_within_a_hundredth(dimensions):
    rng = random.Random(dimensions)
    pairs = [(unit_vector(rng, dimensions), unit_vector(rng, dimensions)) for _ in range(50)]
    for a, b in pairs:
        data = vectors.encode(a)
        assert len(data) == dimensions + 5  # a version byte, a float32, the codes
        back_a, back_b = vectors.decode(data), vectors.decode(vectors.encode(b))
        assert math.isclose(sum(x * x for x in back_a), 1.0, rel_tol=1e-6)
        exact = sum(x * y for x, y in zip(a, b, strict=True))
        stored = sum(x * y for x, y in zip(back_a, back_b, strict=True))
        assert abs(exact - stored) < 0.01


def test_a_zero_vector_and_an_unknown_format():
    assert vectors.decode(vectors.encode([0.0, 0.0])) == (0.0, 0.0)
    with pytest.raises(ValueError, match="unknown vector format"):
        vectors.decode(b"\x07" + vectors.encode([1.0])[1:])


def test_a_vector_read_back_keeps_its_codes_ranks_as_its_values_and_is_stored_again_byte_for_byte():
    rng = random.Random(7)
    for _ in range(50):
        data = vectors.encode(unit_vector(rng, 256))
        read = vectors.decode(data)
        assert isinstance(read, StoredVector) and len(read.codes) == 256
        assert vectors.encode(read) == data  # an unchanged memory written again keeps its bytes
        values = tuple(read)  # the values are the codes times the scale
        assert values == tuple(c * read.scale for c in read.codes) and read == values and read[3] == values[3]
        assert vectors.encode(values) == data
        query = tuple(unit_vector(rng, 256))
        assert math.isclose(cosine(read, query), sum(x * y for x, y in zip(values, query, strict=True)), abs_tol=1e-12)
    a, b = vectors.decode(vectors.encode([0.6, 0.8])), vectors.decode(vectors.encode([0.8, 0.6]))
    assert a != b and a == vectors.decode(vectors.encode([0.6, 0.8])) and hash(a) == hash(tuple(a))
