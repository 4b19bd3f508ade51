"""Fusion on the hand-written EN + JA set (tests/relevance_cases.py): floors that a broken
tokeniser, scorer or fusion would fall below, and the missing-vector rule."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel
from memorybot.core.prompting import selection
from memorybot.core.prompting.selection import Fusion, fuse_rrf, fuse_weighted, rank
from memorybot.core.record.domain import Embedding
from relevance_cases import PROFILE, QUESTIONS, profile

MODEL = OfflineEmbeddingModel(256)


def mean_reciprocal_rank(memories, *, embed: bool, fusion: Fusion = selection.FUSION) -> float:
    total = 0.0
    for question, wanted in QUESTIONS:
        query = MODEL.embed_one(question) if embed else None
        ranked = [m.memory_id for m in rank(memories, question, query_embedding=query, fusion=fusion)]
        total += 1 / (1 + ranked.index(wanted))
    return total / len(QUESTIONS)


def test_the_set_is_what_the_docs_say():
    assert len(PROFILE) == len(QUESTIONS) == 24
    assert sum(1 for key in PROFILE if key.startswith("ja_")) == 9


def test_lexical_alone_finds_most_in_both_languages():
    assert mean_reciprocal_rank(profile(), embed=False) >= 0.9


@pytest.mark.parametrize("fusion", list(Fusion))
def test_hybrid_is_at_least_as_good_as_lexical_with_or_without_every_vector(fusion):
    with_vectors = [replace(m, embedding=MODEL.embed_one(m.text)) for m in profile()]
    half = [m if i % 2 else replace(m, embedding=None) for i, m in enumerate(with_vectors)]
    lexical = mean_reciprocal_rank(profile(), embed=False)
    assert mean_reciprocal_rank(with_vectors, embed=True, fusion=fusion) >= lexical
    assert mean_reciprocal_rank(half, embed=True, fusion=fusion) >= lexical - 0.01  # no worse than lexical


def test_a_memory_without_a_vector_is_not_outranked_for_lacking_one():
    lexical = [3.0, 1.0, 0.0]
    semantic = [None, 0.9, 0.2]  # the best lexical match has no vector yet
    for fuse in (fuse_rrf, fuse_weighted):
        scores = fuse(lexical, semantic)
        assert scores[0] > scores[1] > scores[2], fuse.__name__


def test_rrf_needs_no_scale_agreement_between_the_two_scores():
    """Multiplying either score by a constant (another model's cosine range, a longer query's
    BM25) leaves the fused order as it was."""
    lexical, semantic = [5.0, 2.0, 0.5, 0.0], [0.1, 0.4, 0.3, 0.2]
    order = sorted(range(4), key=lambda i: -fuse_rrf(lexical, semantic)[i])
    scaled = fuse_rrf([x * 40 for x in lexical], [x / 4 for x in semantic])
    assert sorted(range(4), key=lambda i: -scaled[i]) == order


def test_vectors_of_another_model_count_as_none():
    memories = [replace(m, embedding=Embedding("other@2", (1.0, 0.0))) for m in profile()]
    assert mean_reciprocal_rank(memories, embed=True) == mean_reciprocal_rank(profile(), embed=False)
