"""What a first read that reads only part of a large profile would cost in recall: the trade a
"≤ 2× a ten-memory read" first read would make (docs/relevance.md, "A large profile").

A ranking that looks at every memory reads every memory's vector and terms: a function's first
read of a person with 2,000 memories reads the whole selection index (about 88 read units, eventually
consistent). Reading less means choosing the ten from part of the profile. The usual way is an
inverted-file index: the profile's vectors clustered (k-means, about √N clusters), the header
holding the centroids, each cluster its own item; a read takes the clusters nearest the query
and, through a term index, the memories sharing a content term with it, and ranks those alone.

This simulates it on the generated profiles (benchmarks/data, 500 facts a person, English and
Japanese, as recall_bench reads them): recall@10 (a question's evidence among the ten chosen) and
how often the ten are exactly the whole profile's ten, against the share of the profile read; the
read units are estimated for 2,000 memories at the same share. The term index is left out of the
units (a lower bound). With MEMORYBOT_BENCH_E5=1 (the bench-semantic extra) multilingual-e5-small,
otherwise the offline stand-in only, which knows spelling, not meaning.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import replace

from memorybot.core.prompting.selection import cosine  # the ranking's own (sumprod where Python has it)

PROBES = (1, 2, 4, 8)
ITERATIONS = 12
ENTRY_BYTES = 363  # an index entry at 256 dimensions (big_profile_bench prints it)
CENTROID_BYTES = 261  # a centroid kept as a stored vector
LARGE = 2000


def kmeans(vectors: Sequence[Sequence[float]], k: int, seed: int) -> tuple[list[list[float]], list[int]]:
    """Spherical k-means (cosine): centroids normalised, each vector to its nearest."""
    rng = random.Random(seed)
    centroids = [list(v) for v in rng.sample(list(vectors), k)]
    assigned = [0] * len(vectors)
    for _ in range(ITERATIONS):
        assigned = [max(range(k), key=lambda c, v=v: cosine(centroids[c], v)) for v in vectors]
        for c in range(k):
            members = [vectors[i] for i, a in enumerate(assigned) if a == c]
            if not members:
                continue
            summed = [sum(column) for column in zip(*members, strict=True)]
            norm = math.sqrt(sum(x * x for x in summed)) or 1.0
            centroids[c] = [x / norm for x in summed]
    return centroids, assigned


def main() -> None:
    from benchmarks.recall_bench import embedding_models, load
    from memorybot.adapters import vectors
    from memorybot.core.prompting.selection import _tokens, is_kana_grammar, select
    from memorybot.core.record.domain import Embedding

    def figures(people, model) -> dict[int, tuple[float, float, float]]:
        hits, same, share, questions = dict.fromkeys(PROBES, 0), dict.fromkeys(PROBES, 0), dict.fromkeys(PROBES, 0.0), 0
        exact_hits = 0
        for n, person in enumerate(people):
            found = model.embed([m.text for m in person.memories])
            stored = [Embedding(e.model, vectors.decode(vectors.encode(e.vector))) for e in found]
            memories = [replace(m, embedding=e) for m, e in zip(person.memories, stored, strict=True)]
            k = round(math.sqrt(len(memories)))
            centroids, assigned = kmeans([tuple(e.vector) for e in found], k, seed=n)
            terms = [{t for t in _tokens(m.text) if not is_kana_grammar(t)} for m in memories]
            for q in person.questions:
                questions += 1
                query = model.embed([q["text"]])[0]
                whole = select(memories, q["text"], query_embedding=query)
                evidence = set(q["evidence"])
                exact_hits += any(m.memory_id in evidence for m in whole)
                asked = {t for t in _tokens(q["text"]) if not is_kana_grammar(t)}
                nearest = sorted(range(k), key=lambda c: -cosine(centroids[c], query.vector))
                for probes in PROBES:
                    probed = set(nearest[:probes])
                    part = [
                        m
                        for m, a, t in zip(memories, assigned, terms, strict=True)
                        if a in probed or not asked.isdisjoint(t)
                    ]
                    ten = select(part, q["text"], query_embedding=query)
                    hits[probes] += any(m.memory_id in evidence for m in ten)
                    same[probes] += [m.memory_id for m in ten] == [m.memory_id for m in whole]
                    share[probes] += len(part) / len(memories)
        return {
            0: (exact_hits / questions, 1.0, 1.0),
            **{p: (hits[p] / questions, same[p] / questions, share[p] / questions) for p in PROBES},
        }

    with embedding_models() as models:
        print("the ten chosen from part of the profile: √N clusters (k-means), the nearest p read, plus")
        print(f"every memory sharing a content term; read units estimated at {LARGE:,} memories, eventually")
        print("consistent, the term index not counted; a ten-memory first read costs 4 units (goal: ≤ 8)")
        print(f"  {'lang':<5}{'model':<24}{'read':>12}{'share read':>11}{'units':>7}{'recall@10':>10}{'same ten':>9}")
        for label, model in models.items():
            for code in ("en", "ja"):
                for probes, (recall, same, share) in figures(load(code), model).items():
                    clusters = round(math.sqrt(LARGE))
                    units = 1 + (clusters * CENTROID_BYTES + share * LARGE * ENTRY_BYTES) / 4096 / 2
                    if not probes:
                        units = 1 + LARGE * ENTRY_BYTES / 4096 / 2
                    read = "whole" if not probes else f"{probes} nearest"
                    print(
                        f"  {code:<5}{label:<24}{read:>12}{100 * share:>10.1f}%{units:>7.0f}"
                        f"{100 * recall:>9.1f}%{100 * same:>8.1f}%"
                    )


if __name__ == "__main__":
    main()
