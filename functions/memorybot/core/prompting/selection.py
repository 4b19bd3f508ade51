"""Which memories a reader sees: the ten most relevant to what the person is saying.

One rule for the reply prompt, the live extraction and the nightly extraction. While a
profile holds ``limit`` memories or fewer it is all of them, most recently updated first
(the design's behaviour). Past that, memories are ranked by relevance to the query:

- lexical: BM25 over tokens, computed over the profile itself (the profile is the corpus).
  Latin-script text is split into lowercased words (NFKC, a short English stop list, light
  suffix stripping); Han, Hiragana and Katakana runs into character bigrams, since Japanese
  has no spaces between words and bigrams are the usual dictionary-free answer. Bigrams made
  only of hiragana are mostly particles and inflections: they only break ties between memories
  that share the same content terms (``lexical_scores``), and a bigram from hiragana into kanji
  or katakana, which straddles a word boundary, is not a term at all (docs/relevance.md).
- semantic: cosine similarity of L2-normalised vectors, only between vectors of the same model
  (``Embedding.model``); a memory without one takes its lexical rank for both (see fuse_rrf).
- fused by reciprocal rank fusion (see docs/relevance.md for why not a weighted score); a
  memory takes part in the lexical ranking only if it shares a content term with the query
  (anything but a hiragana-only bigram), so that shared grammar alone cannot lift it.

Ties, and a query that matches nothing, fall back to recency. Pure standard library: it runs in
the Lambda path, where numpy's import would cost more than the arithmetic on ~2,000 short texts.
"""

from __future__ import annotations

import math
import operator
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from enum import Enum
from functools import lru_cache

from ..record.domain import PROFILE_LIMIT, Embedding, Memory, StoredVector

# BM25's usual constants (Robertson et al.): term-frequency saturation and length normalisation.
BM25_K1 = 1.2
BM25_B = 0.75
# Reciprocal rank fusion's constant (Cormack et al. 2009): damps the head of each list so that
# one ranker alone cannot decide the top.
RRF_K = 60
# The weighted alternative (kept for measurement): share of the semantic score.
SEMANTIC_WEIGHT = 0.5

# A few words that carry no fact: without them "my" and "i" would match every memory.
STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been being am do does did
    i me my mine myself you your yours he him his she her hers it its we us our they them their theirs
    this that these those there here what which who whom whose when where why how not no so too very just
    can could will would should shall may might must have has had having get got about into over than then
    also really like s t m re ve ll d""".split()
)

# Hiragana, Katakana (with its phonetic extensions and the long-vowel mark), and the CJK ideographs
# (unified, extension A, compatibility, and the supplementary planes' extensions).
_CJK_CLASS = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")
# For terms, also the ideographic iteration and closing marks and ideographic zero (々, 〆, 〇),
# which are written inside kanji words (菜々子, 時々) and would otherwise cut them in two.
_CJK_RUN = re.compile(f"[\u3005-\u3007{_CJK_CLASS}]+")
_WORD = re.compile(r"[^\W_]+")  # "i'm" -> "i", "m": clitics fall to the stop list


def is_cjk(ch: str) -> bool:
    return bool(_CJK_CHAR.fullmatch(ch))


def _is_hiragana(ch: str) -> bool:
    return "\u3040" <= ch <= "\u309f"


def is_kana_grammar(term: str) -> bool:
    """A term made only of hiragana: mostly particles and inflections (って, てい, いる, だっ)."""
    return all(map(_is_hiragana, term))


def _run_terms(run: str) -> list[str]:
    """Character bigrams of a CJK run, except those from hiragana into kanji or katakana: a
    switch from hiragana to another script is where Japanese text starts a new word (a particle,
    then the next word: の近, に住), so such a bigram belongs to no word."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1) if not (_is_hiragana(run[i]) and not _is_hiragana(run[i + 1]))]


def _stem(word: str) -> str:
    """Light English suffix stripping (plurals, -ing, -ed, a final e), the same on both sides of a
    comparison: "hikes", "hiking", "hiked" and "hike" all become "hik". Nothing clever."""
    if len(word) <= 3 or not word.isascii():
        return word
    stripped = False
    if word.endswith("ies") and len(word) >= 7:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    elif word.endswith("ing") and len(word) >= 6:
        word, stripped = word[:-3], True
    elif word.endswith("ed") and len(word) >= 5:
        word, stripped = word[:-2], True
    if stripped and len(word) >= 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]  # running -> run, planned -> plan
    if word.endswith("e") and len(word) >= 4:
        word = word[:-1]
    return word


def tokens(text: str) -> list[str]:
    """The terms of a text: Latin-script words, and character bigrams of CJK runs."""
    return list(_tokens(text))


@lru_cache(maxsize=8192)  # a warm function ranks the same person's memories turn after turn
def _tokens(text: str) -> tuple[str, ...]:
    text = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    for run in _CJK_RUN.findall(text):
        out.extend(_run_terms(run))
    for word in _WORD.findall(_CJK_RUN.sub(" ", text)):
        if word in STOPWORDS:
            continue
        stemmed = _stem(word)
        if stemmed and stemmed not in STOPWORDS:
            out.append(stemmed)
    return tuple(out)


def bm25_scores(documents: Sequence[Sequence[str]], query: Sequence[str]) -> list[float]:
    """BM25 of each tokenised document against the query terms (each distinct term once)."""
    n = len(documents)
    if not n or not query:
        return [0.0] * n
    avg_len = sum(map(len, documents)) / n or 1.0
    terms = set(query)
    # Only documents sharing a term score above 0: counted alone (a large profile shares a query's
    # terms with a few dozen of its memories, not thousands).
    matching = {i: Counter(doc) for i, doc in enumerate(documents) if not terms.isdisjoint(doc)}
    df = {t: sum(1 for c in matching.values() if t in c) for t in terms}
    idf = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms if df[t]}
    scores = [0.0] * n
    for i, c in matching.items():
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * len(documents[i]) / avg_len)
        scores[i] = sum(idf[t] * c[t] * (BM25_K1 + 1.0) / (c[t] + norm) for t in idf if t in c)
    return scores


def lexical_scores(documents: Sequence[Sequence[str]], query: Sequence[str]) -> list[float]:
    """BM25 over the query's content terms, with its hiragana-only bigrams as a tie-break only.

    Hiragana writes particles and inflections, which every Japanese sentence shares; a profile of
    a few hundred memories is too small a corpus for IDF to silence them (って in 40 of 500
    memories still weighs half as much as a name found in two). It also writes some content
    (given names like さくら, words like うなぎ), so those bigrams are not dropped: they order
    memories whose content terms score the same, above all those that share no content term at
    all, and never lift a memory over one that shares more content."""
    content = bm25_scores(documents, [t for t in query if not is_kana_grammar(t)])
    grammar = bm25_scores(documents, [t for t in query if is_kana_grammar(t)])
    top = max(grammar, default=0.0)
    if not top:
        return content
    # Half the smallest gap between two content scores (or the smallest positive one): the
    # grammar part, scaled below it, reorders only memories whose content scores are equal.
    levels = sorted(set(content) | {0.0})
    gap = min((b - a for a, b in zip(levels, levels[1:], strict=False)), default=1.0)
    return [c + 0.5 * gap * g / top for c, g in zip(content, grammar, strict=True)]


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(map(operator.mul, a, b))


# Python 3.12's sumprod is the same sum in C (and a little more exact): a ranking of 2,000 memories
# spends most of its time here. One function for every ranking in a process, so that a profile
# ranked whole and from its index agree.
_DOT: Callable[[Sequence[float], Sequence[float]], float] = getattr(math, "sumprod", _dot)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Dot product: both vectors are L2-normalised. A stored vector (``a``, a memory's) is its codes
    times the query, scaled once."""
    if isinstance(a, StoredVector):
        return a.scale * _DOT(a.codes, b)
    return _DOT(a, b)


def semantic_scores(memories: Sequence[Memory], query_embedding: Embedding | None) -> list[float | None]:
    """Cosine per memory; None where there is nothing comparable (no vector, or another model's)."""
    if query_embedding is None:
        return [None] * len(memories)
    model, q = query_embedding.model, query_embedding.vector
    return [cosine(m.embedding.vector, q) if m.embedding and m.embedding.model == model else None for m in memories]


class Fusion(str, Enum):
    RRF = "rrf"
    WEIGHTED = "weighted"


FUSION = Fusion.RRF


def _ranks(scores: Sequence[float | None]) -> list[int | None]:
    """1-based rank of each positive score (equal scores share a rank); None for none."""
    ordered = sorted({s for s in scores if s is not None and s > 0}, reverse=True)
    place = {s: i + 1 for i, s in enumerate(ordered)}
    return [place[s] if s is not None and s > 0 else None for s in scores]


def fuse_rrf(lexical: Sequence[float], semantic: Sequence[float | None]) -> list[float]:
    """Sum of 1 / (k + rank) over the two rankings. A memory with no comparable vector (None)
    takes its lexical rank in the semantic list too, so that a missing vector (an import not yet
    backfilled) is not a penalty against memories that have one."""
    lex_ranks = _ranks(lexical)
    sem_ranks = _ranks([s if s is not None else 0.0 for s in semantic])
    scores = []
    for lr, sr, sem in zip(lex_ranks, sem_ranks, semantic, strict=True):
        lex = 1.0 / (RRF_K + lr) if lr else 0.0
        if sem is None:
            scores.append(2 * lex)
        else:
            scores.append(lex + (1.0 / (RRF_K + sr) if sr else 0.0))
    return scores


def fuse_weighted(lexical: Sequence[float], semantic: Sequence[float | None]) -> list[float]:
    """Lexical scaled to [0, 1] by the best score, plus the positive part of the cosine; a memory
    with no comparable vector takes its scaled lexical score for both parts."""
    top = max(lexical, default=0.0) or 1.0
    scores = []
    for lex, sem in zip(lexical, semantic, strict=True):
        scaled = lex / top
        scores.append((1.0 - SEMANTIC_WEIGHT) * scaled + SEMANTIC_WEIGHT * (scaled if sem is None else max(sem, 0.0)))
    return scores


_FUSERS: dict[Fusion, Callable[[Sequence[float], Sequence[float | None]], list[float]]] = {
    Fusion.RRF: fuse_rrf,
    Fusion.WEIGHTED: fuse_weighted,
}


def lexical_evidence(
    documents: Sequence[Sequence[str]], query: Sequence[str], lexical: Sequence[float], semantic: Sequence[float | None]
) -> list[float]:
    """The lexical scores fusion sees: a memory that shares only hiragana-only bigrams with the
    query (grammar, as often as not) has no lexical rank there, and the model's rank judges it.
    Reciprocal rank fusion gives any lexical rank as much weight as the model's, so dozens of
    memories ranked by shared particles would outrank the model's best. A memory without a
    comparable vector keeps its score: there, its words are all the evidence there is."""
    content = {t for t in query if not is_kana_grammar(t)}
    return [
        score if score and (sem is None or not content.isdisjoint(doc)) else 0.0  # (0 stays 0: no set test)
        for doc, score, sem in zip(documents, lexical, semantic, strict=True)
    ]


def _newest_first(memories: Sequence[Memory]) -> list[Memory]:
    return sorted(memories, key=lambda m: (m.updated_at, m.memory_id), reverse=True)


def rank(
    memories: Sequence[Memory],
    query: str,
    *,
    query_embedding: Embedding | None = None,
    fusion: Fusion = FUSION,
) -> list[Memory]:
    """Every memory, most relevant first; equal relevance (no signal included) by recency."""
    ordered = _newest_first(memories)
    documents = [_tokens(m.text) for m in ordered]
    asked = _tokens(query)
    lexical = lexical_scores(documents, asked)
    semantic = semantic_scores(ordered, query_embedding)
    if any(s is not None for s in semantic):
        scores = _FUSERS[fusion](lexical_evidence(documents, asked, lexical, semantic), semantic)
    else:
        scores = lexical
    # sorted() is stable: equal scores keep the newest-first order.
    return [m for _, m in sorted(zip(scores, ordered, strict=True), key=lambda pair: -pair[0])]


def select(
    memories: Sequence[Memory],
    query: str,
    *,
    limit: int = PROFILE_LIMIT,
    query_embedding: Embedding | None = None,
) -> list[Memory]:
    """Up to ``limit`` memories: all of them (newest first) when they fit, else the most relevant."""
    if len(memories) <= limit:
        return _newest_first(memories)
    return rank(memories, query, query_embedding=query_embedding)[:limit]
