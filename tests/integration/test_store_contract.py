"""One contract, two implementations: the in-memory fakes the unit tests use and the DynamoDB
stores the functions use must keep the same promises, so a unit test on a fake proves
something about the real thing. Each test runs against both."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta

import pytest

from fakes import T0, Clock, FakeMemoryStore, FakeMessageStore, FakePeopleStore, memory, message, owner
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.adapters.dynamodb_messages import DynamoMessageStore
from memorybot.adapters.dynamodb_people import DynamoPeopleStore
from memorybot.core.record.changes import Change, LedgerEntry
from memorybot.core.record.domain import Action, Actor, Embedding, Owner, SourceRef
from memorybot.core.record.person import PERSON_SCOPE, Basis, Person, PersonCheck
from memorybot.core.record.ports import ConflictError, PersonRefused

IMPLEMENTATIONS = ("fake", "dynamodb")


@pytest.fixture(params=IMPLEMENTATIONS)
def memories(request):
    clock = Clock()
    if request.param == "fake":
        return FakeMemoryStore(clock)
    client, settings = request.getfixturevalue("dynamo")
    return DynamoMemoryStore(client, settings, clock=clock)


@pytest.fixture(params=IMPLEMENTATIONS)
def messages(request):
    if request.param == "fake":
        return FakeMessageStore()
    client, settings = request.getfixturevalue("dynamo")
    return DynamoMessageStore(client, settings)


def add(store, m, **kw):
    return store.apply(Change(Action.ADD, None, m, "add"), actor=Actor.EXTRACTION, **kw)


def sourced(m, *message_ids):
    return dataclasses.replace(m, sources=tuple(SourceRef("c1", i) for i in message_ids))


def changes(store, who):
    return [e for e in store.ledger_for(who) if e.action is not Action.READ]


def test_each_change_commits_with_exactly_one_ledger_row_holding_before_and_after(memories):
    m = memory("alice", "abcde", "likes tea")
    added = add(memories, m)
    later = dataclasses.replace(m, text="likes green tea", updated_at=m.updated_at + timedelta(minutes=1))
    updated = memories.apply(Change(Action.UPDATE, m, later, "update"), actor=Actor.EXTRACTION)
    deleted = memories.apply(Change(Action.DELETE, later, None, "forget"), actor=Actor.COMMAND)
    assert memories.get(owner("alice"), "abcde") is None
    assert changes(memories, owner("alice")) == [deleted, updated, added]  # newest first
    assert (added.before, added.after) == (None, m)
    assert (updated.before, updated.after) == (m, later)
    assert (deleted.before, deleted.after, deleted.actor) == (later, None, Actor.COMMAND)


def test_a_change_from_a_state_that_is_no_longer_stored_conflicts_and_logs_nothing(memories):
    m = add(memories, memory("alice", "abcde")).after
    stale = dataclasses.replace(m, text="something else")
    with pytest.raises(ConflictError):
        memories.apply(Change(Action.DELETE, stale, None, "x"), actor=Actor.EXTRACTION)
    with pytest.raises(ConflictError):
        add(memories, memory("alice", "abcde", "a second add of the same id"))
    assert memories.get(owner("alice"), "abcde") == m
    assert len(changes(memories, owner("alice"))) == 1


def test_owners_are_a_person_within_a_scope_and_never_see_each_other(memories):
    here, there, bob = owner("alice", "guild:1"), owner("alice", "guild:2"), owner("bob", "guild:1")
    add(memories, memory("alice", "abcde", "in server one", scope="guild:1"))
    add(memories, memory("alice", "abcde", "in server two", scope="guild:2"))  # the same id elsewhere
    add(memories, memory("bob", "bcdef", scope="guild:1"))
    assert [m.text for m in memories.read_profile(here, actor=Actor.REPLY, reason="t", limit=10)] == ["in server one"]
    assert [m.text for m in memories.read_profile(there, actor=Actor.REPLY, reason="t", limit=10)] == ["in server two"]
    assert memories.get(here, "bcdef") is None and memories.get(bob, "abcde") is None
    assert {e.owner for e in memories.ledger_for(here)} == {here}


def test_read_profile_is_newest_first_up_to_the_limit_and_logs_one_read_row(memories):
    for minute in range(4):
        add(memories, memory("alice", f"m{minute}222", f"fact {minute}", at=T0 + timedelta(minutes=minute)))
    profile = memories.read_profile(owner("alice"), actor=Actor.REPLY, reason="reply prompt", limit=3, run_id=7)
    assert [m.memory_id for m in profile] == ["m3222", "m2222", "m1222"]
    [read] = [e for e in memories.ledger_for(owner("alice")) if e.action is Action.READ]
    assert (read.actor, read.reason, read.memory_ids, read.run_id) == (
        Actor.REPLY,
        "reply prompt",
        ("m3222", "m2222", "m1222"),
        7,
    )


def test_stale_is_oldest_first_across_owners_up_to_the_limit(memories):
    old = T0 - timedelta(days=40)
    for n, (who, scope) in enumerate([("a", "guild:1"), ("b", "guild:2"), ("a", "dm"), ("c", "guild:1")]):
        add(memories, memory(who, f"s{n}222", at=old + timedelta(hours=n), scope=scope))
    add(memories, memory("a", "fresh", at=T0, scope="guild:1"))
    found = memories.stale(T0 - timedelta(days=30), 3)
    assert [(m.owner, m.memory_id) for m in found] == [
        (owner("a", "guild:1"), "s0222"),
        (owner("b", "guild:2"), "s1222"),
        (owner("a", "dm"), "s2222"),
    ]


def test_ledger_for_run_holds_only_that_runs_rows_newest_first(memories):
    first = add(memories, memory("a", "r1222"), run_id=1)
    add(memories, memory("a", "r2222"), run_id=2)
    second = add(memories, memory("b", "r3222", scope="guild:1"), run_id=1)
    assert memories.ledger_for_run(1) == [second, first]


def test_ledger_for_is_limited(memories):
    for n in range(5):
        add(memories, memory("a", f"l{n}222"))
    assert len(memories.ledger_for(owner("a"), limit=2)) == 2
    assert memories.ledger_for(owner("a"), limit=0) == []


def test_the_forgotten_sources_are_those_of_memories_deleted_by_command_of_that_owner_only(memories):
    assert memories.forgotten_sources(owner("a")) == frozenset()
    m = add(memories, sourced(memory("a", "f1222"), "101")).after
    memories.apply(Change(Action.DELETE, m, None, "jev"), actor=Actor.EXTRACTION)
    assert memories.forgotten_sources(owner("a")) == frozenset(), "only a person's own forget counts"
    m2 = add(memories, sourced(memory("a", "f2222"), "102", "103")).after
    forgot = memories.apply(Change(Action.DELETE, m2, None, "forget"), actor=Actor.COMMAND)
    assert memories.forgotten_sources(owner("a")) == {"102", "103"}
    assert memories.forgotten_sources(owner("a", "guild:9")) == frozenset()
    memories.redact(forgot)  # redacting the row keeps the ids: forgetting still sticks after it
    assert memories.forgotten_sources(owner("a")) == {"102", "103"}
    m3 = add(memories, sourced(memory("a", "f3222"), "103", "104")).after
    memories.apply(Change(Action.DELETE, m3, None, "forget"), actor=Actor.COMMAND)
    assert memories.forgotten_sources(owner("a")) == {"102", "103", "104"}


def test_the_record_of_forgotten_sources_is_found_by_the_persons_id_and_erased_with_them(memories):
    m = add(memories, sourced(memory("a", "f1222", scope="guild:1"), "101")).after
    memories.apply(Change(Action.DELETE, m, None, "forget"), actor=Actor.COMMAND)
    other = add(memories, sourced(memory("b", "f2222", scope="guild:1"), "201")).after
    memories.apply(Change(Action.DELETE, other, None, "forget"), actor=Actor.COMMAND)
    assert owner("a", "guild:1") in memories.owners_of("a")
    assert memories.read_profile(owner("a", "guild:1"), actor=Actor.COMMAND, reason="t", limit=None) == []
    memories.erase_kept_beside(owner("a", "guild:1"))
    assert memories.forgotten_sources(owner("a", "guild:1")) == frozenset()
    assert memories.forgotten_sources(owner("b", "guild:1")) == {"201"}  # only that person's
    memories.erase_kept_beside(owner("a", "guild:1"))  # nothing left: no error


def test_a_message_stored_twice_is_stored_once(messages):
    said = message("alice", "hello", channel="c1")
    assert messages.put(said) is True
    assert messages.put(dataclasses.replace(said, content="changed")) is False  # the first copy stands
    assert messages.recent("c1", 10) == [said]


def test_of_person_is_their_own_lines_and_every_reply_to_them_even_with_their_lines_gone(messages):
    at = iter(T0 + timedelta(seconds=n) for n in range(20))
    mine = message("a", "mine", at=next(at), channel="c1")
    to_me = message("bot", "to a", at=next(at), channel="c1", bot=True, to="a")
    to_me_elsewhere = message("bot", "to a in c2", at=next(at), channel="c2", bot=True, to="a")
    to_them = message("bot", "to b", at=next(at), channel="c1", bot=True, to="b")
    history = message("a", "said in the channel", at=next(at), channel="c3", to="")
    for m in (mine, to_me, to_me_elsewhere, to_them, history):
        messages.put(m)
    assert messages.of_person("a") == [mine, to_me, to_me_elsewhere, history]
    messages.delete(mine)
    messages.delete(history)
    assert messages.of_person("a") == [to_me, to_me_elsewhere]  # found by the person they answer
    assert messages.of_person("b") == [to_them]


def test_recent_is_the_channels_newest_oldest_first_up_to_an_id(messages):
    lines = [message(p, f"line {n}", at=T0 + timedelta(seconds=n), channel="c1") for n, p in enumerate("abcab")]
    for m in lines + [message("x", "elsewhere", at=T0, channel="c2")]:
        messages.put(m)
    assert messages.recent("c1", 3) == lines[2:]
    assert messages.recent("c1", 2, up_to=lines[2].message_id) == lines[1:3]


def test_conversation_is_one_persons_lines_and_the_bots_replies_to_them(messages):
    at = iter(T0 + timedelta(seconds=n) for n in range(20))
    mine = message("a", "mine", at=next(at), channel="c1")
    theirs = message("b", "theirs", at=next(at), channel="c1")
    to_me = message("bot", "to a", at=next(at), channel="c1", bot=True, to="a")
    to_them = message("bot", "to b", at=next(at), channel="c1", bot=True, to="b")
    history = message("a", "said in the channel", at=next(at), channel="c1", to="")
    later = message("a", "later", at=next(at), channel="c1")
    for m in (mine, theirs, to_me, to_them, history, later, message("a", "other channel", at=next(at), channel="c2")):
        messages.put(m)
    assert messages.conversation("c1", "a", 10) == [mine, to_me, later]
    assert messages.conversation("c1", "a", 10, up_to=to_me.message_id) == [mine, to_me]
    assert messages.conversation("c1", "a", 1) == [later]


def test_between_includes_the_start_and_excludes_the_end_across_channels(messages):
    inside = [message("a", "1", at=T0, channel="c1"), message("b", "2", at=T0 + timedelta(hours=23), channel="c2")]
    for m in inside + [message("a", "3", at=T0 + timedelta(days=1), channel="c1")]:
        messages.put(m)
    assert messages.between(T0, T0 + timedelta(days=1)) == inside


# ---- relevance selection: the whole profile, narrowed; vectors stored with the memory


def test_read_selected_loads_only_the_owners_profile_and_logs_exactly_the_chosen_ids(memories):
    for minute in range(12):
        add(memories, memory("alice", f"m{minute:02d}zz"[:5], f"fact {minute}", at=T0 + timedelta(minutes=minute)))
    add(memories, memory("alice", "other", "elsewhere", scope="guild:9"))
    add(memories, memory("bob", "bobby", "bob's fact"))
    seen: list[list[str]] = []

    def choose(profile):
        seen.append(sorted(m.memory_id for m in profile))
        return sorted((m for m in profile if m.text in ("fact 0", "fact 7")), key=lambda m: m.text, reverse=True)

    chosen = memories.read_selected(owner("alice"), choose, actor=Actor.REPLY, reason="reply prompt", run_id=3)
    assert seen == [sorted(f"m{minute:02d}zz"[:5] for minute in range(12))]  # all twelve, no one else's
    assert [m.text for m in chosen] == ["fact 7", "fact 0"]  # as choose ordered them
    [read] = [e for e in memories.ledger_for(owner("alice")) if e.action is Action.READ]
    assert (read.actor, read.reason, read.memory_ids, read.run_id) == (
        Actor.REPLY,
        "reply prompt",
        ("m07zz", "m00zz"),
        3,
    )


def test_a_vector_is_stored_compactly_with_its_model_and_read_back_close(memories):
    vector = tuple(x / 5.0 for x in (1.0, -2.0, 2.0, 0.0, -4.0))  # unit length
    m = dataclasses.replace(memory("alice", "vecto", "likes tea"), embedding=Embedding("model-a@5", vector))
    add(memories, m)
    [back] = memories.read_selected(owner("alice"), lambda p: p, actor=Actor.REPLY, reason="t")
    assert back.embedding is not None and back.embedding.model == "model-a@5"
    assert max(abs(a - b) for a, b in zip(back.embedding.vector, vector, strict=True)) < 0.01
    [entry] = changes(memories, owner("alice"))
    assert entry.after == m  # the ledger keeps the memory; the vector is derived from its text


def test_the_backfill_finds_memories_without_a_vector_of_the_model_and_sets_one_only_if_unchanged(memories):
    a = Embedding("model-a", (1.0, 0.0))
    add(memories, memory("alice", "nonee", "no vector"))
    add(memories, dataclasses.replace(memory("alice", "other", "another model's"), embedding=Embedding("old", (1.0,))))
    add(memories, dataclasses.replace(memory("bob", "fresh", "has one"), embedding=a))
    found, cursor = memories.without_embedding("model-a", 10)
    assert sorted(m.memory_id for m in found) == ["nonee", "other"] and cursor == ""
    first, cursor = memories.without_embedding("model-a", 1)
    assert len(first) == 1 and cursor
    rest, end = memories.without_embedding("model-a", 10, start=cursor)
    assert sorted(m.memory_id for m in first + rest) == ["nonee", "other"] and end == ""
    [nonee] = [m for m in found if m.memory_id == "nonee"]
    assert memories.set_embedding(nonee, a) is True
    stale = dataclasses.replace(nonee, text="changed meanwhile")
    assert memories.set_embedding(stale, a) is False
    assert [m.memory_id for m in memories.without_embedding("model-a", 10)[0]] == ["other"]
    assert memories.get(owner("alice"), "nonee").embedding.model == "model-a"
    assert not [e for e in memories.ledger_for(owner("alice")) if e.action is not Action.ADD]  # no ledger rows


# ---- add_once: the import's one conditional write per row


def imported(store, m, once="k1", **kw):
    return store.add_once(m, once, actor=Actor.IMPORT, reason="operator import", **kw)


def test_add_once_adds_the_memory_with_its_ledger_row_keeping_the_source_id(memories):
    m = memory("alice", "abcde", "plays the cello", scope="guild:1")
    here = owner("alice", "guild:1")
    assert not memories.has_marker(here, "k1")
    entry = imported(memories, m, import_id="src 1")
    assert memories.get(here, "abcde") == m and memories.has_marker(here, "k1")
    assert changes(memories, here) == [entry]
    assert (entry.action, entry.actor, entry.before, entry.after, entry.import_id) == (
        Action.ADD,
        Actor.IMPORT,
        None,
        m,
        "src 1",
    )


def test_add_once_with_a_key_the_owner_has_writes_nothing_even_after_a_forget(memories):
    here = owner("alice", "guild:1")
    first = imported(memories, memory("alice", "abcde", scope="guild:1")).after
    assert imported(memories, memory("alice", "fghjk", "the same row again", scope="guild:1")) is None
    memories.apply(Change(Action.DELETE, first, None, "forget"), actor=Actor.COMMAND)
    assert imported(memories, memory("alice", "fghjk", "the same row again", scope="guild:1")) is None
    assert memories.get(here, "fghjk") is None and memories.get(here, "abcde") is None
    assert [e.action for e in changes(memories, here)] == [Action.DELETE, Action.ADD]


def test_the_marker_is_the_owners_own_and_is_no_memory(memories):
    imported(memories, memory("alice", "abcde", scope="guild:1"))
    for other in (owner("alice", "guild:2"), owner("bob", "guild:1")):
        assert not memories.has_marker(other, "k1")
    assert imported(memories, memory("bob", "abcde", scope="guild:1")) is not None  # bob's own row
    profile = memories.read_profile(owner("alice", "guild:1"), actor=Actor.COMMAND, reason="t", limit=None)
    assert [m.memory_id for m in profile] == ["abcde"]  # no profile read, export or erasure sees a marker
    assert memories.owners_of("alice") == [owner("alice", "guild:1")]
    assert [m.memory_id for m in memories.stale(T0 + timedelta(days=400), 10)] == ["abcde", "abcde"]


def test_add_once_on_a_taken_id_conflicts_and_writes_nothing_so_another_id_can_follow(memories):
    here = owner("alice", "guild:1")
    taken = add(memories, memory("alice", "abcde", "already here", scope="guild:1")).after
    with pytest.raises(ConflictError):
        imported(memories, memory("alice", "abcde", "imported", scope="guild:1"))
    assert memories.get(here, "abcde") == taken and not memories.has_marker(here, "k1")
    assert len(changes(memories, here)) == 1
    assert imported(memories, memory("alice", "fghjk", "imported", scope="guild:1")) is not None


def test_concurrent_add_once_with_one_key_adds_exactly_once(memories, request):
    import threading

    if not isinstance(memories, FakeMemoryStore):
        request.getfixturevalue("serialised_moto")
    ids = ["aaaaa", "bbbbb", "ccccc", "ddddd", "eeeee", "fffff"]
    answers = []
    start = threading.Barrier(len(ids))

    def run(memory_id: str) -> None:
        start.wait()
        answers.append(imported(memories, memory("alice", memory_id, "one row", scope="dm")))

    threads = [threading.Thread(target=run, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    [entry] = [a for a in answers if a is not None]
    assert len(answers) == len(ids)
    profile = memories.read_profile(owner("alice", "dm"), actor=Actor.COMMAND, reason="t", limit=None)
    assert [m.memory_id for m in profile] == list(entry.memory_ids)
    assert changes(memories, owner("alice", "dm")) == [entry]


def test_the_whole_profile_read_and_the_backfill_skip_what_is_not_a_memory(memories):
    """Import markers and the forgotten sources live beside the memories; neither is one."""
    imported(memories, memory("alice", "impo2", "an imported fact"), once="src-1")
    add(memories, memory("alice", "plain", "a fact"))
    gone = add(memories, sourced(memory("alice", "gone2", "forgotten"), "m1")).after
    memories.apply(Change(Action.DELETE, gone, None, "forget"), actor=Actor.COMMAND)
    assert memories.forgotten_sources(owner("alice")) == {"m1"}
    profile = memories.read_selected(owner("alice"), lambda p: p, actor=Actor.REPLY, reason="t")
    assert sorted(m.memory_id for m in profile) == ["impo2", "plain"]
    found, _ = memories.without_embedding("model-a", 10)
    assert sorted(m.memory_id for m in found) == ["impo2", "plain"]  # the import has no vector yet


# ---- the person record and the check every writer of a person's data commits under


@pytest.fixture(params=IMPLEMENTATIONS)
def person_stores(request):
    """(people, memories, messages) sharing one person record, as the functions' stores do."""
    clock = Clock()
    if request.param == "fake":
        people = FakePeopleStore()
        memories = FakeMemoryStore(clock, people=people)
        people.ledger_to = memories
        return people, memories, FakeMessageStore(people=people)
    client, settings = request.getfixturevalue("dynamo")
    return (
        DynamoPeopleStore(client, settings),
        DynamoMemoryStore(client, settings, clock=clock),
        DynamoMessageStore(client, settings),
    )


def row(user_id: str, action: Action, at) -> LedgerEntry:
    return LedgerEntry(user_id, action, Actor.COMMAND, action.value, at, scope=PERSON_SCOPE)


def test_a_person_never_recorded_is_all_defaults_and_every_check_passes(person_stores):
    people, memories, messages = person_stores
    assert people.get("nobody") == Person("nobody")
    for memory_id, basis in zip(("abcde", "fghjk", "mnpqr", "stuvw"), Basis, strict=True):
        add(memories, memory("nobody", memory_id), check=PersonCheck("nobody", T0, basis, "global"))
    assert messages.put(message("nobody", "hello"), check=PersonCheck("nobody", T0, Basis.STORE)) is True


def test_pause_and_resume_switch_once_each_with_their_own_ledger_row(person_stores):
    people, memories, _ = person_stores
    at = T0 + timedelta(hours=1)
    assert people.pause("alice", row("alice", Action.PAUSE, at)) is True
    assert people.pause("alice", row("alice", Action.PAUSE, at + timedelta(seconds=1))) is False  # already paused
    assert people.get("alice").paused_at == at and people.get("alice").paused
    later = at + timedelta(minutes=5)
    assert people.resume("alice", row("alice", Action.RESUME, later)) is True
    assert people.resume("alice", row("alice", Action.RESUME, later + timedelta(seconds=1))) is False
    assert (people.get("alice").paused_at, people.get("alice").resumed_at) == (None, later)
    rows = memories.ledger_for(Owner(PERSON_SCOPE, "alice"))
    assert [(r.action, r.actor) for r in rows] == [(Action.RESUME, Actor.COMMAND), (Action.PAUSE, Actor.COMMAND)]
    assert people.get("bob") == Person("bob")  # one person's switch is theirs alone


def test_the_notice_is_claimed_once_per_scope_and_a_released_claim_can_be_taken_again(person_stores):
    people, _, _ = person_stores
    assert people.claim_notice("alice", "guild:1") is True
    assert people.claim_notice("alice", "guild:1") is False
    assert people.claim_notice("alice", "dm") is True
    people.release_notice("alice", "dm")
    assert people.get("alice").noticed == frozenset({"guild:1"})
    assert people.claim_notice("alice", "dm") is True


def test_a_notice_for_a_turn_begun_before_the_persons_erasure_is_not_claimed_and_one_after_is(person_stores):
    """The erasure leaves only its marker in the record; a turn in flight since before it must not
    write the notices back (a later turn, from the person come back, gives the notice again)."""
    people, _, _ = person_stores
    said = T0 + timedelta(hours=1)
    people.erased("alice", said + timedelta(minutes=1))
    assert people.claim_notice("alice", "guild:1", PersonCheck("alice", said, Basis.STORE)) is False
    assert people.get("alice").noticed == frozenset()
    again = PersonCheck("alice", said + timedelta(minutes=2), Basis.STORE)
    assert people.claim_notice("alice", "guild:1", again) is True
    assert people.claim_notice("alice", "guild:1", again) is False
    assert people.get("alice").noticed == frozenset({"guild:1"})


def test_a_learning_write_is_refused_while_paused_and_for_lines_from_before_a_resume(person_stores):
    people, memories, _ = person_stores
    said = T0 + timedelta(hours=1)
    people.pause("alice", row("alice", Action.PAUSE, said + timedelta(minutes=1)))
    learn = PersonCheck("alice", said, Basis.LEARN)
    with pytest.raises(PersonRefused):
        add(memories, memory("alice", "abcde"), check=learn)
    people.resume("alice", row("alice", Action.RESUME, said + timedelta(minutes=2)))
    with pytest.raises(PersonRefused):  # said before the resume: never learned later
        add(memories, memory("alice", "abcde"), check=learn)
    assert memories.get(owner("alice"), "abcde") is None and changes(memories, owner("alice")) == []
    add(memories, memory("alice", "abcde"), check=PersonCheck("alice", said + timedelta(minutes=3), Basis.LEARN))
    # Storing and restoring do not care about the switch.
    assert people.pause("alice", row("alice", Action.PAUSE, said + timedelta(minutes=4)))
    add(memories, memory("alice", "fghjk"), check=PersonCheck("alice", said, Basis.RESTORE, "global"))


def test_nothing_that_started_before_an_erasure_writes_after_it(person_stores):
    people, memories, messages = person_stores
    started = T0 + timedelta(hours=1)
    people.pause("carol", row("carol", Action.PAUSE, started))
    people.erased("carol", started + timedelta(seconds=1))
    assert people.get("carol") == Person("carol", erased_at=started + timedelta(seconds=1))  # the switch went too
    for basis in Basis:
        with pytest.raises(PersonRefused):
            add(memories, memory("carol", "abcde"), check=PersonCheck("carol", started, basis, "global"))
    with pytest.raises(PersonRefused):
        messages.put(message("carol", "a late reply"), check=PersonCheck("carol", started, Basis.STORE))
    assert [m for m in messages.recent("c1", 100) if m.author_id == "carol"] == []
    after = started + timedelta(seconds=2)  # a new conversation after the erasure is theirs again
    assert messages.put(message("carol", "hi again", at=after), check=PersonCheck("carol", after, Basis.STORE))
    add(memories, memory("carol", "abcde"), check=PersonCheck("carol", after, Basis.LEARN))


def test_a_restore_older_than_the_scopes_forget_all_is_refused_in_that_scope_only(person_stores):
    people, memories, _ = person_stores
    learned = T0 + timedelta(hours=1)
    began = learned + timedelta(hours=1)
    assert people.start_forget_all("dan", "guild:1", began, "job-1", began - timedelta(minutes=30))
    assert people.finish_forget_all("dan", "guild:1", began, began + timedelta(seconds=5))
    with pytest.raises(PersonRefused):
        add(
            memories,
            memory("dan", "abcde", scope="guild:1"),
            check=PersonCheck("dan", learned, Basis.RESTORE, "guild:1"),
        )
    add(memories, memory("dan", "abcde", scope="guild:2"), check=PersonCheck("dan", learned, Basis.RESTORE, "guild:2"))
    newer = learned + timedelta(hours=2)
    add(memories, memory("dan", "fghjk", scope="guild:1"), check=PersonCheck("dan", newer, Basis.RESTORE, "guild:1"))
    assert dict(people.get("dan").forgot_all_at) == {"guild:1": began}
    assert dict(people.get("dan").forgot_all_done) == {"guild:1": began + timedelta(seconds=5)}


def test_a_forget_all_is_final_by_its_own_times_while_its_job_runs_and_after(person_stores):
    people, memories, _ = person_stores
    began = T0 + timedelta(hours=1)
    done = began + timedelta(seconds=30)
    stale = began - timedelta(minutes=30)
    assert people.start_forget_all("eve", "guild:1", began, "job-1", stale)
    assert people.start_forget_all("eve", "guild:1", began, "job-1", stale)  # its own retry: admitted
    # Another forget-all while this one's job runs: nothing written.
    assert not people.start_forget_all("eve", "guild:1", began + timedelta(seconds=1), "job-2", stale)
    assert (
        people.get("eve").forgetting == frozenset({"guild:1"}) and people.get("eve").forgot_all_in("guild:1") == began
    )

    def refused(memory_id: str, check: PersonCheck) -> bool:
        try:
            add(memories, memory("eve", memory_id, scope=check.scope), check=check)
        except PersonRefused:
            return True
        return False

    later = began + timedelta(minutes=1)
    # While it runs: nothing restored in that scope, however new the change it reverts.
    assert refused("abcde", PersonCheck("eve", later, Basis.RESTORE, "guild:1"))
    # Nothing said at or before it is learned, and nothing an import begun before it brought in.
    assert refused("abcde", PersonCheck("eve", began, Basis.LEARN, "guild:1"))
    assert refused("abcde", PersonCheck("eve", began - timedelta(seconds=1), Basis.IMPORT, "guild:1"))
    add(memories, memory("eve", "bcdef", scope="guild:1"), check=PersonCheck("eve", later, Basis.LEARN, "guild:1"))
    add(memories, memory("eve", "cdefg", scope="guild:2"), check=PersonCheck("eve", began, Basis.LEARN, "guild:2"))
    # Another forget-all's end does not end this one.
    assert not people.finish_forget_all("eve", "guild:1", began - timedelta(days=1), done)
    assert people.finish_forget_all("eve", "guild:1", began, done)
    assert people.get("eve").forgetting == frozenset() and people.get("eve").forgot_all_done_in("guild:1") == done
    # After: a change reverted from before the job was done restores nothing; one after it does.
    assert refused("defgh", PersonCheck("eve", done, Basis.RESTORE, "guild:1"))
    add(
        memories,
        memory("eve", "defgh", scope="guild:1"),
        check=PersonCheck("eve", done + timedelta(seconds=1), Basis.RESTORE, "guild:1"),
    )
    # A job whose worker is gone (marked running since before ``stale_before``) is taken over.
    assert people.start_forget_all("eve", "guild:2", began, "job-3", stale)
    assert not people.start_forget_all("eve", "guild:2", later, "job-4", began - timedelta(seconds=1))
    assert people.start_forget_all("eve", "guild:2", later, "job-4", began + timedelta(seconds=1))
    assert people.get("eve").forgot_all_in("guild:2") == later


def test_an_import_add_is_refused_for_a_person_erased_since_it_began(person_stores):
    people, memories, _ = person_stores
    began = T0 + timedelta(hours=1)
    people.erased("erin", began + timedelta(seconds=1))
    check = PersonCheck("erin", began, Basis.STORE)
    with pytest.raises(PersonRefused):
        memories.add_once(memory("erin", "abcde"), "key-1", actor=Actor.IMPORT, reason="import", check=check)
    assert memories.get(owner("erin"), "abcde") is None and not memories.has_marker(owner("erin"), "key-1")
    later = PersonCheck("erin", began + timedelta(seconds=2), Basis.STORE)
    assert memories.add_once(memory("erin", "abcde"), "key-1", actor=Actor.IMPORT, reason="import", check=later)


def test_changes_of_are_the_owners_change_rows_newest_first_paged_by_key_without_reads(memories):
    a, b = owner("a", "guild:1"), owner("b", "guild:1")
    for i in range(5):
        add(memories, memory("a", f"mm{i}22", f"fact {i}", scope=a.scope))
        memories.read_profile(a, actor=Actor.REPLY, reason="reply", limit=10)  # reads between the changes
    add(memories, memory("b", "bb222", "theirs", scope=b.scope))
    first = memories.changes_of(a, 2)
    assert [e.memory_ids for e in first] == [("mm422",), ("mm322",)]
    rest = memories.changes_of(a, 10, older_than=first[-1].key)
    assert [e.memory_ids for e in rest] == [("mm222",), ("mm122",), ("mm022",)]
    assert all(e.action is Action.ADD and e.owner == a for e in first + rest)
    assert memories.changes_of(a, 0) == []


def test_ledger_entry_is_found_by_its_key_in_its_owners_ledger_only(memories):
    a = owner("a", "guild:1")
    entry = add(memories, memory("a", "mm222", "likes tea", scope=a.scope))
    found = memories.ledger_entry(a, entry.key)
    assert found is not None and (found.key, found.after, found.action) == (entry.key, entry.after, Action.ADD)
    assert memories.ledger_entry(owner("b", "guild:1"), entry.key) is None
    assert memories.ledger_entry(owner("a", "guild:2"), entry.key) is None
    other_key = entry.key[:-1] + ("1" if entry.key.endswith("0") else "0")  # never the key itself
    assert memories.ledger_entry(a, other_key) is None


def test_ended_are_those_whose_end_came_and_no_write_or_review_touched_since_earliest_first(memories):
    now = datetime(2026, 12, 10, 18, 0, tzinfo=UTC)  # 2026-12-11 03:00 JST
    written = now - timedelta(days=30)

    def planned(user, memory_id, until):
        return dataclasses.replace(memory(user, memory_id, f"plan {memory_id}", at=written), valid_until=until)

    a, b, c = (
        planned("a", "end22", date(2026, 12, 1)),
        planned("b", "end33", date(2026, 12, 5)),
        planned("c", "end44", date(2026, 12, 10)),
    )
    later = planned("d", "end55", date(2026, 12, 11))  # its last day is today in JST: not ended
    for m in (b, a, c, later, memory("e", "dur22", "a durable fact", at=written)):
        add(memories, m)
    assert [m.memory_id for m in memories.ended(now, 10)] == ["end22", "end33", "end44"]
    assert [m.memory_id for m in memories.ended(now, 2)] == ["end22", "end33"]
    memories.mark_reviewed(memories.get(a.owner, "end22"), now)  # kept by tonight's review
    current = memories.get(b.owner, "end33")  # the person said it goes on: the end moved
    memories.apply(
        Change(Action.UPDATE, current, dataclasses.replace(current, valid_until=date(2026, 12, 31)), "x"),
        actor=Actor.EXTRACTION,
    )
    assert [m.memory_id for m in memories.ended(now, 10)] == ["end44"]
    assert memories.ended(now, 0) == []
