"""The write path, step by step as the design lists it.

Jev decides whether and which record; the chat model only phrases. Each change
commits with its ledger row, conditioned on the record being as it was read.

Whose memory: the exchange is the speaker's OWN conversation with the bot (``Exchange.of``),
not the channel's last six messages, so other people's words never decide it; every
model call receives that exchange, which names the speaker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import Enum
from typing import Protocol

from . import decisions
from .domain import (
    ADD_THRESHOLD,
    PROFILE_LIMIT,
    WORTH_THRESHOLD,
    Action,
    Actor,
    Basis,
    Change,
    Embedding,
    Exchange,
    Memory,
    Message,
    Owner,
    PersonCheck,
    Speaker,
    Verdict,
    new_memory_id,
    utcnow,
)
from .ports import (
    ChatModel,
    ConflictError,
    DecisionModel,
    EmbeddingModel,
    ForgottenSources,
    MemoryWriter,
    PeopleStore,
    PersonRefused,
    ProfileReader,
)
from .recall import Recall, exchange_query

logger = logging.getLogger(__name__)

ADD_ID_ATTEMPTS = 3  # a fresh random id collides with an existing one only by bad luck


class Outcome(str, Enum):
    PAUSED = "paused"  # the person paused memory: nothing asked, nothing read, nothing written
    NO_EXCHANGE = "no_exchange"  # the speaker said nothing usable
    NO_DECISION = "no_decision"  # Jev gave no usable "worth" answer: nothing read, nothing written
    NOT_WORTH = "not_worth"
    DONE = "done"


@dataclass
class ExtractionResult:
    outcome: Outcome
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    conflicts: int = 0  # changes dropped because the record changed since it was read
    failures: int = 0  # model calls that gave no usable answer
    model_calls: int = 0


def not_forgotten(messages: Sequence[Message], forgotten: frozenset[str]) -> list[Message]:
    """The messages minus those a forgotten memory was learned from (by message id)."""
    return [m for m in messages if m.message_id not in forgotten] if forgotten else list(messages)


class LearningMemories(ProfileReader, MemoryWriter, ForgottenSources, Protocol):
    """The roles of the memory store learning uses: the relevant profile, the changes, and the
    messages that no longer teach."""


class Extractor:
    def __init__(
        self,
        memories: LearningMemories,
        decision_model: DecisionModel,
        chat_model: ChatModel,
        *,
        clock: Callable[[], datetime] = utcnow,
        new_id: Callable[[], str] = new_memory_id,
        concurrency: int = PROFILE_LIMIT,  # every verdict of a full profile at once
        embeddings: EmbeddingModel | None = None,
        people: PeopleStore | None = None,  # the person's switch and erasure marker (None: not checked)
    ) -> None:
        self._people = people
        self._memories = memories
        self._recall = Recall(memories, embeddings)
        self._jev = decision_model
        self._chat = chat_model
        self._clock = clock
        self._new_id = new_id
        self._concurrency = concurrency

    def run(
        self,
        speaker: Speaker,
        scope: str,
        messages: Sequence[Message],
        *,
        actor: Actor = Actor.EXTRACTION,
        run_id: int | None = None,
    ) -> ExtractionResult:
        """Decide on the speaker's memories in ``scope`` from their own lines among ``messages``."""
        if self._people is not None:
            # Before any model call: a paused person is not asked about; after a resume (or an
            # erasure) nothing said before it teaches.
            person = self._people.get(speaker.user_id)
            if person.paused:
                return ExtractionResult(Outcome.PAUSED)
            messages = person.learnable(messages)
        # Forgetting sticks: the person's messages behind a memory they forgot never teach again.
        messages = not_forgotten(messages, self._memories.forgotten_sources(Owner(scope, speaker.user_id)))
        exchange = Exchange.of(speaker, scope, messages)
        if exchange is None:
            return ExtractionResult(Outcome.NO_EXCHANGE)
        # Checked again in each write's own transaction: a pause or an erasure while the models
        # think refuses the write.
        check = PersonCheck(speaker.user_id, exchange.since, Basis.LEARN) if self._people is not None else None
        calls = decisions.CallCounter()

        query = self._recall.start(exchange_query(exchange))  # embedded only if the read ranks
        # Nothing is decided yet: a failing service here is "not yet" (the job runs again later).
        worth = calls.ask("worth", lambda: self._jev.worth(exchange), decisions.probability, not_yet_if_failed=True)
        if worth is None or worth < WORTH_THRESHOLD:
            return self._result(Outcome.NO_DECISION if worth is None else Outcome.NOT_WORTH, calls)

        profile = self._recall.read(
            exchange.owner, query, actor=actor, reason=f"{actor.value}: exchange judged worth keeping", run_id=run_id
        )

        with ThreadPoolExecutor(max_workers=max(1, self._concurrency) + 1) as pool:
            # A rewrite starts as soon as its own verdict is known, and the new memory's draft
            # as soon as every verdict is: both run while Jev decides on the add, so the
            # critical path is worth, verdicts, add decision (three model latencies, not four).
            rewrites: dict[str, Future[str | None]] = {}
            judged = [pool.submit(self._judge, exchange, memory, calls, pool, rewrites) for memory in profile]
            verdicts = [f.result() for f in judged]
            add_text = self._maybe_add(exchange, profile, verdicts, calls, pool)
            texts = {memory_id: f.result() for memory_id, f in rewrites.items()}

        result = self._result(Outcome.DONE, calls)
        # Each written text's vector, in one call; a failure leaves them without one (backfilled nightly).
        written = [t for m in profile if (t := texts.get(m.memory_id)) is not None and t != m.text]
        vectors = self._recall.embed_texts(written + ([add_text] if add_text is not None else []))
        now = self._clock()
        changes = [
            Change(Action.DELETE, memory, None, "jev verdict: delete")
            for memory, verdict in zip(profile, verdicts, strict=False)
            if verdict is Verdict.DELETE
        ]
        for memory in profile:
            text = texts.get(memory.memory_id)
            if text is not None and text != memory.text:
                after = replace(
                    memory, text=text, updated_at=now, sources=exchange.sources, embedding=vectors.get(text)
                )
                changes.append(Change(Action.UPDATE, memory, after, "jev verdict: update"))
        for change in changes:
            if not self._apply(change, actor, run_id, check):
                result.conflicts += 1
            elif change.action is Action.DELETE:
                result.deleted.append(change.memory_id)
            else:
                result.updated.append(change.memory_id)
        if add_text is not None:
            added = self._add(exchange, add_text, now, actor, run_id, check, vectors.get(add_text))
            if added is None:
                result.conflicts += 1
            else:
                result.added.append(added)
        return result

    def _judge(
        self,
        exchange: Exchange,
        memory: Memory,
        calls: decisions.CallCounter,
        pool: ThreadPoolExecutor,
        rewrites: dict[str, Future[str | None]],
    ) -> Verdict | None:
        """Jev's verdict on one memory; an update's rewrite starts at once, into ``rewrites``."""
        verdict = calls.ask("verdict", lambda: self._jev.verdict(exchange, memory), decisions.verdict)
        if verdict is Verdict.UPDATE:
            rewrites[memory.memory_id] = pool.submit(
                calls.ask, "write_memory", lambda: self._chat.write_memory(exchange, memory), decisions.memory_text
            )
        return verdict

    def _maybe_add(
        self,
        exchange: Exchange,
        profile: Sequence[Memory],
        verdicts: Sequence[Verdict | None],
        calls: decisions.CallCounter,
        pool: ThreadPoolExecutor,
    ) -> str | None:
        """The new memory's text, when Jev wants one (and judged the profile it would join).

        The draft is written while Jev decides, and dropped unless the answer is yes: a chat call
        spent on a "no" buys one model latency off every turn. No decision, no write.
        """

        def draft(failure_counts: bool = True) -> str | None:
            return calls.ask(
                "write_memory",
                lambda: self._chat.write_memory(exchange, None),
                decisions.memory_text,
                failure_counts=failure_counts,
            )

        if not profile:
            return draft()  # nothing to duplicate: the design allows the add
        seen = [(m, v) for m, v in zip(profile, verdicts, strict=True) if v is not None]
        if len(seen) < len(profile):
            # A memory Jev could not judge may be the very fact this exchange restates: asked
            # without it, the add would duplicate it (a retried speaker step would add its own
            # earlier add again). No add this turn; the nightly run re-reads the day.
            return None
        drafted = pool.submit(draft, False)  # a draft dropped on a "no" is no failure of the turn
        try:
            p = calls.ask("add", lambda: self._jev.add(exchange, seen), decisions.probability)
        except BaseException:
            drafted.cancel()
            raise
        if p is None or p < ADD_THRESHOLD:
            drafted.cancel()  # dropped: whatever it writes (or raises) is never looked at
            return None
        text = drafted.result()
        if text is None:
            calls.failed()  # the add was decided and its text could not be written
        return text

    def _add(
        self,
        exchange: Exchange,
        text: str,
        now: datetime,
        actor: Actor,
        run_id: int | None,
        check: PersonCheck | None,
        embedding: Embedding | None = None,
    ) -> str | None:
        """The new memory's id; None when every fresh id collided (counted as a conflict)."""
        for _ in range(ADD_ID_ATTEMPTS):
            memory = Memory(
                exchange.speaker.user_id,
                self._new_id(),
                text,
                now,
                now,
                scope=exchange.scope,
                sources=exchange.sources,
                embedding=embedding,
            )
            try:
                self._memories.apply(
                    Change(Action.ADD, None, memory, "jev: add"), actor=actor, run_id=run_id, check=check
                )
            except PersonRefused:
                logger.info("add refused by the person's record", extra={"user_id": exchange.speaker.user_id})
                return None
            except ConflictError:
                continue
            return memory.memory_id
        return None

    def _apply(self, change: Change, actor: Actor, run_id: int | None, check: PersonCheck | None) -> bool:
        """False when the record changed since it was read, or the person's record refuses the
        write: the change is dropped, never forced."""
        try:
            self._memories.apply(change, actor=actor, run_id=run_id, check=check)
        except PersonRefused:
            logger.info("change refused by the person's record", extra={"memory_id": change.memory_id})
            return False
        except ConflictError:
            logger.info("change dropped: record changed since read", extra={"memory_id": change.memory_id})
            return False
        return True

    @staticmethod
    def _result(outcome: Outcome, calls: decisions.CallCounter) -> ExtractionResult:
        return ExtractionResult(outcome, failures=calls.failures, model_calls=calls.calls)
