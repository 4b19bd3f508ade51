"""The nightly run: extraction over the day's messages, decay, the diary, the run record.

Window convention: a run as of ``now`` covers the 24 hours that END at the latest
03:00 JST at or before ``now``; its day label is the JST date on which that window
STARTS. So a run at 2026-11-30 03:00 JST covers [2026-11-29 03:00, 2026-11-30 03:00)
JST and is labelled "2026-11-29"; a message at 02:59 JST on the 30th belongs to it,
one at 03:00 JST on the 30th to the next night. A run a little late (a retried
delivery at 03:07) still maps to the same window and label, so the day claim makes
it a no-op.

Whose memory: a speaker here is a person within a scope (``Owner``), and only their own
conversation with the bot counts (``Message.conversation_of``): someone who never used the
bot (their channel messages fetched as history) gets no extraction, and no one's lines
enter another person's chunks. The diary still reads the whole day.

Order, as the design lists it: extraction (speakers concurrently, bounded), then the
decay review (so a record extraction just updated is no longer stale), with the diary
written alongside. The caps, not a clock, bound the work: see ``max_model_calls``.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timedelta, timezone
from typing import Callable, Sequence

from . import decisions
from .domain import (
    BOT_NAME,
    JST,
    PROFILE_LIMIT,
    LedgerEntry,
    Action,
    Actor,
    Change,
    Memory,
    Message,
    NightlyRun,
    Owner,
    Speaker,
    Verdict,
    iso,
    jst_day,
    one_line,
    plain_name,
    utcnow,
)
from .extraction import ExtractionResult, Extractor, not_forgotten
from .ports import ChatModel, ConflictError, DecisionModel, MemoryStore, MessageStore, RunStore

logger = logging.getLogger(__name__)

# The design's nightly numbers, each named once.
RUN_HOUR_JST = 3  # the alarm: 03:00 JST (18:00 UTC)
WINDOW = timedelta(hours=24)  # the previous 24 hours
CHUNK_MESSAGES = 6  # one speaker's messages are split into chunks of six
CHUNKS_PER_SPEAKER = 5  # only the newest five chunks per speaker
STALE_AFTER = timedelta(days=30)  # not updated for 30 days: a candidate for review
STALE_REVIEWS_PER_NIGHT = 20  # oldest first, at most 20 a night
DIARY_MESSAGES = 30  # the diary is written from the last 30 messages

# Speakers are processed concurrently so that a busy day fits in one invocation;
# each speaker's chunks stay sequential (they read and write the same profile).
SPEAKER_CONCURRENCY = 32
REVIEW_CONCURRENCY = 10
DECAY_REASON = "nightly decay: jev review delete"
DECAY_READ_REASON = "nightly decay review"


@dataclass(frozen=True)
class Window:
    start: datetime  # inclusive, UTC
    end: datetime  # exclusive, UTC
    day_label: str  # the JST date the window starts on


def window_for(now: datetime) -> Window:
    """The 24 hours up to the latest 03:00 JST at or before ``now`` (see the module docstring)."""
    local = now.astimezone(JST)
    end = local.replace(hour=RUN_HOUR_JST, minute=0, second=0, microsecond=0)
    if end > local:
        end -= timedelta(days=1)
    start = end - WINDOW
    return Window(start.astimezone(timezone.utc), end.astimezone(timezone.utc), jst_day(start))


def max_model_calls(speakers: int) -> int:
    """The hard upper bound on model calls for a night with ``speakers`` active speakers.

    Per chunk (one extraction): worth, a verdict per profile record, the add decision,
    a rewrite per profile record, the add text. Five chunks per speaker, plus the stale
    reviews and the one diary call.
    """
    per_chunk = 1 + PROFILE_LIMIT + 1 + PROFILE_LIMIT + 1
    return speakers * CHUNKS_PER_SPEAKER * per_chunk + STALE_REVIEWS_PER_NIGHT + 1


def by_speaker(messages: Sequence[Message]) -> dict[Owner, list[Message]]:
    """Each person's own non-bot messages to the bot, with some text, per scope, chronological.

    Lines that are not part of their author's conversation with the bot (channel history)
    are left out: only people who used the bot themselves get a profile.
    """
    grouped: dict[Owner, list[Message]] = {}
    for message in sorted(messages, key=lambda m: int(m.message_id)):
        if message.is_bot or not message.content.strip() or message.conversation_of != message.author_id:
            continue
        grouped.setdefault(Owner(message.scope, message.author_id), []).append(message)
    return grouped


def diary_lines(messages: Sequence[Message]) -> list[Message]:
    """The day's last 30 non-bot messages with text, anyone's: the diary is about the channel."""
    said = [m for m in messages if not m.is_bot and m.content.strip()]
    return sorted(said, key=lambda m: int(m.message_id))[-DIARY_MESSAGES:]


def chunks(messages: Sequence[Message]) -> list[list[Message]]:
    """Chronological chunks of six (the last one may be short); only the newest five."""
    split = [list(messages[i : i + CHUNK_MESSAGES]) for i in range(0, len(messages), CHUNK_MESSAGES)]
    return split[-CHUNKS_PER_SPEAKER:]


def transcript(messages: Sequence[Message]) -> str:
    """One "name: text" line per message: the bot's under its own name, a person's under their
    sanitised display name (a nickname of "memorybot" is not the bot), line breaks folded."""
    return "\n".join(f"{BOT_NAME if m.is_bot else plain_name(m.author_name, m.author_id)}: {one_line(m.content)}" for m in messages)


@dataclass
class RunSummary:
    """The JSON summary stored with the run. Ids only: no memory or message text."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    decayed: list[str] = field(default_factory=list)  # removed by the decay pass, not extraction
    failures: int = 0  # model calls that gave no usable answer
    failed_speakers: int = 0  # speakers whose extraction raised (store errors and the like)
    model_calls: int = 0
    conflicts: int = 0  # changes dropped because the record changed since it was read
    speakers: int = 0
    chunks: int = 0
    # Speakers whose extraction a store failure interrupted: the run is not finished until
    # a retry (the scheduler's) has redone them.
    pending_speakers: list[str] = field(default_factory=list)

    @classmethod
    def saved(cls, data: dict) -> "RunSummary":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def add_extraction(self, result: ExtractionResult) -> None:
        self.added += result.added
        self.updated += result.updated
        self.deleted += result.deleted
        self.failures += result.failures
        self.model_calls += result.model_calls
        self.conflicts += result.conflicts
        self.chunks += 1

    def carry_over(self, entries: Sequence[LedgerEntry]) -> None:
        """What an earlier, failed worker of this run already changed (its ledger rows)."""
        for entry in sorted(entries, key=lambda e: e.at):
            if entry.action is Action.ADD:
                self.added += entry.memory_ids
            elif entry.action is Action.UPDATE:
                self.updated += entry.memory_ids
            elif entry.action is Action.DELETE:
                (self.decayed if entry.reason == DECAY_REASON else self.deleted).extend(entry.memory_ids)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _SpeakerOutcome:
    results: list[ExtractionResult]
    failed: bool = False


class IncompleteRun(Exception):
    """Some speakers could not be consolidated (a store failure): the progress is saved and
    the run given up, so that the scheduler's retry takes it over and redoes only those."""

    def __init__(self, run_id: int, pending: int) -> None:
        super().__init__(f"nightly run {run_id}: {pending} speaker(s) to redo")
        self.run_id = run_id


def _diary_line(answer: object) -> str | None:
    return decisions.memory_text(answer)  # one line: whitespace folded, capped, never empty


class Consolidator:
    def __init__(
        self,
        memories: MemoryStore,
        messages: MessageStore,
        runs: RunStore,
        extractor: Extractor,
        decision_model: DecisionModel,
        chat_model: ChatModel,
        *,
        clock: Callable[[], datetime] = utcnow,
        speaker_concurrency: int = SPEAKER_CONCURRENCY,
    ) -> None:
        self._memories = memories
        self._messages = messages
        self._runs = runs
        self._extractor = extractor
        self._jev = decision_model
        self._chat = chat_model
        self._clock = clock
        self._speaker_concurrency = speaker_concurrency

    def run(self, now: datetime | None = None) -> NightlyRun | None:
        """Consolidate the window ``now`` falls after; None if that JST day's run is done or under way.

        A run whose earlier worker failed is taken over and done again: every step is
        conditional, and what was already applied is in the profiles the extraction reads.
        """
        now = now or self._clock()
        window = window_for(now)
        # Read before claiming: a failed read leaves the day unclaimed, so a retry does the work.
        day = self._messages.between(window.start, window.end)
        grouped = by_speaker(day)
        run = self._runs.claim(window.day_label, self._clock())
        if run is None:
            logger.info("nightly day already claimed", extra={"day_label": window.day_label})
            return None
        logger.info("nightly run started", extra={"run_id": run.run_id, "day_label": window.day_label, "speakers": len(grouped)})
        try:
            return self._consolidate(run, now, grouped, diary_lines(day))
        except BaseException:
            # Everything applied so far is committed with its ledger row; give the run up so
            # that the scheduler's retry takes it over and finishes the work.
            logger.warning("nightly run interrupted", extra={"run_id": run.run_id})
            try:
                self._runs.release(run.run_id)
            except Exception:  # noqa: BLE001 - the run's time limit frees it anyway
                logger.warning("nightly run not released", extra={"run_id": run.run_id})
            raise

    def _consolidate(
        self, run: NightlyRun, now: datetime, grouped: dict[Owner, list[Message]], recent: list[Message]
    ) -> NightlyRun:
        # A run taken over from a failed worker keeps what that worker did: its saved
        # progress (then only the pending speakers are redone), else its ledger rows.
        resuming = bool(run.summary)
        if resuming:
            summary = RunSummary.saved(run.summary)
            grouped = {s: msgs for s, msgs in grouped.items() if s.key in set(summary.pending_speakers)}
        else:
            summary = RunSummary(speakers=len(grouped))
            summary.carry_over(self._memories.ledger_for_run(run.run_id))
        counter = decisions.CallCounter()
        kept = decisions.concurrently(self._not_forgotten, list(grouped.items()), self._speaker_concurrency)
        usable = [(speaker, msgs) for speaker, msgs in kept if msgs is not None]
        pending = [speaker.key for speaker, msgs in kept if msgs is None]

        with ThreadPoolExecutor(max_workers=1) as diary_pool:
            diary_future = diary_pool.submit(lambda: run.diary if resuming else self._diary(recent, counter))
            outcomes = decisions.concurrently(
                lambda item: self._speaker(item[0], item[1], run.run_id), usable, self._speaker_concurrency
            )
            for (speaker, _), outcome in zip(usable, outcomes):
                for result in outcome.results:
                    summary.add_extraction(result)
                if outcome.failed:
                    pending.append(speaker.key)
            if not resuming:  # the first worker reviewed the stale records already
                self._decay(now, run.run_id, summary, counter)
            diary = diary_future.result()

        summary.model_calls += counter.calls
        summary.failures += counter.failures
        summary.failed_speakers += len(pending)
        summary.pending_speakers = sorted(pending)
        if pending:
            self._runs.finish(replace(run, diary=diary, summary=summary.to_dict()))  # progress, not finished
            raise IncompleteRun(run.run_id, len(pending))
        finished = replace(run, finished_at=self._clock(), worked_until=None, diary=diary, summary=summary.to_dict())
        self._runs.finish(finished)
        logger.info(
            "nightly run finished",
            extra={
                "run_id": run.run_id,
                "day_label": run.day_label,
                **{k: len(v) if isinstance(v, list) else v for k, v in summary.to_dict().items()},
            },
        )
        return finished

    def _not_forgotten(self, item: tuple[Owner, list[Message]]) -> tuple[Owner, list[Message] | None]:
        """Drop exactly the messages a memory the speaker forgot was learned from; the rest stay."""
        owner, messages = item
        try:
            forgotten = self._memories.forgotten_sources(owner)
        except Exception as exc:  # noqa: BLE001 - one speaker failing does not stop the others
            logger.warning("nightly speaker failed", extra={"speaker_id": owner.user_id, "error": type(exc).__name__})
            return owner, None
        return owner, not_forgotten(messages, forgotten)

    def _speaker(self, owner: Owner, messages: list[Message], run_id: int) -> _SpeakerOutcome:
        outcome = _SpeakerOutcome([])
        speaker = Speaker(owner.user_id, messages[-1].author_name if messages else "")
        try:
            for chunk in chunks(messages):
                outcome.results.append(
                    self._extractor.run(speaker, owner.scope, chunk, actor=Actor.NIGHTLY, run_id=run_id)
                )
        except Exception as exc:  # noqa: BLE001 - logged by id and counted; the others go on
            logger.warning(
                "nightly speaker failed", extra={"speaker_id": owner.user_id, "run_id": run_id, "error": type(exc).__name__}
            )
            outcome.failed = True
        return outcome

    def _log_decay_reads(self, stale: list[Memory], run_id: int, summary: RunSummary) -> list[Memory]:
        """One ``read`` row per person whose stale memories are reviewed; a person whose row
        could not be written is not reviewed tonight (a read is never used unlogged)."""
        logged: set[Owner] = set()
        for owner in dict.fromkeys(m.owner for m in stale):
            ids = tuple(m.memory_id for m in stale if m.owner == owner)
            try:
                self._memories.log_read(owner, ids, actor=Actor.NIGHTLY, reason=DECAY_READ_REASON, run_id=run_id)
            except Exception as exc:  # noqa: BLE001
                logger.warning("nightly decay read not logged", extra={"run_id": run_id, "user_id": owner.user_id, "error": type(exc).__name__})
                summary.failures += 1
                continue
            logged.add(owner)
        return [m for m in stale if m.owner in logged]

    def _decay(self, now: datetime, run_id: int, summary: RunSummary, counter: decisions.CallCounter) -> None:
        """Review the oldest stale records; only an explicit DELETE removes one."""
        try:
            stale = self._memories.stale(now - STALE_AFTER, STALE_REVIEWS_PER_NIGHT)
        except Exception as exc:  # noqa: BLE001 - decay failing must not lose the extraction's record
            logger.warning("nightly decay could not list stale records", extra={"run_id": run_id, "error": type(exc).__name__})
            summary.failures += 1
            return
        stale = stale[:STALE_REVIEWS_PER_NIGHT]  # the cap holds whatever the store returns
        stale = self._log_decay_reads(stale, run_id, summary)  # their text goes to the decision model

        def review(memory: Memory) -> Verdict | None:
            return counter.ask(
                "review", lambda: self._jev.review(memory), lambda a: decisions.verdict(a, decisions.REVIEW_VERDICTS)
            )

        verdicts = decisions.concurrently(review, stale, REVIEW_CONCURRENCY)
        for memory, verdict in zip(stale, verdicts):
            if verdict is not Verdict.DELETE:
                continue  # keep, failed or ambiguous: it stays stale and is reviewed again next night
            change = Change(Action.DELETE, memory, None, DECAY_REASON)
            try:
                self._memories.apply(change, actor=Actor.NIGHTLY, run_id=run_id)
            except ConflictError:
                summary.conflicts += 1
                continue
            except Exception as exc:  # noqa: BLE001
                logger.warning(
                    "nightly decay delete failed",
                    extra={"run_id": run_id, "memory_id": memory.memory_id, "error": type(exc).__name__},
                )
                summary.failures += 1
                continue
            summary.decayed.append(memory.memory_id)

    def _diary(self, recent: Sequence[Message], counter: decisions.CallCounter) -> str:
        """One Japanese line from the last 30 messages; a failure leaves it empty."""
        if not recent:
            return ""
        text = transcript(recent)
        return counter.ask("diary", lambda: self._chat.write_diary(text), _diary_line) or ""


def run_record(run: NightlyRun) -> dict:
    """The run as JSON-ready data (for the local stack's answer and the handler's result)."""
    return {
        "runId": run.run_id,
        "dayLabel": run.day_label,
        "startedAt": iso(run.started_at),
        "finishedAt": iso(run.finished_at) if run.finished_at else None,
        "diary": run.diary,
        "summary": run.summary,
        "rolledBack": run.rolled_back,
        "rolledBackAt": iso(run.rolled_back_at) if run.rolled_back_at else None,
        "rollback": run.rollback_counts or None,
    }
