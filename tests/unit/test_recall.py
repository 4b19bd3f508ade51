"""One selection rule for every reader (core/prompting/recall.py): the reply prompt, the live extraction
and the nightly extraction read the ten memories most relevant to what the person is saying;
the query is embedded only when a ranking needs it (more than ten memories, read for a person
who is not paused), once the profile is loaded (by the extraction, beside "worth"); the vectors
are stored after the memory's write and backfilled nightly, within a bound."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime, timedelta

from fakes import (
    T0,
    Clock,
    FakeMemoryStore,
    FakeMessageStore,
    FakePeopleStore,
    FakeRunStore,
    ScriptedChat,
    ScriptedJev,
    message,
)
from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel
from memorybot.adapters.manifests import InMemoryManifests
from memorybot.adapters.offline import OfflineChatModel, OfflineDecisionModel
from memorybot.core.night.consolidation import Consolidator
from memorybot.core.night.nightly_steps import run_in_process
from memorybot.core.night.window import EMBED_BACKFILL_PER_NIGHT
from memorybot.core.prompting.recall import reply_query
from memorybot.core.record.changes import LedgerEntry
from memorybot.core.record.domain import GLOBAL_SCOPE, JST, Action, Actor, Memory, Owner, Speaker, Verdict
from memorybot.core.record.ports import ModelError
from memorybot.core.turn.extraction import Extractor, Outcome
from memorybot.core.turn.reply import ReplyWriter

ALICE = Speaker("u1", "alice")
ME = Owner(GLOBAL_SCOPE, "u1")
OLDEST = "[offline] Loves hiking in the Alps"
FILLERS = [
    "[offline] Works as a nurse at the city hospital",
    "[offline] Has two cats named Miso and Soba",
    "[offline] Plays the guitar in a small band",
    "[offline] Is learning to bake sourdough bread",
    "[offline] Drives a red bicycle to work",
    "[offline] Supports the local football club",
    "[offline] Reads science fiction novels",
    "[offline] Grows tomatoes on the balcony",
    "[offline] Watches anime on Friday nights",
    "[offline] Is allergic to peanuts",
    "[offline] Collects vinyl records",
]


def twelve(store: FakeMemoryStore, embeddings: OfflineEmbeddingModel | None = None) -> list[Memory]:
    """A person with 12 memories, the hiking fact the oldest (a day between each)."""
    made = []
    for i, text in enumerate([OLDEST, *FILLERS]):
        at = T0 - timedelta(days=30 - i)
        m = Memory("u1", f"m{i:02d}xx"[:5], text, at, at)
        if embeddings is not None:
            m = replace(m, embedding=embeddings.embed_one(text))
        made.append(m)
    store.seed(*made)
    return made


def reads(store: FakeMemoryStore) -> list[tuple[str, ...]]:
    return [e.memory_ids for e in store.ledger if e.action is Action.READ]


def said(text: str, *, who: str = "u1", minute: int = 0):
    return message(who, text, name="alice" if who == "u1" else who, at=T0 + timedelta(minutes=minute))


# ---- the reply prompt


def test_the_reply_prompt_holds_the_old_fact_the_person_asks_about_and_the_read_names_exactly_the_ten():
    store = FakeMemoryStore()
    twelve(store)
    chat = ScriptedChat()
    ReplyWriter(store, chat).reply(ME, "alice", [said("Do you remember where I like hiking?")])
    [(_, prompt)] = chat.seen
    system = prompt[0].content
    assert "Loves hiking in the Alps" in system
    [read] = reads(store)
    assert len(read) == 10 and "m00xx" in read
    # exactly the ten in the prompt, and none of the two left out
    assert all((m.text.replace("[offline] ", "") in system) == (m.memory_id in read) for m in store.of("u1"))


def test_ten_or_fewer_memories_are_all_in_the_prompt_newest_first_as_before():
    store = FakeMemoryStore()
    made = twelve(store)[:10]
    store.rows = {(m.owner, m.memory_id): m for m in made}
    ReplyWriter(store, ScriptedChat()).reply(ME, "alice", [said("hello there")])
    assert reads(store) == [tuple(m.memory_id for m in sorted(made, key=lambda m: m.updated_at, reverse=True))]


def test_the_reply_query_is_the_speakers_own_recent_lines_never_others_or_the_bots():
    conversation = [
        said("I went hiking", minute=0),
        said("bob loves guitars", who="bob", minute=1),
        message("bot", "(offline stand-in) I remember: Plays the guitar", bot=True, to="u1", at=T0 + timedelta(2)),
        said("and then?", minute=3),
    ]
    assert reply_query(conversation, "u1") == "I went hiking\nand then?"
    store = FakeMemoryStore()
    twelve(store)
    ReplyWriter(store, ScriptedChat()).reply(ME, "alice", conversation)
    [read] = reads(store)
    assert "m00xx" in read  # hiking: what alice said
    assert read[0] == "m00xx"


class GatedEmbeddings(OfflineEmbeddingModel):
    """Records, for each call, whether ``gate`` was already set (waiting a little for it)."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__()
        self.gate = gate
        self.ran_beside: list[bool] = []

    def embed(self, texts):
        self.ran_beside.append(self.gate.wait(timeout=5))
        return super().embed(texts)


class CountingEmbeddings(OfflineEmbeddingModel):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts += list(texts)
        return super().embed(texts)


class LoadedStore(FakeMemoryStore):
    """Sets ``loaded`` once the profile is read (before anything is chosen from it)."""

    def __init__(self, loaded: threading.Event) -> None:
        super().__init__()
        self.loaded = loaded

    def read_selected(self, owner, choose, **kw):
        def chosen(memories):
            self.loaded.set()
            return choose(memories)

        return super().read_selected(owner, chosen, **kw)


def test_the_query_is_embedded_after_the_read_and_only_when_more_than_ten_are_ranked():
    loaded = threading.Event()
    embeddings = GatedEmbeddings(loaded)
    store = LoadedStore(loaded)
    twelve(store, embeddings)
    embeddings.ran_beside.clear()
    ReplyWriter(store, ScriptedChat(), embeddings=embeddings).reply(ME, "alice", [said("hiking again?")])
    assert embeddings.ran_beside == [True]  # one query embedding, asked once the profile was read

    few = FakeMemoryStore()
    counting = CountingEmbeddings()
    few.seed(*[Memory("u1", f"f{i}xxx"[:5], text, T0, T0) for i, text in enumerate(FILLERS[:10])])
    ReplyWriter(few, ScriptedChat(), embeddings=counting).reply(ME, "alice", [said("hiking again?")])
    assert counting.texts == [] and len(reads(few)[0]) == 10  # all ten shown, nothing ranked, nothing embedded


def test_a_paused_persons_words_are_never_embedded_and_they_are_still_answered():
    store, people = paused_twelve()
    counting = CountingEmbeddings()
    chat = ScriptedChat(reply="hello")
    answer = ReplyWriter(store, chat, people, embeddings=counting).reply(ME, "alice", [said("I went hiking")])
    assert answer == "hello" and counting.texts == [] and reads(store) == []


def paused_twelve() -> tuple[FakeMemoryStore, FakePeopleStore]:
    """A person with twelve memories who has paused memory."""
    people = FakePeopleStore()
    store = FakeMemoryStore(people=people)
    twelve(store)
    people.pause("u1", LedgerEntry("u1", Action.PAUSE, Actor.COMMAND, "pause", T0))
    return store, people


class BrokenEmbeddings:
    model_id = "broken@1"

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        raise ModelError("embedding service down")


def test_a_failed_query_embedding_leaves_lexical_relevance():
    store = FakeMemoryStore()
    twelve(store)
    broken = BrokenEmbeddings()
    chat = ScriptedChat()
    ReplyWriter(store, chat, embeddings=broken).reply(ME, "alice", [said("I went hiking")])
    assert broken.calls == 1 and reads(store)[0][0] == "m00xx"


# ---- extraction: live and nightly read the same way, and Jev judges the selected ten


def test_a_re_mentioned_old_fact_is_updated_not_duplicated():
    """The issue's script: with 12 memories, the oldest re-mentioned; the offline pair decides."""
    clock = Clock(T0 + timedelta(days=1))
    store = FakeMemoryStore(clock)
    twelve(store)
    extractor = Extractor(store, OfflineDecisionModel(), OfflineChatModel(), clock=clock)
    result = extractor.run(ALICE, GLOBAL_SCOPE, [said("I love hiking in the Dolomites now")])
    assert result.updated == ["m00xx"] and result.added == []
    assert len(store.of("u1")) == 12
    assert store.get(ME, "m00xx").text == "[offline] Loves hiking in the Dolomites now"


def test_extraction_embeds_its_query_beside_worth_and_reads_only_once_worth_said_yes():
    """The profile is loaded beside "worth" and, holding more than ten, its query embedding starts
    then (worth waits here until it has): the decision never waits for it. The read's row comes
    once worth said yes and names what Jev judged."""
    embedding_started = threading.Event()
    saw_it: list[bool] = []

    class StartedEmbeddings(OfflineEmbeddingModel):
        def embed(self, texts):
            embedding_started.set()
            return super().embed(texts)

    class WaitingJev(ScriptedJev):
        def worth(self, exchange):
            saw_it.append(embedding_started.wait(timeout=5))
            return super().worth(exchange)

    embeddings = StartedEmbeddings()
    store = FakeMemoryStore(Clock(T0 + timedelta(days=1)))
    twelve(store, embeddings)
    jev = WaitingJev(add=0.1)
    Extractor(store, jev, ScriptedChat(), embeddings=embeddings).run(ALICE, GLOBAL_SCOPE, [said("hiking today!")])
    assert saw_it == [True]  # the query embedding had started while worth was being asked
    judged = jev.asked("verdict")
    assert len(judged) == 10 and "m00xx" in judged  # ranked with it: the hiking fact among the ten
    [read] = reads(store)
    assert sorted(read) == sorted(judged)  # the ledger names what Jev saw


def test_an_exchange_not_worth_keeping_leaves_no_read_row_and_ten_or_fewer_are_never_embedded():
    counting = CountingEmbeddings()
    store = FakeMemoryStore(Clock(T0 + timedelta(days=1)))
    twelve(store)
    result = Extractor(store, ScriptedJev(worth=0.1), ScriptedChat(), embeddings=counting).run(
        ALICE, GLOBAL_SCOPE, [said("lol ok")]
    )
    assert result.outcome is Outcome.NOT_WORTH and reads(store) == [] and store.changes() == []

    few = FakeMemoryStore(Clock(T0 + timedelta(days=1)))
    few.seed(*[Memory("u1", f"f{i}xxx"[:5], text, T0, T0) for i, text in enumerate(FILLERS[:10])])
    counting = CountingEmbeddings()
    jev = ScriptedJev(add=0.1)
    Extractor(few, jev, ScriptedChat(), embeddings=counting).run(ALICE, GLOBAL_SCOPE, [said("hiking today!")])
    assert counting.texts == [] and len(jev.asked("verdict")) == 10  # all ten judged, nothing ranked


def test_a_paused_persons_exchange_is_never_embedded_nor_read():
    store, people = paused_twelve()
    counting = CountingEmbeddings()
    jev = ScriptedJev()
    result = Extractor(store, jev, ScriptedChat(), embeddings=counting, people=people).run(
        ALICE, GLOBAL_SCOPE, [said("I went hiking")]
    )
    assert result.outcome is Outcome.PAUSED and counting.texts == [] and jev.calls == []
    assert store.whole_profile_reads == 0 and reads(store) == []


def test_written_memories_carry_a_vector_of_the_model_and_a_failed_embedding_does_not_block_the_write():
    embeddings = OfflineEmbeddingModel()
    store = FakeMemoryStore(Clock(T0 + timedelta(days=1)))
    twelve(store, embeddings)
    jev = ScriptedJev(verdicts={"m00xx": Verdict.UPDATE}, add=0.9)
    chat = ScriptedChat(texts={"m00xx": "Loves hiking in the Dolomites", None: "Has a new bike"})
    result = Extractor(store, jev, chat, embeddings=embeddings).run(ALICE, GLOBAL_SCOPE, [said("hiking, new bike")])
    [added] = result.added
    assert store.get(ME, "m00xx").embedding == embeddings.embed_one("Loves hiking in the Dolomites")
    assert store.get(ME, added).embedding == embeddings.embed_one("Has a new bike")

    broken = BrokenEmbeddings()
    store = FakeMemoryStore(Clock(T0 + timedelta(days=1)))
    result = Extractor(store, ScriptedJev(), ScriptedChat(), embeddings=broken).run(
        ALICE, GLOBAL_SCOPE, [said("I have a cat")]
    )
    [added] = result.added
    assert store.get(ME, added).text == "new fact" and store.get(ME, added).embedding is None


# ---- the nightly backfill


NIGHT = datetime(2026, 11, 30, 3, 0, tzinfo=JST)


def test_the_nightly_backfill_gives_vectors_within_its_bound_and_goes_on_next_night():
    clock = Clock(datetime(2026, 11, 29, 12, tzinfo=JST))
    memories = FakeMemoryStore(clock)
    total = EMBED_BACKFILL_PER_NIGHT + 30
    memories.seed(*(Memory(f"p{i % 7}", f"k{i:04d}", f"fact {i}", T0, T0) for i in range(total)))
    embeddings = OfflineEmbeddingModel(32)
    calls: list[int] = []
    original = embeddings.embed

    def counted(texts):
        calls.append(len(texts))
        return original(texts)

    embeddings.embed = counted  # type: ignore[method-assign]
    jev, chat, runs = ScriptedJev(), ScriptedChat(), FakeRunStore()
    consolidator = Consolidator(
        memories,
        FakeMessageStore(),
        runs,
        Extractor(memories, jev, chat, clock=clock),
        jev,
        chat,
        manifests=InMemoryManifests(),
        clock=clock,
        embeddings=embeddings,
    )
    first = run_in_process(consolidator, NIGHT)
    assert first.summary.embedded == EMBED_BACKFILL_PER_NIGHT and first.summary.embedding_cursor
    assert sum(calls) == EMBED_BACKFILL_PER_NIGHT and max(calls) <= 25
    missing = [m for m in memories.rows.values() if m.embedding is None]
    assert len(missing) == 30
    second = run_in_process(consolidator, NIGHT + timedelta(days=1))
    assert second.summary.embedded == 30 and second.summary.embedding_cursor == ""
    assert all(m.embedding is not None and m.embedding.model == embeddings.model_id for m in memories.rows.values())
    assert not memories.changes()  # a vector is no change of the memory: no ledger rows


def test_a_query_embedding_that_does_not_come_back_in_time_leaves_lexical_relevance(monkeypatch):
    from memorybot.core.prompting import recall

    monkeypatch.setattr(recall, "QUERY_EMBEDDING_WAIT_SECONDS", 0.05)
    release = threading.Event()
    slow = GatedEmbeddings(release)  # never released while the reply waits
    store = FakeMemoryStore()
    twelve(store, OfflineEmbeddingModel())
    ReplyWriter(store, ScriptedChat(), embeddings=slow).reply(ME, "alice", [said("I went hiking")])
    release.set()
    assert reads(store)[0][0] == "m00xx"  # ranked by its words


def test_a_pause_right_after_the_write_sends_none_of_the_persons_texts_to_the_embedding_model():
    """The written memory's vector comes after its write: the person's record is read again first,
    and a pause since the write (its own check passed) keeps the text from the embedding model."""

    class PausedOnWrite(FakeMemoryStore):
        def apply(self, change, **kw):
            entry = super().apply(change, **kw)
            people.pause("u1", LedgerEntry("u1", Action.PAUSE, Actor.COMMAND, "pause", T0 + timedelta(days=1)))
            return entry

    for store_kind, paused in ((FakeMemoryStore, False), (PausedOnWrite, True)):
        people = FakePeopleStore()
        store = store_kind(Clock(T0 + timedelta(days=1)), people=people)
        counting = CountingEmbeddings()
        result = Extractor(store, ScriptedJev(), ScriptedChat(), embeddings=counting, people=people).run(
            ALICE, GLOBAL_SCOPE, [said("I have a cat")]
        )
        [added] = result.added
        assert store.get(ME, added).text == "new fact"  # written either way: its check passed
        assert counting.texts == ([] if paused else ["new fact"])
        assert (store.get(ME, added).embedding is None) is paused
