"""The write path, step by step as the design lists it.

Jev decides whether and which record (worth, then one decision on every memory read and the
add); the chat model only phrases (one rewrite per record, and the new memory). Each change
commits with its ledger row, conditioned on the record being as it was read.

Whose memory: the exchange is the speaker's OWN conversation with the bot (``Exchange.of``),
not the channel's last six messages, so other people's words never decide it; every
model call receives that exchange, which names the speaker.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, replace
from datetime import datetime, tzinfo
from enum import Enum
from typing import Protocol

from ..prompting import decisions
from ..prompting.recall import Recall, exchange_query
from ..record.changes import Change, LedgerEntry
from ..record.domain import (
    ADD_THRESHOLD,
    JST,
    PROFILE_LIMIT,
    WORTH_THRESHOLD,
    Action,
    Actor,
    Decision,
    Exchange,
    Memory,
    MemoryDraft,
    Message,
    Owner,
    Speaker,
    Verdict,
    end_holds,
    new_memory_id,
    utcnow,
)
from ..record.person import Basis, PersonCheck
from ..record.ports import (
    ChatModel,
    ConflictError,
    DecisionModel,
    EmbeddingModel,
    ForgottenSources,
    MemoryWriter,
    PeopleStore,
    PersonRefused,
    ProfileReader,
    VectorWriter,
)
from ..record.threads import Tasks, WarmThreads

logger = logging.getLogger(__name__)

ADD_ID_ATTEMPTS = 3  # a fresh random id collides with an existing one only by bad luck
# The process's extraction threads, shared by every extractor in it (a task never waits behind
# another run's): a turn's worth (the draft and every rewrite of a full profile) waits between
# turns, so a warm function starts none on its path.
_THREADS = WarmThreads(PROFILE_LIMIT + 1, name="extraction")


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
    # The ledger rows of the changes committed, in order (what a receipt lists, each with its Undo).
    changes: list[LedgerEntry] = field(default_factory=list)


def not_forgotten(messages: Sequence[Message], forgotten: frozenset[str]) -> list[Message]:
    """The messages minus those a forgotten memory was learned from (by message id)."""
    return [m for m in messages if m.message_id not in forgotten] if forgotten else list(messages)


class LearningMemories(ProfileReader, MemoryWriter, VectorWriter, ForgottenSources, Protocol):
    """The roles of the memory store learning uses: the relevant profile, the changes, the
    written memories' vectors, and the messages that no longer teach."""


@dataclass
class _Plan:
    """What the decision asked for: the memories to delete, the rewrites under way (one a
    record), the new memory's draft if Jev wants one."""

    deletes: list[Memory] = field(default_factory=list)
    rewrites: list[tuple[Memory, Future[MemoryDraft | None]]] = field(default_factory=list)
    add: Future[MemoryDraft | None] | None = None


def _decision(answer: object) -> Decision | None:
    return answer if isinstance(answer, Decision) else None


class Extractor:
    def __init__(
        self,
        memories: LearningMemories,
        decision_model: DecisionModel,
        chat_model: ChatModel,
        *,
        clock: Callable[[], datetime] = utcnow,
        new_id: Callable[[], str] = new_memory_id,
        concurrency: int = PROFILE_LIMIT,  # every rewrite of a full profile at once
        embeddings: EmbeddingModel | None = None,
        people: PeopleStore | None = None,  # the person's switch and erasure marker (None: not checked)
        zone: tzinfo = JST,  # the deployment's (MEMORYBOT_TIMEZONE): the day a memory's end is checked against
    ) -> None:
        self._zone = zone
        self._people = people
        self._memories = memories
        self._recall = Recall(memories, embeddings)
        self._jev = decision_model
        self._chat = chat_model
        self._clock = clock
        self._new_id = new_id
        self._concurrency = max(1, concurrency)  # model calls of one turn at once, beside the decision

    def run(
        self,
        speaker: Speaker,
        scope: str,
        messages: Sequence[Message],
        *,
        actor: Actor = Actor.EXTRACTION,
        run_id: int | None = None,
    ) -> ExtractionResult:
        """Decide on the speaker's memories in ``scope`` from their own lines among ``messages``.

        Worth, then ONE decision on every memory read and the add (the new memory's draft is
        written beside it), then the rewrites the decision names, one per record: three model
        latencies at most; the written memories' vectors are stored after their writes."""
        exchange = self._exchange(speaker, scope, messages)
        if isinstance(exchange, Outcome):
            return ExtractionResult(exchange)
        calls = decisions.CallCounter()
        query = self._recall.start(exchange_query(exchange))  # embedded only if the read ranks
        # Checked again in each write's own transaction: a pause or an erasure while the models
        # think refuses the write.
        check = PersonCheck(speaker.user_id, exchange.since, Basis.LEARN, scope) if self._people is not None else None
        # Every rewrite at once, beside the draft (and, before them, the profile's read beside "worth"),
        # on threads kept from the turns before.
        with Tasks(_THREADS, self._concurrency + 1) as pool:
            worth_it: Future[bool] = Future()
            # The profile is loaded beside "worth" (so the query embedding a ranking needs starts
            # then, and never delays the decision), read (its row) only if the exchange is worth it.
            reason = f"{actor.value}: exchange judged worth keeping"
            loading = pool.submit(
                self._recall.read_once,
                exchange.owner,
                query,
                worth_it.result,
                actor=actor,
                reason=reason,
                run_id=run_id,
            )
            worth: float | None = None
            try:
                # Nothing is decided yet: a failing service here is "not yet" (the job runs again later).
                worth = calls.ask(
                    "worth", lambda: self._jev.worth(exchange), decisions.probability, not_yet_if_failed=True
                )
            finally:
                worth_it.set_result(worth is not None and worth >= WORTH_THRESHOLD)
            if worth is None or worth < WORTH_THRESHOLD:
                return self._result(Outcome.NO_DECISION if worth is None else Outcome.NOT_WORTH, calls)
            profile = loading.result() or []
            plan = self._decide(exchange, profile, calls, pool)
            result = self._write(plan, exchange, actor=actor, run_id=run_id, check=check)
        # Counted once the pool is done: every call of the turn, a dropped draft's too.
        result.failures, result.model_calls = calls.failures, calls.calls
        return result

    def _exchange(self, speaker: Speaker, scope: str, messages: Sequence[Message]) -> Exchange | Outcome:
        """The speaker's exchange from what may still teach; or why there is nothing to decide."""
        if self._people is not None:
            # Before any model call: a paused person is not asked about; after a resume (or an
            # erasure, or a forget-all here) nothing said before it teaches.
            person = self._people.get(speaker.user_id)
            if person.paused:
                return Outcome.PAUSED
            messages = person.learnable(messages, scope)
        # Forgetting sticks: the person's messages behind a memory they forgot never teach again.
        messages = not_forgotten(messages, self._memories.forgotten_sources(Owner(scope, speaker.user_id)))
        return Exchange.of(speaker, scope, messages) or Outcome.NO_EXCHANGE

    def _decide(
        self, exchange: Exchange, profile: Sequence[Memory], calls: decisions.CallCounter, pool: Executor
    ) -> _Plan:
        """One decision on the profile and the add, the add's draft written beside it; each
        rewrite starts as soon as the decision names it. A failed decision changes nothing.

        A draft dropped on a "no" is no failure of the turn: it buys one model latency off every
        turn that adds."""

        def draft(failure_counts: bool = True) -> MemoryDraft | None:
            return calls.ask(
                "write_memory",
                lambda: self._chat.write_memory(exchange, None),
                decisions.memory_draft,
                failure_counts=failure_counts,
            )

        if not profile:  # nothing to duplicate: the design allows the add without asking
            return _Plan(add=pool.submit(draft))
        drafted = pool.submit(draft, False)
        rewrites: dict[str, Future[MemoryDraft | None]] = {}
        lock = threading.Lock()

        def rewrite(memory: Memory, verdict: object) -> None:
            """Start the record's rewrite once the decision names the update (and only once)."""
            if decisions.verdict(verdict) is Verdict.UPDATE:
                with lock:
                    if memory.memory_id not in rewrites:
                        rewrites[memory.memory_id] = self._rewrite(exchange, memory, calls, pool)

        decision = calls.ask("decide", lambda: self._jev.decide(exchange, profile, rewrite), _decision)
        if decision is None:
            return _Plan()
        calls.requested(decision.requests - 1)
        plan = _Plan()
        judged = 0
        for memory in profile:
            verdict = decisions.verdict(decision.verdicts.get(memory.memory_id))
            judged += verdict is not None
            if verdict is Verdict.DELETE:
                plan.deletes.append(memory)
            elif verdict is Verdict.UPDATE:
                rewrite(memory, verdict)
                plan.rewrites.append((memory, rewrites[memory.memory_id]))
        calls.failed(len(profile) - judged)  # those records are left untouched
        # A memory Jev could not judge may be the very fact this exchange restates: added without
        # it, the new memory would duplicate it (a retried speaker step would add its own earlier
        # add again). No add this turn; the nightly run re-reads the day.
        add = decisions.probability(decision.add) if judged == len(profile) else None
        if add is None and judged == len(profile):
            calls.failed()
        if add is not None and add >= ADD_THRESHOLD:
            if drafted.result() is None:  # the add was decided and its text could not be written
                logger.warning("model call failed", extra={"question": "write_memory"})
                calls.failed()
            plan.add = drafted
        return plan

    def _rewrite(
        self, exchange: Exchange, memory: Memory, calls: decisions.CallCounter, pool: Executor
    ) -> Future[MemoryDraft | None]:
        """The record's rewrite: it sees the exchange and that record only, never the profile."""
        return pool.submit(
            calls.ask, "write_memory", lambda: self._chat.write_memory(exchange, memory), decisions.memory_draft
        )

    def _write(
        self,
        plan: _Plan,
        exchange: Exchange,
        *,
        actor: Actor,
        run_id: int | None,
        check: PersonCheck | None,
    ) -> ExtractionResult:
        """Every change the plan holds, each with its ledger row, once every text is written (a
        text that is "not yet" raises here, before anything is applied); then the written texts'
        vectors. No write waits for a vector: the turn's changes are committed as soon as the
        last text is in.

        A live turn runs as the line is said, so its clock is the line's time; a nightly run works
        hours later, so what it learns is dated by the speaker's newest line, never by the run (an
        update never before the record's last change). The writer's end is kept only when it can
        end the record (``end_holds``)."""
        drafts = {memory.memory_id: future.result() for memory, future in plan.rewrites}
        add_draft = plan.add.result() if plan.add is not None else None
        now = self._clock()
        learned = min(now, exchange.said_at) if actor is Actor.NIGHTLY else now
        changed = [
            (memory, replace(memory, text=d.text, valid_until=end_holds(d.valid_until, memory.created_at, self._zone)))
            for memory, _ in plan.rewrites
            if (d := drafts[memory.memory_id]) is not None
        ]
        changed = [(m, after) for m, after in changed if after.text != m.text or after.valid_until != m.valid_until]
        result = ExtractionResult(Outcome.DONE)
        to_embed: list[Memory] = []  # as committed, with a new text: each is given its vector afterwards
        for memory in plan.deletes:
            if entry := self._apply(Change(Action.DELETE, memory, None, "jev verdict: delete"), actor, run_id, check):
                result.deleted.append(memory.memory_id)
                result.changes.append(entry)
            else:
                result.conflicts += 1
        for memory, after in changed:
            # Only the end moved: the text's vector stays. A new text's vector is stored once the
            # text is written (the old one goes with the old text). Never dated before the record's
            # last change.
            moved = after.text != memory.text
            after = replace(
                after,
                updated_at=max(learned, memory.updated_at),
                sources=exchange.sources,
                embedding=None if moved else memory.embedding,
            )
            if entry := self._apply(Change(Action.UPDATE, memory, after, "jev verdict: update"), actor, run_id, check):
                result.updated.append(memory.memory_id)
                result.changes.append(entry)
                if moved:
                    to_embed.append(after)
            else:
                result.conflicts += 1
        if add_draft is not None:
            added = self._add(exchange, add_draft, learned, actor, run_id, check)
            if added is None:
                result.conflicts += 1
            else:
                result.added.append(added.memory_ids[0])
                result.changes.append(added)
                if added.after is not None:  # an add's row holds the memory as written
                    to_embed.append(added.after)
        self._store_vectors(to_embed, check)
        return result

    def _store_vectors(self, written: Sequence[Memory], check: PersonCheck | None) -> None:
        """The written memories' vectors, in one call once every change is committed, each stored
        onto its record only if it is still as written (a record changed, forgotten or erased
        meanwhile is left as it is). A vector is derived from the text, not a change of the
        memory: no ledger row, as the nightly backfill's. A failed or throttled embedding leaves
        the record without one: it ranks by its words until the backfill gives it one.

        The writes checked the person's record; it is read again first, so that a pause or an
        erasure since then sends none of their texts to the embedding model (the backfill leaves
        a paused person's memories out too)."""
        if not written or not self._may_embed(check):
            return
        vectors = self._recall.embed_texts([m.text for m in written])
        for memory in written:
            vector = vectors.get(memory.text)
            if vector is None:
                continue
            try:
                self._memories.set_embedding(memory, vector)
            except Exception as exc:  # noqa: BLE001 - the record is written; the backfill gives it one
                logger.info(
                    "memory vector not stored", extra={"memory_id": memory.memory_id, "error": type(exc).__name__}
                )

    def _may_embed(self, check: PersonCheck | None) -> bool:
        if check is None or self._people is None or not self._recall.embeds:
            return True
        try:
            return check.allows(self._people.get(check.user_id))
        except Exception as exc:  # noqa: BLE001 - unread, nothing is sent: the backfill decides later
            logger.info("person unread: memory vectors left to the backfill", extra={"error": type(exc).__name__})
            return False

    def _add(
        self,
        exchange: Exchange,
        draft: MemoryDraft,
        learned: datetime,
        actor: Actor,
        run_id: int | None,
        check: PersonCheck | None,
    ) -> LedgerEntry | None:
        """The new memory's ledger row (its ``after`` the memory as written); None when every fresh
        id collided or the person's record refused it (counted as a conflict)."""
        for _ in range(ADD_ID_ATTEMPTS):
            memory = Memory(
                exchange.speaker.user_id,
                self._new_id(),
                draft.text,
                learned,
                learned,
                scope=exchange.scope,
                sources=exchange.sources,
                valid_until=end_holds(draft.valid_until, learned, self._zone),
            )
            try:
                return self._memories.apply(
                    Change(Action.ADD, None, memory, "jev: add"), actor=actor, run_id=run_id, check=check
                )
            except PersonRefused:
                logger.info("add refused by the person's record", extra={"user_id": exchange.speaker.user_id})
                return None
            except ConflictError:
                continue
        return None

    def _apply(self, change: Change, actor: Actor, run_id: int | None, check: PersonCheck | None) -> LedgerEntry | None:
        """The change's ledger row; None when the record changed since it was read, or the person's
        record refuses the write: the change is dropped, never forced."""
        try:
            return self._memories.apply(change, actor=actor, run_id=run_id, check=check)
        except PersonRefused:
            logger.info("change refused by the person's record", extra={"memory_id": change.memory_id})
            return None
        except ConflictError:
            logger.info("change dropped: record changed since read", extra={"memory_id": change.memory_id})
            return None

    @staticmethod
    def _result(outcome: Outcome, calls: decisions.CallCounter) -> ExtractionResult:
        return ExtractionResult(outcome, failures=calls.failures, model_calls=calls.calls)
