"""Reciprocal rank fusion or a weighted score? Measured on the hand-written EN + JA set
(tests/relevance_cases.py: 24 memories, 24 paraphrasing questions) with the offline hashed
n-gram embedding: hit@1, hit@3 and mean reciprocal rank of the memory each question is about,
for lexical only, RRF, and weighted scores at three weights; and again with half of the
memories lacking a vector (as after an import, before the nightly backfill). The offline
vectors know spelling, not meaning: a real model's gain over lexical is larger; what this
compares is how each fusion behaves, on the same inputs.
"""

from __future__ import annotations

from dataclasses import replace


def main() -> None:
    from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel
    from memorybot.core.prompting import selection
    from memorybot.core.prompting.selection import Fusion
    from tests.relevance_cases import QUESTIONS, profile

    for line in measure(OfflineEmbeddingModel(256), profile(), QUESTIONS, selection, Fusion):
        print(line)


def measure(model, memories, questions, selection, fusion_kinds) -> list[str]:
    with_vectors = [replace(m, embedding=model.embed_one(m.text)) for m in memories]
    half = [m if i % 2 else replace(m, embedding=None) for i, m in enumerate(with_vectors)]
    lines = [f"{len(questions)} questions over {len(memories)} memories (EN + JA), offline embedding {model.model_id}"]
    lines.append(f"{'method':<28} {'hit@1':>6} {'hit@3':>6} {'MRR':>6} | half without vectors: hit@1 hit@3  MRR")
    methods = [("lexical only (BM25)", None, None)]
    methods.append(("RRF (k=60)", fusion_kinds.RRF, None))
    for weight in (0.3, 0.5, 0.7):
        methods.append((f"weighted, semantic {weight}", fusion_kinds.WEIGHTED, weight))
    original_weight = selection.SEMANTIC_WEIGHT
    try:
        for name, fusion, weight in methods:
            if weight is not None:
                selection.SEMANTIC_WEIGHT = weight
            cells = []
            for profile in (with_vectors, half):
                ranks = []
                for question, wanted in questions:
                    query = model.embed_one(question) if fusion is not None else None
                    ranked = selection.rank(profile, question, query_embedding=query, fusion=fusion or fusion_kinds.RRF)
                    ranks.append(1 + [m.memory_id for m in ranked].index(wanted))
                n = len(ranks)
                cells.append(
                    (sum(r == 1 for r in ranks) / n, sum(r <= 3 for r in ranks) / n, sum(1 / r for r in ranks) / n)
                )
            (a1, a3, am), (b1, b3, bm) = cells
            lines.append(
                f"{name:<28} {a1:>6.2f} {a3:>6.2f} {am:>6.2f} |                       {b1:.2f}  {b3:.2f} {bm:.2f}"
            )
    finally:
        selection.SEMANTIC_WEIGHT = original_weight
    return lines


if __name__ == "__main__":
    main()
