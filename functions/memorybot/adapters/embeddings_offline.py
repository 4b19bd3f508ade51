"""OFFLINE STAND-IN, NOT A MODEL: deterministic text vectors for the local stack and tests.

Hashed character n-gram features (the "hashing trick"): each Latin-script word contributes its
character trigrams (with word boundaries) and itself, each CJK run its characters and character
bigrams; every feature is hashed (BLAKE2b, stable across processes, unlike ``hash``) to one of
``dimensions`` slots with a sign, and the vector is L2-normalised. Texts that share spelling
fragments ("hiking" / "hike", 大阪 / 大阪府) come out close; it knows nothing of meaning
(synonyms, translations), which is what the real models add.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Sequence

from ..core.prompting.selection import is_cjk
from ..core.record.domain import Embedding

OFFLINE_EMBEDDING_MODEL = "offline-hashed-ngrams-v1"
DEFAULT_OFFLINE_DIMENSIONS = 256


def _features(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).casefold()
    features: list[str] = []
    word: list[str] = []
    run: list[str] = []

    def flush_word() -> None:
        if word:
            w = "".join(word)
            padded = f"<{w}>"
            features.append(w)
            features.extend(padded[i : i + 3] for i in range(len(padded) - 2))
            word.clear()

    def flush_run() -> None:
        if run:
            features.extend(run)
            features.extend(run[i] + run[i + 1] for i in range(len(run) - 1))
            run.clear()

    for ch in text:
        if is_cjk(ch):
            flush_word()
            run.append(ch)
        elif ch.isalnum():
            flush_run()
            word.append(ch)
        else:
            flush_word()
            flush_run()
    flush_word()
    flush_run()
    return features


class OfflineEmbeddingModel:
    """STAND-IN for an embedding model (hashed n-grams, no network). See the module docstring."""

    def __init__(self, dimensions: int = DEFAULT_OFFLINE_DIMENSIONS) -> None:
        if dimensions < 8:
            raise ValueError("offline embedding dimensions must be at least 8")
        self.dimensions = dimensions
        self.model_id = f"{OFFLINE_EMBEDDING_MODEL}@{dimensions}"

    def embed_one(self, text: str) -> Embedding:
        vector = [0.0] * self.dimensions
        for feature in _features(text):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            slot = int.from_bytes(digest[:4], "big") % self.dimensions
            vector[slot] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(math.fsum(x * x for x in vector))
        if norm:
            vector = [x / norm for x in vector]
        return Embedding(self.model_id, tuple(vector))

    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        return [self.embed_one(text) for text in texts]
