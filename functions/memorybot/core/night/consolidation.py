"""The nightly run: extraction over the day's messages, decay, the diary, the run record.

The window (which 24 hours a night covers), the design's nightly numbers and how a day is cut
into chunks are in window.py.

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
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, tzinfo
from typing import Protocol

from ..prompting import decisions
from ..record.catalog import Language
from ..record.changes import DECAY_REASON, Change, LedgerEntry, NightlyRun, RunSummary
from ..record.domain import (
    JST,
    NIGHTLY_MAX_DURATION,
    Action,
    Actor,
    Memory,
    Message,
    Owner,
    Speaker,
    Verdict,
    utcnow,
)
from ..record.ports import (
    ChatModel,
    ConflictError,
    DecisionModel,
    DiscordError,
    EmbeddingModel,
    ForgottenSources,
    ManifestStore,
    MemoryWriter,
    MessageStore,
    OvernightNotes,
    PeopleStore,
    ReadLog,
    ReviewQueue,
    RunLedger,
    RunStore,
    VectorIndex,
    VectorWriter,
)
from ..rights.receipts import note_overnight
from ..rights.servers import ServerSettings, ServerStore, count_quietly, guild_of, learnable_lines
from ..turn.extraction import Extractor, not_forgotten
from .nightly_jobs import DiaryMark, ReviewMark, SpeakerMark, manifest_entry
from .window import (
    DIARY_REFUSALS,
    EMBED_BACKFILL_BATCH,
    EMBED_BACKFILL_PER_NIGHT,
    STALE_AFTER,
    STALE_LOOKS,
    STALE_REVIEWS_PER_NIGHT,
    by_speaker,
    chunks,
    diary_lines,
    transcript,
    window_for,
)

logger = logging.getLogger(__name__)

# Speakers are processed concurrently so that a busy day fits in one invocation;
# each speaker's chunks stay sequential (they read and write the same profile).
SPEAKER_CONCURRENCY = 32
REVIEW_CONCURRENCY = 10
DECAY_READ_REASON = "nightly decay review"


class SpeakerNotReady(Exception):
    """A speaker's step could not start (its forget lookup failed): raised so that the step is retried."""


# The names of the per-run step marks in the run store (see RunStore.mark_step).
REVIEW_MARK = "review"
SPEAKER_DONE = "done"
SPEAKER_FAILED = "failed"


def speaker_mark(owner_key: str) -> str:
    return f"speaker#{owner_key}"


def manifest_key(run_id: int) -> str:
    return f"runs/{int(run_id)}/speakers.json"


@dataclass
class ReviewTally:
    """What the review counts as it goes (its mark, ``ReviewMark``, is written from it once)."""

    failures: int = 0
    conflicts: int = 0
    reviewed: int = 0  # memories put to the review question
    embedded: int = 0  # memories given a vector by the backfill
    embedding_cursor: str = ""  # where the next night's backfill goes on
    embedding_error: str = ""  # the error's name when the backfill could not list memories


def _diary_line(answer: object) -> str | None:
    return decisions.memory_text(answer)  # one line: whitespace folded, capped, never empty


class NightlyMemories(
    MemoryWriter,
    ReadLog,
    ReviewQueue,
    VectorWriter,
    VectorIndex,
    RunLedger,
    ForgottenSources,
    Protocol,
):
    """The roles of the memory store the nightly run uses itself (its extractor has its own): the
    changes, the review queue with its read rows, the vector backfill, the run's own rows."""


class Consolidator:
    """The nightly run's steps, each idempotent on its run (and speaker): claim the day, plan the
    speakers (a manifest of ids), one speaker's chunks, the decay review and diary, finish.

    Deployed, a Step Functions state machine runs them (one Lambda per step, the speakers in a
    Distributed Map); ``nightly_steps.run_in_process`` runs the same steps in process, in the
    same order, with the same payloads, for the local stack and the tests.
    """

    def __init__(
        self,
        memories: NightlyMemories,
        messages: MessageStore,
        runs: RunStore,
        extractor: Extractor,
        decision_model: DecisionModel,
        chat_model: ChatModel,
        *,
        manifests: ManifestStore,
        clock: Callable[[], datetime] = utcnow,
        speaker_concurrency: int = SPEAKER_CONCURRENCY,
        embeddings: EmbeddingModel | None = None,
        people: PeopleStore | None = None,
        diary_language: Language = Language.JA,
        servers: ServerStore | None = None,
        post: Callable[[str, str], object] | None = None,
        server_diaries: int = 0,
        zone: tzinfo = JST,
        overnight: OvernightNotes | None = None,  # what the night changed, told on the next use
    ) -> None:
        # Servers' own settings (core/rights/servers.py): memory off or turned on since, and their diaries,
        # posted by ``post(channel, line)`` (the line escaped there; at most ``server_diaries`` a night).
        self._servers = servers
        self._post = post
        self._server_diaries = server_diaries
        self._memories = memories
        self._overnight = overnight
        self.zone = zone  # the night's 03:00 and its day label are this zone's
        self._people = people
        self._diary_language = diary_language
        self._embeddings = embeddings
        self._messages = messages
        self._runs = runs
        self._extractor = extractor
        self._jev = decision_model
        self._chat = chat_model
        self.manifests = manifests
        self._clock = clock
        self.speaker_concurrency = speaker_concurrency

    @property
    def runs(self) -> RunStore:
        return self._runs

    # ---- step 1: claim the JST day

    def claim(self, now: datetime, hold: timedelta = NIGHTLY_MAX_DURATION) -> NightlyRun | None:
        window = window_for(now, self.zone)
        run = self._runs.claim(window.day_label, self._clock(), hold)
        if run is None:
            logger.info("nightly day already claimed", extra={"day_label": window.day_label})
        else:
            logger.info("nightly run claimed", extra={"run_id": run.run_id, "day_label": window.day_label})
        return run

    def release(self, run_id: int) -> None:
        try:
            self._runs.release(run_id)
        except Exception:  # noqa: BLE001 - the run's time limit frees it anyway
            logger.warning("nightly run not released", extra={"run_id": run_id})

    # ---- step 2: plan

    def plan(self, run_id: int, now: datetime) -> tuple[str, int]:
        """The day's speakers with their message ids, written as the run's manifest; (key, count).
        Written again whole by a retry: the same key, the same content."""
        window = window_for(now, self.zone)
        grouped = self._learnable_here(by_speaker(self._messages.between(window.start, window.end)))
        entries = [
            manifest_entry(owner.scope, owner.user_id, [(m.channel_id, m.message_id) for m in msgs])
            for owner, msgs in grouped.items()
        ]
        key = manifest_key(run_id)
        self.manifests.write(key, entries)
        logger.info("nightly run planned", extra={"run_id": run_id, "speakers": len(entries)})
        return key, len(entries)

    def _learnable_here(self, grouped: dict[Owner, list[Message]]) -> dict[Owner, list[Message]]:
        """Each speaker's lines that their server lets be learned: none where its admins turned
        memory off, none said before they turned it on again (a server's own scope only)."""
        if self._servers is None:
            return grouped
        guilds = [guild for owner in grouped if (guild := guild_of(owner.scope))]
        settings = self._servers.get_many(guilds) if guilds else {}
        kept: dict[Owner, list[Message]] = {}
        for owner, messages in grouped.items():
            here = settings.get(guild_of(owner.scope))
            lines = learnable_lines(here, messages)
            if lines:
                kept[owner] = lines
        return kept

    # ---- step 3, once per speaker (the map)

    def speaker(self, run_id: int, owner: Owner, refs: Sequence[Sequence[str]]) -> SpeakerMark:
        """One speaker's newest chunks through the extraction path (actor nightly); its result is
        stored as the speaker's mark. A mark already there (a redrive, a retried step whose
        answer was lost) is returned as it is: nothing runs twice."""
        done = self._runs.step_mark(run_id, speaker_mark(owner.key), SpeakerMark)
        if done is not None:
            return done
        said = by_speaker(self._messages.of_conversation(owner.user_id, [(c, m) for c, m in refs])).get(owner, [])
        _, messages = self._not_forgotten((owner, said))
        if messages is None:
            raise SpeakerNotReady(owner.user_id)
        speaker = Speaker(owner.user_id, messages[-1].author_name if messages else "")
        mark = SpeakerMark(SPEAKER_DONE)
        guild = guild_of(owner.scope)
        if guild and self._servers is not None:  # live: turned off since the plan
            messages = learnable_lines(self._servers.get(guild), messages)
        for chunk in chunks(messages):
            outcome = self._extractor.run(speaker, owner.scope, chunk, actor=Actor.NIGHTLY, run_id=run_id)
            self._count(
                guild, outcome.model_calls, len(outcome.added) - len(outcome.deleted), owner.user_id, outcome.added
            )
            self._note(outcome.changes)
            mark = replace(
                mark,
                chunks=mark.chunks + 1,
                failures=mark.failures + outcome.failures,
                model_calls=mark.model_calls + outcome.model_calls,
                conflicts=mark.conflicts + outcome.conflicts,
            )
        return self._runs.mark_step(run_id, speaker_mark(owner.key), mark)

    def _count(self, guild: str, model_calls: int, memories: int, user_id: str = "", added: Sequence[str] = ()) -> None:
        if self._servers is not None and guild:
            day = self._clock().astimezone(self.zone).date()  # the deployment's day, as the turns count it
            count_quietly(
                self._servers,
                guild,
                day,
                model_requests=model_calls,
                memories=memories,
                person=user_id if added else "",
            )

    def speaker_failed(self, run_id: int, owner: Owner, error: str) -> SpeakerMark:
        """Record a speaker whose step failed after its retries. A speaker already marked (done
        by an attempt whose answer was lost) keeps that mark: a speaker is counted once."""
        logger.warning("nightly speaker failed", extra={"run_id": run_id, "speaker_id": owner.user_id, "error": error})
        return self._runs.mark_step(run_id, speaker_mark(owner.key), SpeakerMark(SPEAKER_FAILED, error=error[:80]))

    def _not_forgotten(self, item: tuple[Owner, list[Message]]) -> tuple[Owner, list[Message] | None]:
        """Drop exactly the messages a memory the speaker forgot was learned from; the rest stay."""
        owner, messages = item
        try:
            forgotten = self._memories.forgotten_sources(owner)
        except Exception as exc:  # noqa: BLE001 - one speaker failing does not stop the others
            logger.warning("nightly speaker failed", extra={"speaker_id": owner.user_id, "error": type(exc).__name__})
            return owner, None
        return owner, not_forgotten(messages, forgotten)

    # ---- step 4: the decay review and the diary

    def review(self, run_id: int, now: datetime) -> ReviewMark:
        """The stale review and the diary, once per run (its mark holds the result)."""
        done = self._runs.step_mark(run_id, REVIEW_MARK, ReviewMark)
        if done is not None:
            return done
        window = window_for(now, self.zone)
        said = self._messages.between(window.start, window.end)
        paused = self._paused({m.author_id for m in said if not m.is_bot})
        recent = diary_lines([m for m in said if m.author_id not in paused])
        counter = decisions.CallCounter()
        tally = ReviewTally()
        with ThreadPoolExecutor(max_workers=1) as diary_pool:
            diary_future = diary_pool.submit(self._diary, recent, counter)
            self._decay(now, run_id, tally, counter)
            self._backfill_embeddings(run_id, tally)
            diary = diary_future.result()
        self._server_diaries_of([m for m in said if m.author_id not in paused], run_id, counter)
        mark = ReviewMark(
            diary=diary,
            failures=tally.failures + counter.failures,
            conflicts=tally.conflicts,
            model_calls=counter.calls,
            reviewed=tally.reviewed,
            embedded=tally.embedded,
            embedding_cursor=tally.embedding_cursor,
            embedding_error=tally.embedding_error,
        )
        return self._runs.mark_step(run_id, REVIEW_MARK, mark)

    # ---- the servers' own diaries (core/rights/servers.py): one a server that set a channel and had messages

    def _server_diaries_of(self, said: Sequence[Message], run_id: int, counter: decisions.CallCounter) -> None:
        """Each server's own diary line, from that server's own lines of the day only (never another
        server's), posted to the channel its admins set; at most ``server_diaries`` a night, each
        one model call. A post Discord refuses for good (50001, 50013) stops that server's posting
        and ``show`` tells its admins; nothing is retried beyond the review step's own retries."""
        if self._servers is None or self._post is None or self._server_diaries <= 0:
            return
        by_guild: dict[str, list[Message]] = {}
        for message in said:
            if guild := guild_of(message.scope):
                by_guild.setdefault(guild, []).append(message)
        if not by_guild:
            return
        settings = self._servers.get_many(sorted(by_guild))
        posting = [g for g in sorted(by_guild) if settings[g].posts_diary][: self._server_diaries]
        for guild in posting:
            mark_name = f"diary#{guild}"
            if self._runs.step_mark(run_id, mark_name, DiaryMark) is not None:
                continue  # posted (or refused) by an earlier attempt of this step
            self._runs.mark_step(
                run_id, mark_name, self._server_diary(guild, settings[guild], by_guild[guild], counter)
            )

    def _server_diary(
        self, guild: str, settings: ServerSettings, said: Sequence[Message], counter: decisions.CallCounter
    ) -> DiaryMark:
        lines = diary_lines(learnable_lines(settings, said))
        if not lines:
            return DiaryMark("empty")
        language = Language(settings.diary_language) if settings.diary_language else self._diary_language
        text = transcript(lines)
        line = counter.ask("server_diary", lambda: self._chat.write_diary(text, language), _diary_line)
        self._count(guild, 1, 0)
        if not line:
            return DiaryMark("failed")
        assert self._post is not None and self._servers is not None
        try:
            self._post(settings.diary_channel, line)
        except DiscordError as exc:
            logger.warning("server diary not posted", extra={"code": exc.code, "status": exc.status})
            if exc.code in DIARY_REFUSALS:
                self._servers.diary_failed(guild, exc.code)
                return DiaryMark("refused", exc.code)
            return DiaryMark("failed", exc.code)
        except Exception as exc:  # noqa: BLE001 - one server's post failing never stops the night
            logger.warning("server diary not posted", extra={"error": type(exc).__name__})
            return DiaryMark("failed")
        return DiaryMark("posted")

    def _log_decay_reads(self, stale: list[Memory], run_id: int, tally: ReviewTally) -> list[Memory]:
        """One ``read`` row per person whose stale memories are reviewed; a person whose row
        could not be written is not reviewed tonight (a read is never used unlogged)."""
        logged: set[Owner] = set()
        for owner in dict.fromkeys(m.owner for m in stale):
            ids = tuple(m.memory_id for m in stale if m.owner == owner)
            try:
                self._memories.log_read(owner, ids, actor=Actor.NIGHTLY, reason=DECAY_READ_REASON, run_id=run_id)
            except Exception as exc:  # noqa: BLE001
                logger.warning(
                    "nightly decay read not logged",
                    extra={"run_id": run_id, "user_id": owner.user_id, "error": type(exc).__name__},
                )
                tally.failures += 1
                continue
            logged.add(owner)
        return [m for m in stale if m.owner in logged]

    def _due(self, now: datetime) -> list[Memory]:
        """Tonight's review, within its cap: the memories whose end has come (and untouched since)
        first, earliest ended first; then the stale ones, least recently reviewed first."""
        ended = self._memories.ended(now, STALE_REVIEWS_PER_NIGHT)[:STALE_REVIEWS_PER_NIGHT]
        room = STALE_REVIEWS_PER_NIGHT - len(ended)
        stale = self._memories.stale(now - STALE_AFTER, room + len(ended)) if room else []
        taken = {(m.owner, m.memory_id) for m in ended}
        return ended + [m for m in stale if (m.owner, m.memory_id) not in taken][:room]

    def _decay(self, now: datetime, run_id: int, tally: ReviewTally, counter: decisions.CallCounter) -> None:
        """Review the ended records, then the stale ones least recently reviewed first; only an
        explicit DELETE removes one, and a KEEP marks it reviewed so that it goes behind those not
        yet reviewed (an ended one kept leaves the ended set: it was looked at since its end)."""
        try:
            stale = self._due_unpaused(now, run_id, tally)  # a paused person's memories reach no model
        except Exception as exc:  # noqa: BLE001 - decay failing must not lose the extraction's record
            logger.warning(
                "nightly decay could not list stale records", extra={"run_id": run_id, "error": type(exc).__name__}
            )
            tally.failures += 1
            return
        stale = self._log_decay_reads(stale, run_id, tally)  # their text goes to the decision model
        tally.reviewed = len(stale)

        def review(memory: Memory) -> Verdict | None:
            return counter.ask(
                "review", lambda: self._jev.review(memory), lambda a: decisions.verdict(a, decisions.REVIEW_VERDICTS)
            )

        verdicts = decisions.concurrently(review, stale, REVIEW_CONCURRENCY)
        for memory, verdict in zip(stale, verdicts, strict=False):
            if verdict is Verdict.KEEP:
                self._mark_kept(memory, run_id, tally)
                continue
            if verdict is not Verdict.DELETE:
                continue  # failed or ambiguous: it stays first in line and is reviewed again next night
            change = Change(Action.DELETE, memory, None, DECAY_REASON)
            try:
                self._note([self._memories.apply(change, actor=Actor.NIGHTLY, run_id=run_id)])
            except ConflictError:
                tally.conflicts += 1
            except Exception as exc:  # noqa: BLE001
                logger.warning(
                    "nightly decay delete failed",
                    extra={"run_id": run_id, "memory_id": memory.memory_id, "error": type(exc).__name__},
                )
                tally.failures += 1

    def _note(self, changes: Sequence[LedgerEntry]) -> None:
        """What the night changed, noted for each person's next use there (core/rights/receipts.py)."""
        if self._overnight is not None:
            note_overnight(self._overnight, changes)

    def _mark_kept(self, memory: Memory, run_id: int, tally: ReviewTally) -> None:
        try:
            self._memories.mark_reviewed(memory, self._clock())
        except Exception as exc:  # noqa: BLE001 - unmarked, it is simply reviewed again first
            logger.warning(
                "nightly review mark failed",
                extra={"run_id": run_id, "memory_id": memory.memory_id, "error": type(exc).__name__},
            )
            tally.failures += 1

    def _backfill_embeddings(self, run_id: int, tally: ReviewTally) -> None:
        """Vectors for up to EMBED_BACKFILL_PER_NIGHT memories that lack one of the configured
        model, from where the previous night stopped (its cursor is kept in its summary)."""
        if self._embeddings is None:
            return
        model = self._embeddings.model_id
        previous = self._runs.get(run_id - 1) if run_id > 1 else None
        start = previous.summary.embedding_cursor if previous is not None else ""
        try:
            missing, cursor = self._memories.without_embedding(model, EMBED_BACKFILL_PER_NIGHT, start=start)
        except Exception as exc:  # noqa: BLE001 - the backfill waits for the next night
            logger.warning("embedding backfill could not list memories", extra={"run_id": run_id})
            tally.failures += 1
            tally.embedding_error = type(exc).__name__
            return
        embedded = 0
        missing = self._unpaused(missing[:EMBED_BACKFILL_PER_NIGHT])  # the bound holds whatever the store returns
        for i in range(0, len(missing), EMBED_BACKFILL_BATCH):
            batch = missing[i : i + EMBED_BACKFILL_BATCH]
            try:
                vectors = self._embeddings.embed([m.text for m in batch])
            except Exception:  # noqa: BLE001 - these stay lexical until a later night
                tally.failures += 1
                continue
            for memory, vector in zip(batch, vectors, strict=False):
                try:
                    embedded += self._memories.set_embedding(memory, vector)
                except Exception:  # noqa: BLE001
                    tally.failures += 1
        tally.embedded = embedded
        tally.embedding_cursor = cursor
        logger.info("embedding backfill", extra={"run_id": run_id, "missing": len(missing), "embedded": embedded})

    def _paused(self, user_ids: set[str]) -> set[str]:
        """Who of ``user_ids`` has paused memory (docs/consent.md): nothing of theirs reaches a
        model tonight. A record that cannot be read counts as paused (tomorrow is another night)."""
        if self._people is None:
            return set()
        people = self._people

        def paused(user_id: str) -> bool:
            try:
                return people.get(user_id).paused
            except Exception as exc:  # noqa: BLE001
                logger.warning("person record unreadable", extra={"user_id": user_id, "error": type(exc).__name__})
                return True

        ids = sorted(user_ids)
        return {u for u, p in zip(ids, decisions.concurrently(paused, ids, REVIEW_CONCURRENCY), strict=True) if p}

    def _due_unpaused(self, now: datetime, run_id: int, tally: ReviewTally) -> list[Memory]:
        """Tonight's review (``_due``: ended, then stale; at most twenty) of people who have not
        paused memory. A paused person's records go behind the others (a mark, as for a kept one,
        with no model asked; an ended one so leaves the ended set and waits in the stale queue) and
        the queue is read again, at most STALE_LOOKS times a night: so they never hold its places."""
        chosen: dict[tuple[Owner, str], Memory] = {}
        for _ in range(STALE_LOOKS):
            stale = self._due(now)
            unpaused = self._unpaused(stale)
            for memory in stale:
                if memory in unpaused:
                    chosen.setdefault((memory.owner, memory.memory_id), memory)
                else:
                    self._mark_kept(memory, run_id, tally)
            if len(unpaused) == len(stale) or len(chosen) >= STALE_REVIEWS_PER_NIGHT:
                break
        return list(chosen.values())[:STALE_REVIEWS_PER_NIGHT]

    def _unpaused(self, memories: list[Memory]) -> list[Memory]:
        paused = self._paused({m.user_id for m in memories})
        return [m for m in memories if m.user_id not in paused]

    def _diary(self, recent: Sequence[Message], counter: decisions.CallCounter) -> str:
        """One line from the last 30 messages, in the diary's language; a failure leaves it empty."""
        if not recent:
            return ""
        text = transcript(recent)
        return counter.ask("diary", lambda: self._chat.write_diary(text, self._diary_language), _diary_line) or ""

    # ---- step 5: finish

    def finish(self, run_id: int, manifest: str) -> NightlyRun:
        """The run record: the changes from the run's ledger rows (each once), the counts from the
        step marks, and the speakers that failed after their retries. Finished once."""
        run = self._runs.get(run_id)
        if run is None:
            raise LookupError(f"nightly run {run_id} does not exist")
        if run.finished_at is not None:
            return run
        entries = self.manifests.read(manifest)
        keys = [f"{e['scope']}#{e['user_id']}" for e in entries]
        summary = RunSummary(speakers=len(keys))
        summary.carry_over(self._memories.ledger_for_run(run_id))
        marks = decisions.concurrently(
            lambda k: self._runs.step_mark(run_id, speaker_mark(k), SpeakerMark), keys, self.speaker_concurrency
        )
        for key, mark in zip(keys, marks, strict=False):
            if mark is None or mark.status != SPEAKER_DONE:
                summary.failed_speakers.append(key)  # failed, or lost by a map that tolerated it
                continue
            summary.chunks += mark.chunks
            summary.failures += mark.failures
            summary.model_calls += mark.model_calls
            summary.conflicts += mark.conflicts
        review = self._runs.step_mark(run_id, REVIEW_MARK, ReviewMark) or ReviewMark()
        summary.failures += review.failures
        summary.model_calls += review.model_calls
        summary.conflicts += review.conflicts
        summary.reviews = review.reviewed
        summary.embedded = review.embedded
        summary.embedding_cursor = review.embedding_cursor
        summary.failed_speakers.sort()
        finished = replace(run, finished_at=self._clock(), worked_until=None, diary=review.diary, summary=summary)
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
