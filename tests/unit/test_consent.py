"""The person's say over being remembered, on the fakes of our ports: the switch in extraction
and in the reply, the first-use notice, and the markers that make erasure and forget-all final."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from fakes import (
    T0,
    Clock,
    FakeMemoryStore,
    FakeMessageStore,
    FakePeopleStore,
    FakeRunStore,
    ScriptedChat,
    ScriptedJev,
    memory,
    message,
    owner,
    speaker,
)
from memorybot.core.record.catalog import text
from memorybot.core.record.changes import Change, LedgerEntry, NightlyRun
from memorybot.core.record.domain import Action, Actor, snowflake_at
from memorybot.core.record.jobs import ReplyJob
from memorybot.core.record.person import PERSON_SCOPE, Basis, Person, PersonCheck
from memorybot.core.record.ports import PersonRefused
from memorybot.core.rights import commands, consent
from memorybot.core.rights.erasure import Erasure
from memorybot.core.rights.rollback import Rollback
from memorybot.core.turn import conversation, hearing
from memorybot.core.turn.extraction import Extractor, Outcome
from memorybot.core.turn.reply import ReplyWriter


def stores(clock: Clock | None = None) -> tuple[FakePeopleStore, FakeMemoryStore, FakeMessageStore]:
    people = FakePeopleStore()
    memories = FakeMemoryStore(clock or Clock(), people=people)
    people.ledger_to = memories
    return people, memories, FakeMessageStore(people=people)


def row(user_id: str, action: Action, at) -> LedgerEntry:
    return LedgerEntry(user_id, action, Actor.COMMAND, action.value, at, scope=PERSON_SCOPE)


# ---- the rule, stated once


def test_the_check_refuses_exactly_what_the_record_forbids():
    at = T0 + timedelta(hours=1)
    earlier, later = at - timedelta(seconds=1), at + timedelta(seconds=1)
    store, learn = PersonCheck("a", at, Basis.STORE), PersonCheck("a", at, Basis.LEARN)
    restore = PersonCheck("a", at, Basis.RESTORE, "guild:1")
    assert all(c.allows(Person("a")) for c in (store, learn, restore))
    erased_after = Person("a", erased_at=later)
    assert not any(c.allows(erased_after) for c in (store, learn, restore))
    assert all(c.allows(Person("a", erased_at=earlier)) for c in (store, learn, restore))
    paused = Person("a", paused_at=earlier)
    assert store.allows(paused) and restore.allows(paused) and not learn.allows(paused)
    assert not learn.allows(Person("a", resumed_at=later)) and learn.allows(Person("a", resumed_at=earlier))
    forgot = Person("a", forgot_all_at=(("guild:1", later),))
    assert not restore.allows(forgot) and learn.allows(forgot)
    assert PersonCheck("a", at, Basis.RESTORE, "guild:2").allows(forgot)  # another scope's forget-all


def test_learnable_drops_everything_while_paused_and_what_came_before_a_resume_or_an_erasure():
    lines = [message("a", f"line {n}", at=T0 + timedelta(minutes=n)) for n in range(4)]
    assert Person("a").learnable(lines) == lines
    assert Person("a", paused_at=T0).learnable(lines) == []
    assert Person("a", resumed_at=T0 + timedelta(minutes=1, seconds=30)).learnable(lines) == lines[2:]
    assert Person("a", erased_at=T0 + timedelta(minutes=2, seconds=30)).learnable(lines) == lines[3:]


@pytest.mark.parametrize(
    "locale, language", [("ja", "ja"), ("JA", "ja"), ("en-US", "en"), ("en-GB", "en"), ("fr", "en"), ("", "en")]
)
def test_the_notice_speaks_the_persons_language_and_names_the_three_commands(locale, language):
    notice = consent.notice_text(locale)
    assert notice == text("notice", language)
    assert all(name in notice for name in ("/memory show", "/memory pause", "/memory forget-all"))


# ---- extraction: paused, resumed, and a pause while the models think


def exchange_lines(user: str, *texts: str, start=T0):
    return [message(user, t, at=start + timedelta(minutes=n)) for n, t in enumerate(texts)]


def test_a_paused_person_is_not_asked_about_and_nothing_is_read_or_written():
    people, memories, _ = stores()
    people.pause("a", row("a", Action.PAUSE, T0 + timedelta(hours=1)))
    jev, chat = ScriptedJev(), ScriptedChat()
    result = Extractor(memories, jev, chat, people=people).run(
        speaker("a"), "global", exchange_lines("a", "I like tea")
    )
    assert result.outcome is Outcome.PAUSED
    assert jev.calls == [] and chat.seen == [] and memories.ledger[-1].action is Action.PAUSE


def test_after_a_resume_only_what_was_said_after_it_teaches():
    people, memories, _ = stores()
    lines = exchange_lines("a", "I like tea", "I like coffee")
    people.pause("a", row("a", Action.PAUSE, T0 - timedelta(minutes=1)))
    people.resume("a", row("a", Action.RESUME, T0 + timedelta(seconds=30)))
    jev = ScriptedJev()
    result = Extractor(memories, jev, ScriptedChat(), people=people).run(speaker("a"), "global", lines)
    assert result.added and [e.speaker_said() for e in jev.asked("worth")] == [["I like coffee"]]
    [added] = memories.of(owner("a"))
    assert [ref.message_id for ref in added.sources] == [lines[1].message_id]


def test_a_pause_while_the_models_think_refuses_the_write():
    people, memories, _ = stores()

    class PausingJev(ScriptedJev):
        def worth(self, exchange):
            people.pause("a", row("a", Action.PAUSE, T0 + timedelta(hours=1)))
            return super().worth(exchange)

    result = Extractor(memories, PausingJev(), ScriptedChat(), people=people).run(
        speaker("a"), "global", exchange_lines("a", "I like tea")
    )
    assert result.added == [] and result.conflicts == 1
    assert memories.of(owner("a")) == [] and all(e.action is not Action.ADD for e in memories.ledger)


# ---- the reply: memories unused while paused, the notice once per scope, no hand-off while paused


class Discord:
    def __init__(self, fail_follow_up: bool = False) -> None:
        self.edits: list[str] = []
        self.follow_ups: list[tuple[str, str]] = []
        self.fail_follow_up = fail_follow_up

    def edit_original(self, application_id, token, content, components=()):
        self.edits.append(content)
        return snowflake_at(T0 + timedelta(seconds=len(self.edits)), len(self.edits))

    def follow_up(self, application_id, token, content, components=()):
        if self.fail_follow_up:
            raise RuntimeError("discord down")
        self.follow_ups.append((token, content))
        return "1"


class Invoker:
    def __init__(self) -> None:
        self.jobs: list = []

    def invoke(self, job) -> None:
        self.jobs.append(job)


class Deps:
    def __init__(self, *, fail_follow_up: bool = False) -> None:
        self.people_store, self.memory_store, self.message_store = stores()
        self.chat = ScriptedChat(reply="hello")
        self.reply_writer = ReplyWriter(self.memory_store, self.chat, self.people_store)
        self.discord = Discord(fail_follow_up)
        self.invoker = Invoker()


_turns = iter(range(1, 10_000))


def turn(deps: Deps, user: str = "100", scope: str = "guild:1", locale: str = "") -> dict:
    n = next(_turns)
    job = ReplyJob(snowflake_at(T0, n), f"token-{n}", "900", "700", user, "someone", scope, locale)
    hearing.hear(deps, job, "hello there")
    deps.invoker.jobs.clear()
    return conversation.answer(deps, job, fetch_history=False, give_up=lambda: True)


def test_the_notice_is_given_once_per_person_and_scope_in_their_language():
    deps = Deps()
    turn(deps, locale="ja")
    turn(deps, locale="ja")
    turn(deps, scope="dm", locale="ja")
    turn(deps, user="200")
    assert [sent for _, sent in deps.discord.follow_ups] == [
        text("notice", "ja"),
        text("notice", "ja"),
        text("notice", "en"),
    ]
    assert deps.people_store.get("100").noticed == frozenset({"guild:1", "dm"})


def test_a_notice_that_could_not_be_sent_is_given_on_a_later_turn():
    deps = Deps(fail_follow_up=True)
    assert turn(deps)["status"] == "replied"  # the reply stands
    assert deps.people_store.get("100").noticed == frozenset()
    deps.discord.fail_follow_up = False
    turn(deps)
    assert len(deps.discord.follow_ups) == 1


def test_while_paused_the_reply_carries_no_memories_logs_no_read_and_hands_nothing_to_extraction():
    deps = Deps()
    deps.memory_store.seed(memory("100", "abcde", "likes tea", scope="guild:1"))
    turn(deps)
    assert "likes tea" in deps.chat.seen[-1][1][0].content and len(deps.invoker.jobs) == 1
    deps.people_store.pause("100", row("100", Action.PAUSE, T0 + timedelta(hours=1)))
    reads = len([e for e in deps.memory_store.ledger if e.action is Action.READ])
    answered = turn(deps)
    assert answered["learning"] == "paused" and deps.invoker.jobs == []
    assert "likes tea" not in deps.chat.seen[-1][1][0].content
    assert len([e for e in deps.memory_store.ledger if e.action is Action.READ]) == reads  # read, never used
    assert deps.memory_store.of(owner("100", "guild:1"))  # nothing deleted


def test_a_reply_for_a_person_erased_since_the_turn_began_is_not_stored_nor_learned_from():
    deps = Deps()
    n = next(_turns)
    job = ReplyJob(snowflake_at(T0, n), f"token-{n}", "900", "700", "100", "someone", "guild:1")
    hearing.hear(deps, job, "hello there")
    deps.invoker.jobs.clear()
    deps.people_store.erased("100", T0 + timedelta(minutes=5))
    answered = conversation.answer(deps, job, fetch_history=False, give_up=lambda: True)
    assert answered["stored"] is False and deps.invoker.jobs == [] and deps.discord.follow_ups == []
    assert [m for m in deps.message_store.rows.values() if m.is_bot] == []


# ---- final means final


def test_erasure_marks_the_person_first_and_erases_their_switch():
    clock = Clock(T0 + timedelta(hours=2))
    people, memories, messages = stores(clock)
    people.pause("a", row("a", Action.PAUSE, T0))
    people.claim_notice("a", "guild:1")
    memories.apply(Change(Action.ADD, None, memory("a", "abcde"), "seed"), actor=Actor.EXTRACTION)
    seen: list[Person] = []

    original = memories.read_profile

    def read_profile(o, **kw):
        seen.append(people.get("a"))  # the marker is already there when the deletes start
        return original(o, **kw)

    memories.read_profile = read_profile  # type: ignore[method-assign]
    result = Erasure(memories, messages, people, clock=clock).run("a")
    assert result.switch and seen and all(p.erased_at is not None for p in seen)
    assert people.get("a") == Person("a", erased_at=seen[0].erased_at)
    # After it, a write that started before it is refused; one that starts after it is not.
    late = PersonCheck("a", T0 + timedelta(hours=1), Basis.LEARN)
    with pytest.raises(PersonRefused):
        memories.apply(Change(Action.ADD, None, memory("a", "abcde"), "late"), actor=Actor.EXTRACTION, check=late)


def test_a_person_with_nothing_but_a_switch_is_found_by_erasure():
    people, memories, messages = stores()
    people.pause("a", row("a", Action.PAUSE, T0))
    assert Erasure(memories, messages, people).run("a").found
    assert not Erasure(memories, messages, people).run("nobody").found


def test_a_rollback_does_not_put_back_what_a_later_forget_all_forgot_in_that_scope():
    clock = Clock(T0 + timedelta(days=40))
    people, memories, _ = stores(clock)
    runs = FakeRunStore()
    decayed, elsewhere = memory("a", "abcde", scope="guild:1"), memory("a", "fghjk", scope="guild:2")
    for m in (decayed, elsewhere):
        memories.seed(m)
    runs.runs[1] = NightlyRun(1, "2027-01-01", clock(), finished_at=clock())
    for m in (decayed, elsewhere):
        memories.apply(Change(Action.DELETE, m, None, "decay"), actor=Actor.NIGHTLY, run_id=1)
    commands.forget_all(
        memories, owner("a", "guild:1"), people, clock=clock
    )  # nothing left there to delete: only the stamp
    # The preview says what the rollback will do: it reads the record the write's check reads.
    preview = Rollback(memories, runs, clock=clock, people=people).run(1, dry_run=True)
    assert preview.skipped == ["abcde"] and preview.reverted == ["fghjk"]
    assert Rollback(memories, runs, clock=clock).run(1, dry_run=True).reverted == ["fghjk", "abcde"]  # blind to it
    result = Rollback(memories, runs, clock=clock).run(1)
    assert result.skipped == ["abcde"] and result.reverted == ["fghjk"]
    assert memories.get(owner("a", "guild:1"), "abcde") is None
    assert memories.get(owner("a", "guild:2"), "fghjk") == elsewhere


def test_export_carries_the_switch_and_its_rows_apart_from_the_scopes():
    people, memories, _ = stores()
    people.pause("a", row("a", Action.PAUSE, T0))
    people.claim_notice("a", "guild:1")
    data = commands.export(memories, "a", people)
    assert data["scopes"] == []
    switch = data["memorySwitch"]
    assert switch["paused"] and switch["noticeGivenIn"] == ["guild:1"]
    assert [(r["action"], r["actor"]) for r in switch["ledger"]] == [("pause", "command")]
    json.dumps(data)


def test_an_import_running_when_the_person_is_erased_adds_nothing_for_them_after_it():
    from memorybot.core.record.domain import ScopeMode, utcnow
    from memorybot.core.rights.importing import Importer, parse_import

    people, memories, _ = stores()
    user, other = "111111111111111111", "222222222222222222"
    rows = [
        {"userId": who, "scope": "guild:900000000000000001", "text": text, "createdAt": "2026-03-01T10:00:00Z"}
        for who, text in ((user, "Plays the cello"), (other, "Keeps bees"))
    ]
    request = parse_import({"memories": rows}, now=utcnow())
    started = T0 + timedelta(hours=1)
    people.erased(user, started + timedelta(seconds=1))  # erased while the import runs
    result = Importer(memories, ScopeMode.GUILD, clock=lambda: started).run(request)
    assert result.imported == 1  # the other person's row only
    assert [m.user_id for m in memories.rows.values()] == [other]
