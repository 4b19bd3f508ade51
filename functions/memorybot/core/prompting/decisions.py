"""Asking the models, safely: every failure becomes "no answer", never a decision.

Any exception, a probability that is not a real number in [0, 1], a verdict the
question does not allow, or an empty text counts as a failure (None): that call's decision
is simply not made. Except one: ``ModelUnavailable`` (throttled through every retry) is
"not yet", not "no", and is raised on, so the job fails before applying anything and is
run again. A question asked before anything is decided (``not_yet_if_failed``) also turns a
failing service (``ModelFailed``) into "not yet": running the job again later costs nothing.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime
from typing import TypeVar

from ..record import domain
from ..record.domain import MEMORY_TEXT_MAX_CHARS, PROFILE_LIMIT, Decision, Exchange, Memory, MemoryDraft, Verdict
from ..record.ports import ModelFailed, ModelUnavailable, RecordJudge
from . import quoting

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

MEMORY_VERDICTS = frozenset(domain.MEMORY_VERDICTS)
REVIEW_VERDICTS = frozenset(domain.REVIEW_VERDICTS)


def probability(answer: object) -> float | None:
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return None
    value = float(answer)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        return None
    return value


def verdict(answer: object, allowed: frozenset[Verdict] = MEMORY_VERDICTS) -> Verdict | None:
    try:
        value = Verdict(answer.value if isinstance(answer, Verdict) else answer)
    except (ValueError, TypeError):
        return None
    return value if value in allowed else None


_SPACE = re.compile(r"\s+")


def memory_text(answer: object) -> str | None:
    """A memory is one short line: whitespace folded, capped; empty means no change."""
    if not isinstance(answer, str):
        return None
    text = _SPACE.sub(" ", answer).strip()
    return text[:MEMORY_TEXT_MAX_CHARS] or None


def memory_draft(answer: object) -> MemoryDraft | None:
    """A written memory: its text as ``memory_text`` takes it (empty: no answer), and its end when
    that is a date (anything else: no end; whether it can end the record is the write's check)."""
    if not isinstance(answer, MemoryDraft):
        return None
    text = memory_text(answer.text)
    if text is None:
        return None
    until = answer.valid_until
    return MemoryDraft(text, until if isinstance(until, date) and not isinstance(until, datetime) else None)


def ask(
    question: str,
    call: Callable[[], T],
    check: Callable[[T], R | None],
    *,
    not_yet_if_failed: bool = False,
    speculative: bool = False,
) -> R | None:
    """Call a model; any exception or unusable answer is logged (by name only) and becomes None,
    except ModelUnavailable, which is raised on (and ModelFailed, raised on as ModelUnavailable,
    when ``not_yet_if_failed``). A ``speculative`` call's failure (a draft that may be dropped) is
    logged at debug level: whoever wants its answer says so if it is missing."""
    level = logging.DEBUG if speculative else logging.WARNING
    try:
        answer = call()
    except ModelUnavailable:
        logger.warning("model unavailable", extra={"question": question})
        raise
    except ModelFailed as exc:
        if not not_yet_if_failed:
            logger.log(level, "model call failed", extra={"question": question, "error": type(exc).__name__})
            return None
        logger.warning("model failing before any decision: not yet", extra={"question": question})
        raise ModelUnavailable(f"{question}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - a model failure is never a decision
        logger.log(level, "model call failed", extra={"question": question, "error": type(exc).__name__})
        return None
    checked = check(answer)
    if checked is None:
        logger.log(level, "model answer rejected", extra={"question": question})
    return checked


class CallCounter:
    """Asks like ``ask`` and counts the calls and the failures, across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.failures = 0

    def ask(
        self,
        question: str,
        call: Callable[[], T],
        check: Callable[[T], R | None],
        *,
        not_yet_if_failed: bool = False,
        failure_counts: bool = True,
    ) -> R | None:
        """``failure_counts`` False: a speculative call (a draft that may be dropped); its failure
        is counted by ``failed`` only if its answer was wanted."""
        try:
            answer = ask(question, call, check, not_yet_if_failed=not_yet_if_failed, speculative=not failure_counts)
        except ModelUnavailable:
            with self._lock:
                self.calls += 1
            raise
        with self._lock:
            self.calls += 1
            self.failures += answer is None and failure_counts
        return answer

    def failed(self, count: int = 1) -> None:
        """Count failures found in an answer (a speculative call's whose answer turned out to be
        wanted, the records a decision left unjudged)."""
        with self._lock:
            self.failures += count

    def requested(self, count: int) -> None:
        """Count requests made beyond the one ``ask`` counted (a per-record decision's)."""
        with self._lock:
            self.calls += count


def decide_per_record(
    judge: RecordJudge,
    exchange: Exchange,
    memories: Sequence[Memory],
    early: Callable[[Memory, object], None] | None = None,
    *,
    concurrency: int = PROFILE_LIMIT,
) -> Decision:
    """One ``Decision`` from the per-record questions: a verdict on each memory (concurrently, each
    told to ``early`` as it arrives), then the add, asked with every verdict. A verdict that fails
    is that record's alone (left out: the memory is left untouched); the add is asked only when
    every memory was judged, since a memory Jev could not judge may be the very fact the exchange
    restates. A throttle ("not yet") is raised on, like any question's."""

    def judged_one(memory: Memory) -> Verdict | None:
        answer = ask("verdict", lambda: judge.verdict(exchange, memory), verdict)
        if answer is not None and early is not None:
            early(memory, answer)
        return answer

    judged = concurrently(judged_one, memories, concurrency)
    verdicts = {m.memory_id: v for m, v in zip(memories, judged, strict=True) if v is not None}
    if len(verdicts) < len(memories):
        return Decision(verdicts, None, requests=len(memories))
    add = ask("add", lambda: judge.add(exchange, [(m, verdicts[m.memory_id]) for m in memories]), probability)
    return Decision(verdicts, add, requests=len(memories) + 1)


def concurrently(fn: Callable[[T], R], items: Iterable[T], max_workers: int) -> list[R]:
    """``map`` on a bounded thread pool, results in input order; an exception ``fn`` raises is
    raised once every call has ended."""
    items = list(items)
    if len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(items)))) as pool:
        return list(pool.map(fn, items))


def render_memories(memories: Sequence[Memory]) -> str:
    """The memories as quoted data (escaped inside ``<memory>`` tags): a stored memory that reads
    like an instruction stays a quoted fact."""
    return quoting.memories_block(memories)
