"""Fakes of our own ports, for unit tests. They keep the same promises as the real
adapters (conditional apply, one ledger row per change, scoping by user_id)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta

from memorybot.core.prompting.decisions import decide_per_record
from memorybot.core.record.changes import Change, LedgerEntry, NightlyRun
from memorybot.core.record.domain import (
    CHANGE_ACTIONS,
    GLOBAL_SCOPE,
    JST,
    NIGHTLY_MAX_DURATION,
    REMEMBER_CLAIM_LEASE,
    Action,
    Actor,
    Decision,
    Memory,
    MemoryDraft,
    Message,
    Owner,
    PromptMessage,
    Speaker,
    Verdict,
    jst_day,
    snowflake_at,
)
from memorybot.core.record.person import Person, PersonCheck
from memorybot.core.record.ports import (
    ConflictError,
    MemoryStore,
    ModelError,
    MoveBlocked,
    PersonRefused,
    RollbackClaim,
)
from memorybot.core.rights.servers import ChangeRow, Figures, Refused, ServerSettings

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


class Clock:
    """A settable clock; each call moves it on by one millisecond so times are distinct."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            self.now += timedelta(milliseconds=1)
            return self.now


class FakePeopleStore:
    """``ports.PeopleStore`` in memory; its ledger rows go to the memory store's ledger (one table deployed)."""

    def __init__(self, ledger_to: FakeMemoryStore | None = None) -> None:
        self.people: dict[str, Person] = {}
        self.ledger_to = ledger_to
        self.jobs: dict[tuple[str, str], str] = {}  # the running forget-all job per (person, scope)
        self._lock = threading.RLock()

    def get(self, user_id: str) -> Person:
        return self.people.get(user_id, Person(user_id))

    def allows(self, check: PersonCheck | None) -> bool:
        return check is None or check.allows(self.get(check.user_id))

    def _set(self, user_id: str, **changes) -> None:
        self.people[user_id] = dataclasses.replace(self.get(user_id), **changes)

    def _row(self, entry: LedgerEntry) -> None:
        if self.ledger_to is not None:
            self.ledger_to.record(entry)

    def pause(self, user_id, entry):
        with self._lock:
            if self.get(user_id).paused:
                return False
            self._set(user_id, paused_at=entry.at)
            self._row(entry)
            return True

    def resume(self, user_id, entry):
        with self._lock:
            if not self.get(user_id).paused:
                return False
            self._set(user_id, paused_at=None, resumed_at=entry.at)
            self._row(entry)
            return True

    def claim_notice(self, user_id, scope, check=None):
        with self._lock:
            person = self.get(user_id)
            if scope in person.noticed or (check is not None and not check.allows(person)):
                return False
            self._set(user_id, noticed=person.noticed | {scope})
            return True

    def release_notice(self, user_id, scope):
        with self._lock:
            self._set(user_id, noticed=self.get(user_id).noticed - {scope})

    def start_forget_all(self, user_id, scope, at, job_id, stale_before):
        with self._lock:
            person = self.get(user_id)
            running = self.jobs.get((user_id, scope))
            if scope in person.forgetting and running != job_id and not person.forgot_all_in(scope) < stale_before:
                return False
            self.jobs[(user_id, scope)] = job_id
            stamps = dict(person.forgot_all_at) | {scope: at}
            done = tuple((k, v) for k, v in person.forgot_all_done if k != scope)
            self._set(
                user_id,
                forgot_all_at=tuple(sorted(stamps.items())),
                forgot_all_done=done,
                forgetting=person.forgetting | {scope},
            )
            return True

    def finish_forget_all(self, user_id, scope, started, at):
        with self._lock:
            person = self.get(user_id)
            if person.forgot_all_in(scope) != started:
                return False
            done = dict(person.forgot_all_done) | {scope: at}
            self._set(user_id, forgot_all_done=tuple(sorted(done.items())), forgetting=person.forgetting - {scope})
            return True

    def set_receipts(self, user_id, enabled):
        with self._lock:
            if self.get(user_id).receipts is enabled:
                return False
            self._set(user_id, receipts=enabled)
            return True

    def erased(self, user_id, at):
        with self._lock:
            self.people[user_id] = Person(user_id, erased_at=at)


class FakeMemoryStore(MemoryStore):
    """Every role of ``ports.MemoryStore`` in memory, as the DynamoDB store implements them."""

    def __init__(self, clock: Callable[[], datetime] | None = None, people: FakePeopleStore | None = None) -> None:
        self.rows: dict[tuple[Owner, str], Memory] = {}
        self.ledger: list[LedgerEntry] = []
        self.forgotten: dict[Owner, set[str]] = {}  # as the real store: recorded with each forget
        self.selection_index_erased: set[Owner] = set()  # owners whose erasure removed the index
        self.overnight_notes: dict[Owner, set[str]] = {}  # what the night changed, until told
        self.clock = clock or Clock()
        self._lock = threading.RLock()  # of() is read inside its own locked reads
        self.fail_apply: Callable[[Change], bool] = lambda change: False
        self.whole_profile_reads = 0
        self.people = people  # whose records a change's check reads (None: every check passes)
        self.markers: set[tuple[Owner, str]] = set()  # add_once's keys
        # "Remember this" claims: (owner, message id) -> (claim, when, learned)
        self.message_claims: dict[tuple[Owner, str], tuple[str, datetime, bool]] = {}
        self.zone = JST  # the deployment's time zone: when a memory's end comes (``ended``)

    # helpers for tests
    def seed(self, *memories: Memory) -> None:
        for m in memories:
            self.rows[(m.owner, m.memory_id)] = m

    def of(self, who: Owner | str) -> list[Memory]:
        """The owner's memories (a bare user id means the global scope), newest first."""
        owner = who if isinstance(who, Owner) else Owner(GLOBAL_SCOPE, who)
        with self._lock:  # a night's speakers write from their threads: never iterate while one does
            rows = list(self.rows.items())
        return sorted((m for (o, _), m in rows if o == owner), key=lambda m: m.updated_at, reverse=True)

    def changes(self) -> list[LedgerEntry]:
        return [e for e in self.ledger if e.action is not Action.READ]

    # the port
    def read_profile(self, owner: Owner, *, actor, reason, limit, run_id=None):
        assert isinstance(owner, Owner), "profiles are read by Owner (scope and user)"
        with self._lock:
            profile = self.of(owner)[:limit]
            self.ledger.append(
                LedgerEntry(
                    owner.user_id,
                    Action.READ,
                    actor,
                    reason,
                    self.clock(),
                    tuple(m.memory_id for m in profile),
                    run_id=run_id,
                    scope=owner.scope,
                )
            )
            return profile

    def read_selected(self, owner: Owner, choose, *, actor, reason, run_id=None, unused_if=None, entry_id=""):
        assert isinstance(owner, Owner), "profiles are read by Owner (scope and user)"
        self.whole_profile_reads += 1
        profile = self.of(owner)
        if unused_if is not None and unused_if():
            return []
        chosen = choose(profile)
        self.log_read(
            owner, tuple(m.memory_id for m in chosen), actor=actor, reason=reason, run_id=run_id, entry_id=entry_id
        )
        return chosen

    def set_embedding(self, memory, embedding):
        with self._lock:
            key = (memory.owner, memory.memory_id)
            if self.rows.get(key) != memory:
                return False
            self.rows[key] = dataclasses.replace(self.rows[key], embedding=embedding)
            return True

    def without_embedding(self, model, limit, *, start=""):
        """In (owner key, memory id) order, as a table scan would go, ``limit`` at a time."""
        ordered = sorted(self.rows.values(), key=lambda m: (m.owner.key, m.memory_id))
        after = [m for m in ordered if start == "" or (m.owner.key, m.memory_id) > tuple(json.loads(start))]
        found = [m for m in after if m.embedding is None or m.embedding.model != model][:limit]
        if len(found) < limit:
            return found, ""
        return found, json.dumps([found[-1].owner.key, found[-1].memory_id])

    def log_read(self, owner: Owner, memory_ids, *, actor, reason, run_id=None, entry_id=""):
        with self._lock:
            self.ledger.append(
                LedgerEntry(
                    owner.user_id,
                    Action.READ,
                    actor,
                    reason,
                    self.clock(),
                    tuple(memory_ids),
                    run_id=run_id,
                    scope=owner.scope,
                    **({"entry_id": entry_id} if entry_id else {}),
                )
            )

    def get(self, owner: Owner, memory_id):
        assert isinstance(owner, Owner), "memories are read by Owner (scope and user)"
        return self.rows.get((owner, memory_id))

    def apply(
        self, change: Change, *, actor, run_id=None, ledger_action=None, redacted=False, check=None, ledger_scope=None
    ):
        with self._lock:
            if self.fail_apply(change):
                raise RuntimeError("injected store failure")
            if self.people is not None and not self.people.allows(check):
                raise PersonRefused(change.memory_id)
            key = (change.owner, change.memory_id)
            if self.rows.get(key) != change.before:
                raise ConflictError(change.memory_id)
            if change.moves:  # as the real store: the id must be free where it goes
                if (change.after.owner, change.memory_id) in self.rows:
                    raise MoveBlocked(change.memory_id)
                del self.rows[key]
                key = (change.after.owner, change.memory_id)
            if change.after is None:
                del self.rows[key]
            elif change.after.reviewed_at is not None:  # a write starts its review place afresh
                self.rows[key] = dataclasses.replace(change.after, reviewed_at=None)
            else:
                self.rows[key] = change.after
            entry = LedgerEntry(
                change.user_id,
                Action(ledger_action) if ledger_action else change.action,
                actor,
                change.reason,
                self.clock(),
                (change.memory_id,),
                None if redacted else change.before,
                None if redacted else change.after,
                run_id,
                scope=ledger_scope or change.owner.scope,
                sources=(change.after or change.before).sources,
                redacted=redacted,
            )
            self.ledger.append(entry)
            if change.action is Action.DELETE and entry.actor is Actor.COMMAND and entry.sources:
                self.forgotten.setdefault(change.owner, set()).update(ref.message_id for ref in entry.sources)
            return entry

    def add_once(self, memory: Memory, once, *, actor, reason, import_id=None, check=None):
        with self._lock:
            if self.people is not None and not self.people.allows(check):
                raise PersonRefused(memory.memory_id)
            if (memory.owner, once) in self.markers:
                return None
            if (memory.owner, memory.memory_id) in self.rows:
                raise ConflictError(memory.memory_id)
            self.rows[(memory.owner, memory.memory_id)] = memory
            self.markers.add((memory.owner, once))
            entry = LedgerEntry(
                memory.user_id,
                Action.ADD,
                actor,
                reason,
                self.clock(),
                (memory.memory_id,),
                None,
                memory,
                scope=memory.scope,
                sources=memory.sources,
                import_id=import_id,
            )
            self.ledger.append(entry)
            return entry

    def has_marker(self, owner: Owner, once):
        return (owner, once) in self.markers

    def claim_message(self, owner: Owner, message_id, claim, now):
        with self._lock:
            found = self.message_claims.get((owner, message_id))
            if found is not None and (found[2] or found[1] >= now - REMEMBER_CLAIM_LEASE):
                return False
            self.message_claims[(owner, message_id)] = (claim, now, False)
            return True

    def settle_message(self, owner: Owner, message_id, claim, *, learned):
        with self._lock:
            found = self.message_claims.get((owner, message_id))
            if found is None or found[0] != claim or found[2]:
                return
            if learned:
                self.message_claims[(owner, message_id)] = (claim, found[1], True)
            else:
                del self.message_claims[(owner, message_id)]

    def take_back(self, added: LedgerEntry, once, *, reason):
        memory = added.after
        with self._lock:
            if self.rows.get((memory.owner, memory.memory_id)) != memory:
                return False
            del self.rows[(memory.owner, memory.memory_id)]
            self.markers.discard((memory.owner, once))
            self.ledger.append(
                LedgerEntry(
                    memory.user_id,
                    Action.DELETE,
                    Actor.IMPORT,
                    reason,
                    self.clock(),
                    (memory.memory_id,),
                    memory,
                    None,
                    scope=memory.scope,
                    import_id=added.import_id,
                )
            )
            return True

    def stale(self, updated_before, limit):
        with self._lock:
            rows = list(self.rows.values())
        old = sorted(
            (m for m in rows if m.updated_at < updated_before),
            key=lambda m: (m.review_after, m.owner.key, m.memory_id),
        )
        return old[:limit]

    def ended(self, now, limit):
        zone = self.zone
        with self._lock:
            rows = list(self.rows.values())
        ended = [m for m in rows if m.valid_until is not None and m.ends_at(zone) <= now]
        untouched = [m for m in ended if m.review_after < m.ends_at(zone)]
        return sorted(untouched, key=lambda m: (m.ends_at(zone), m.owner.key, m.memory_id))[:limit]

    def mark_reviewed(self, memory, at):
        with self._lock:
            key = (memory.owner, memory.memory_id)
            current = self.rows.get(key)
            if current is not None and current == memory:
                self.rows[key] = dataclasses.replace(current, reviewed_at=at)

    def ledger_for_run(self, run_id):
        return sorted((e for e in self.ledger if e.run_id == run_id), key=lambda e: e.at, reverse=True)

    def ledger_for(self, owner: Owner, limit=100, *, since=None, until=None):
        rows = [e for e in self.ledger if e.owner == owner]
        rows = [e for e in rows if (since is None or e.at >= since) and (until is None or e.at <= until)]
        return sorted(rows, key=lambda e: e.at, reverse=True)[:limit]

    def changes_of(self, owner: Owner, limit, *, older_than=""):
        rows = [e for e in self.ledger if e.owner == owner and e.action in CHANGE_ACTIONS]
        rows = [e for e in rows if not older_than or e.key < older_than]
        return sorted(rows, key=lambda e: e.key, reverse=True)[:limit]

    def ledger_entry(self, owner: Owner, key):
        return next((e for e in self.ledger if e.owner == owner and e.key == key), None)

    def forgotten_sources(self, owner: Owner):
        return frozenset(self.forgotten.get(owner, ()))

    def note_overnight(self, owner: Owner, memory_ids):
        with self._lock:
            if memory_ids:
                self.overnight_notes.setdefault(owner, set()).update(memory_ids)

    def overnight(self, owner: Owner):
        return frozenset(self.overnight_notes.get(owner, ()))

    def clear_overnight(self, owner: Owner, seen=None):
        with self._lock:
            note = self.overnight_notes.get(owner)
            if not note or (seen is not None and note != set(seen)):
                return False
            del self.overnight_notes[owner]
            return True

    def erase_kept_beside(self, owner: Owner):
        with self._lock:
            self.forgotten.pop(owner, None)
            self.selection_index_erased.add(owner)  # this fake ranks its own records: it keeps no index

    def erase_unreadable(self, owner: Owner, *, actor, reason):
        return 0, 0  # every record of the fake is a Memory: readable

    def owners_of(self, user_id):
        found = (
            {o for (o, _) in self.rows if o.user_id == user_id}
            | {e.owner for e in self.ledger if e.user_id == user_id}
            | {o for o in self.forgotten if o.user_id == user_id}
        )
        return sorted(found, key=lambda o: o.key)

    def record(self, entry):
        with self._lock:
            self.ledger.append(entry)

    def redact(self, entry):
        with self._lock:
            self.ledger = [
                dataclasses.replace(e, before=None, after=None, redacted=True) if e.entry_id == entry.entry_id else e
                for e in self.ledger
            ]


class FakeMessageStore:
    def __init__(self, people: FakePeopleStore | None = None) -> None:
        self.rows: dict[tuple[str, str], Message] = {}
        self.people = people

    def put(self, message: Message, *, check=None) -> bool:
        if self.people is not None and not self.people.allows(check):
            raise PersonRefused(message.message_id)
        key = (message.channel_id, message.message_id)
        if key in self.rows:
            return False
        self.rows[key] = message
        return True

    def recent(self, channel_id, limit, *, up_to=None):
        mine = sorted(
            (
                m
                for (c, _), m in self.rows.items()
                if c == channel_id and (up_to is None or int(m.message_id) <= int(up_to))
            ),
            key=lambda m: int(m.message_id),
        )
        return mine[-limit:] if limit else []

    def conversation(self, channel_id, user_id, limit, *, up_to=None):
        return (
            [m for m in self.recent(channel_id, len(self.rows) + 1, up_to=up_to) if m.conversation_of == user_id][
                -limit:
            ]
            if limit
            else []
        )

    def between(self, start, end):
        return sorted((m for m in self.rows.values() if start <= m.created_at < end), key=lambda m: int(m.message_id))

    def of_conversation(self, user_id, refs):
        found = [self.rows.get((c, m)) for c, m in refs]
        return sorted(
            (m for m in found if m is not None and m.conversation_of == user_id), key=lambda m: int(m.message_id)
        )

    def of_person(self, user_id):
        return sorted(
            (m for m in self.rows.values() if m.author_id == user_id or (m.is_bot and m.conversation_of == user_id)),
            key=lambda m: int(m.message_id),
        )

    def delete(self, message):
        self.rows.pop((message.channel_id, message.message_id), None)


class FakeRunStore:
    def __init__(self) -> None:
        self.runs: dict[int, NightlyRun] = {}
        self.days: set[str] = set()
        self.leases: dict[int, tuple[str, datetime]] = {}  # run id -> (owner, until)
        self.rollback_rows: list[LedgerEntry] = []  # the rollbacks' own ledger rows (memory_log when deployed)
        self.marks: dict[tuple[int, str], dict] = {}
        self._lock = threading.Lock()

    def step_mark(self, run_id, name, kind):
        stored = self.marks.get((run_id, name))  # kept as the JSON the real store keeps
        return None if stored is None else kind.from_json(stored)

    def mark_step(self, run_id, name, mark):
        with self._lock:
            stored = self.marks.setdefault((run_id, name), json.loads(json.dumps(mark.to_json())))
        return type(mark).from_json(stored)

    def claim(self, day_label, started_at, hold=NIGHTLY_MAX_DURATION):
        with self._lock:
            until = started_at + hold
            if day_label in self.days:
                run = next(r for r in self.runs.values() if r.day_label == day_label)
                if run.finished_at or run.rolled_back or run.in_progress(started_at):
                    return None
                self.runs[run.run_id] = run = dataclasses.replace(run, worked_until=until)
                return run
            self.days.add(day_label)
            run = NightlyRun(max(self.runs, default=0) + 1, day_label, started_at, worked_until=until)
            self.runs[run.run_id] = run
            return run

    def release(self, run_id):
        with self._lock:
            self.runs[run_id] = dataclasses.replace(self.runs[run_id], worked_until=None)

    def finish(self, run):
        with self._lock:
            self.runs[run.run_id] = dataclasses.replace(run, worked_until=None) if run.finished_at else run

    def get(self, run_id):
        return self.runs.get(run_id)

    def latest(self):
        return self.runs[max(self.runs)] if self.runs else None

    def claim_rollback(self, run_id, owner, now, lease):
        with self._lock:
            run = self.runs.get(run_id)
            if run is None:
                return RollbackClaim.MISSING
            if run.rolled_back:
                return RollbackClaim.DONE
            held = self.leases.get(run_id)
            if held and held[0] != owner and held[1] > now:
                return RollbackClaim.BUSY
            self.leases[run_id] = (owner, now + lease)
            return RollbackClaim.CLAIMED

    def mark_rolled_back(self, run_id, owner, entry=None, counts=None):
        with self._lock:
            run = self.runs[run_id]
            held = self.leases.get(run_id)
            if run.rolled_back or not held or held[0] != owner:
                return False
            del self.leases[run_id]
            at = entry.at if entry else None
            self.runs[run_id] = dataclasses.replace(
                run, rolled_back=True, rolled_back_at=at, rollback_counts=counts or {}
            )
            if entry is not None:
                self.rollback_rows.append(entry)
            return True

    def release_rollback(self, run_id, owner):
        with self._lock:
            if self.leases.get(run_id, ("",))[0] == owner:
                del self.leases[run_id]


class ScriptedJev:
    """A decision model whose answers tests set; ``fail`` names questions that raise."""

    def __init__(
        self, worth=0.9, verdicts: dict[str, object] | None = None, add=0.9, review: dict[str, object] | None = None
    ):
        self.worth_answer = worth
        self.verdicts = verdicts or {}
        self.default_verdict: object = Verdict.KEEP
        self.add_answer = add
        self.reviews = review or {}
        self.default_review: object = Verdict.KEEP
        self.fail: set[str] = set()
        self.calls: list[tuple[str, object]] = []
        self._lock = threading.Lock()

    def _record(self, question, subject):
        with self._lock:
            self.calls.append((question, subject))
        if question in self.fail:
            raise ModelError(f"injected failure: {question}")

    def worth(self, exchange):
        self._record("worth", exchange)
        return self.worth_answer

    def decide(self, exchange, memories, early=None):
        """The per-record questions behind the one decision (as a Jev service without /decide)."""
        return decide_per_record(self, exchange, memories, early)

    def verdict(self, exchange, memory):
        self._record("verdict", memory.memory_id)
        if memory.memory_id in self.fail:
            raise ModelError("injected failure for one record")
        return self.verdicts.get(memory.memory_id, self.default_verdict)

    def add(self, exchange, verdicts):
        self._record("add", tuple((m.memory_id, v) for m, v in verdicts))
        return self.add_answer

    def review(self, memory):
        self._record("review", memory.memory_id)
        if memory.memory_id in self.fail:
            raise ModelError("injected failure for one record")
        return self.reviews.get(memory.memory_id, self.default_review)

    def asked(self, question: str) -> list[object]:
        return [s for q, s in self.calls if q == question]


class OneDecisionJev(ScriptedJev):
    """Answers every memory and the add in one call, as the LLM backends and Jev's /decide do
    (``fail`` may name "decide")."""

    def decide(self, exchange, memories, early=None):
        self._record("decide", tuple(m.memory_id for m in memories))
        verdicts = {m.memory_id: self.verdicts.get(m.memory_id, self.default_verdict) for m in memories}
        return Decision(verdicts, self.add_answer)


class ScriptedChat:
    """``texts``: by the rewritten memory's id (None: the new memory), a text (no end) or a whole
    ``MemoryDraft`` (a text and its end)."""

    def __init__(
        self,
        texts: dict[str | None, str | MemoryDraft] | None = None,
        reply="ok",
        diary="今日は穏やかな一日だった。",
    ):
        self.texts = texts or {}
        self.reply_answer = reply
        self.diary_answer = diary
        self.diary_languages: list[str] = []  # the language each diary was asked in
        self.fail: set[str] = set()
        self.seen: list[tuple[str, object]] = []
        self._lock = threading.Lock()

    def _record(self, what, subject):
        with self._lock:
            self.seen.append((what, subject))
        if what in self.fail:
            raise ModelError(f"injected failure: {what}")

    def write_memory(self, exchange, current):
        self._record("write_memory", (exchange, current))
        key = current.memory_id if current else None
        written = self.texts.get(key, f"rewritten {current.memory_id}" if current else "new fact")
        return written if isinstance(written, MemoryDraft) else MemoryDraft(written)

    def write_reply(self, prompt: Sequence[PromptMessage]):
        self._record("write_reply", list(prompt))
        return self.reply_answer

    def write_diary(self, transcript, language="ja"):
        self._record("write_diary", transcript)
        self.diary_languages.append(language)
        return self.diary_answer


_seq = itertools.count(1)


def message(
    author_id: str,
    content: str,
    *,
    at: datetime = T0,
    channel="c1",
    name=None,
    bot=False,
    to: str | None = None,
    scope: str = GLOBAL_SCOPE,
) -> Message:
    """A line of the channel log. A person's line is part of their own conversation with the bot;
    a bot line belongs to the conversation of ``to`` (None: no one's, like channel history)."""
    conversation_of = (to or "") if bot else (author_id if to is None else to)
    return Message(
        channel,
        snowflake_at(at, next(_seq)),
        author_id,
        name or f"user{author_id}",
        content,
        bot,
        scope=scope,
        conversation_of=conversation_of,
    )


def memory(
    user_id: str, memory_id: str, text: str = "likes tea", *, at: datetime = T0, scope: str = GLOBAL_SCOPE
) -> Memory:
    return Memory(user_id, memory_id, text, at, at, scope=scope)


def owner(user_id: str, scope: str = GLOBAL_SCOPE) -> Owner:
    return Owner(scope, user_id)


def speaker(user_id: str, name: str | None = None) -> Speaker:
    return Speaker(user_id, name or f"user{user_id}")


__all__ = [
    "Clock",
    "FakeMemoryStore",
    "FakeMessageStore",
    "FakePeopleStore",
    "FakeRunStore",
    "ScriptedJev",
    "ScriptedChat",
    "message",
    "memory",
    "owner",
    "speaker",
    "T0",
    "jst_day",
]


class FakeServerStore:
    """The servers' settings and figures in memory (``core.rights.servers.ServerStore``): the defaults
    until a change, the change's ledger rows, and the counters as plain numbers."""

    def __init__(self) -> None:
        self.settings: dict[str, ServerSettings] = {}
        self.rows: list[ChangeRow] = []
        self.turns: dict[tuple[str, str, date], int] = {}
        self.counted: list[tuple[str, date, int, int]] = []
        self.people: dict[str, set[str]] = {}
        self.diary_errors: dict[str, int] = {}

    def get(self, guild_id: str):
        return self.settings.get(guild_id) or ServerSettings(guild_id)

    def get_many(self, guild_ids):
        return {g: self.get(g) for g in guild_ids}

    def change(self, before, after, row) -> bool:
        if self.get(before.guild_id).version != before.version:
            return False
        self.settings[after.guild_id] = dataclasses.replace(after, version=before.version + 1)
        self.rows.append(row)
        return True

    def changes(self, guild_id: str, limit: int):
        return [r for r in reversed(self.rows) if r.guild_id == guild_id][:limit]

    def take_turn(self, guild_id: str, user_id: str, day, limit: int):
        key = (guild_id, user_id, day)
        if limit and self.turns.get(key, 0) >= limit:
            return Refused.DAILY_LIMIT
        self.turns[key] = self.turns.get(key, 0) + 1
        return None

    def count(self, guild_id: str, day, *, model_requests: int = 0, memories: int = 0) -> None:
        self.counted.append((guild_id, day, model_requests, memories))

    def count_person(self, guild_id: str, user_id: str, *, has_memories: bool) -> None:
        people = self.people.setdefault(guild_id, set())
        (people.add if has_memories else people.discard)(user_id)

    def figures(self, guild_id: str, today):
        memories = sum(m for g, _, _, m in self.counted if g == guild_id)
        return Figures(len(self.people.get(guild_id, ())), memories, ())

    def diary_failed(self, guild_id: str, code: int) -> None:
        self.diary_errors[guild_id] = code
