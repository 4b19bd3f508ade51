"""A written memory's vector is stored after its write, on the local DynamoDB store over HTTP: one
UpdateItem conditioned on the record being as written, so a vector never lands on a record that
was changed, forgotten or erased while it was computed (the condition refuses it, and brings back
no item); an embedding that fails leaves the record written without one and the turn's other work
done."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta

import pytest

from fakes import T0, Clock, ScriptedChat, ScriptedJev, memory, message, owner, speaker
from memorybot import tables
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.adapters.dynamodb_messages import DynamoMessageStore
from memorybot.adapters.dynamodb_people import DynamoPeopleStore
from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import GLOBAL_SCOPE, Action, Actor, Embedding, Verdict
from memorybot.core.record.ports import ModelError, ModelUnavailable
from memorybot.core.rights import commands
from memorybot.core.rights.erasure import Erasure
from memorybot.core.turn.extraction import Extractor, Outcome

ALICE = "alice"
NOW = T0 + timedelta(days=1)
REWRITTEN = "Lives in Osaka now"


class MeanwhileEmbeddings(OfflineEmbeddingModel):
    """Runs ``meanwhile`` when asked for the vector of ``text`` (so: after that text was written,
    before its vector is stored), then answers, or raises ``error``."""

    def __init__(self, text: str, meanwhile: Callable[[], None] = lambda: None, error: Exception | None = None):
        super().__init__()
        self.text, self.meanwhile, self.error = text, meanwhile, error
        self.asked: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        self.asked.append(list(texts))
        if self.text in texts:
            self.meanwhile()
            if self.error is not None:
                raise self.error
        return super().embed(texts)


@pytest.fixture
def store(dynamo, serialised_moto):
    client, settings = dynamo
    s = DynamoMemoryStore(client, settings, clock=Clock(NOW))
    for m in (memory(ALICE, "h2me3", "Lives in Kyoto"), memory(ALICE, "exa2s", "Has an exam on Friday")):
        s.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)
    return s


def _learn(store: DynamoMemoryStore, embeddings: OfflineEmbeddingModel, add: float = 0.1):
    jev = ScriptedJev(verdicts={"h2me3": Verdict.UPDATE, "exa2s": Verdict.DELETE}, add=add)
    chat = ScriptedChat(texts={"h2me3": REWRITTEN, None: "Started a job at a game studio"})
    said = [message(ALICE, "I moved to Osaka, the exam is over, and I work at a game studio now", name="alice")]
    extractor = Extractor(store, jev, chat, clock=Clock(NOW), embeddings=embeddings)
    return extractor.run(speaker(ALICE, "alice"), GLOBAL_SCOPE, said)


def _raw_item(dynamo, memory_id: str) -> dict | None:
    client, settings = dynamo
    key = {"owner": {"S": owner(ALICE).key}, "memory_id": {"S": memory_id}}
    return client.get_item(TableName=settings.table(tables.MEMORIES), Key=key, ConsistentRead=True).get("Item")


def _changes(store: DynamoMemoryStore) -> list[Action]:
    return sorted(e.action.value for e in store.ledger_for(owner(ALICE), limit=None) if e.action is not Action.READ)


def test_the_written_memories_get_their_vectors_after_the_write_with_no_ledger_row(store, dynamo):
    embeddings = MeanwhileEmbeddings(REWRITTEN)
    result = _learn(store, embeddings, add=0.9)
    assert result.updated == ["h2me3"] and result.deleted == ["exa2s"] and len(result.added) == 1
    rewritten = store.get(owner(ALICE), "h2me3")
    assert rewritten.text == REWRITTEN and rewritten.embedding is not None
    assert rewritten.embedding.model == embeddings.model_id
    added = store.get(owner(ALICE), result.added[0])
    assert added.embedding is not None and added.embedding.model == embeddings.model_id
    assert "embedding" in _raw_item(dynamo, "h2me3")
    assert _changes(store) == ["add", "add", "add", "delete", "update"]  # the seeds, and this turn's three


def test_a_record_changed_while_its_vector_was_computed_keeps_the_change_and_gets_no_vector(store, dynamo):
    def someone_else_rewrites() -> None:
        written = store.get(owner(ALICE), "h2me3")
        assert written.text == REWRITTEN  # the text was written first
        later = replace(written, text="Lives in Nara", updated_at=NOW + timedelta(seconds=1))
        store.apply(Change(Action.UPDATE, written, later, "another turn"), actor=Actor.EXTRACTION)

    embeddings = MeanwhileEmbeddings(REWRITTEN, someone_else_rewrites)
    result = _learn(store, embeddings)
    assert result.outcome is Outcome.DONE and result.updated == ["h2me3"]  # written, then changed by another
    now = store.get(owner(ALICE), "h2me3")
    assert now.text == "Lives in Nara" and now.embedding is None  # the condition refused the stale vector
    assert "embedding" not in _raw_item(dynamo, "h2me3")


def test_a_record_forgotten_while_its_vector_was_computed_stays_gone(store, dynamo):
    def forgotten() -> None:
        assert commands.forget(store, owner(ALICE), "h2me3").outcome is commands.ForgetOutcome.FORGOTTEN

    result = _learn(store, MeanwhileEmbeddings(REWRITTEN, forgotten))
    assert result.updated == ["h2me3"] and result.deleted == ["exa2s"]
    assert _raw_item(dynamo, "h2me3") is None  # the vector's update did not bring back an item
    assert store.get(owner(ALICE), "h2me3") is None


@pytest.mark.parametrize("error", [ModelError("embedding service down"), ModelUnavailable("throttled")])
def test_a_failed_or_throttled_embedding_leaves_the_record_written_and_the_turns_other_work_done(store, error):
    embeddings = MeanwhileEmbeddings(REWRITTEN, error=error)
    result = _learn(store, embeddings, add=0.9)
    assert result.outcome is Outcome.DONE and result.updated == ["h2me3"] and result.deleted == ["exa2s"]
    assert len(result.added) == 1 and result.failures == 0
    rewritten = store.get(owner(ALICE), "h2me3")
    assert rewritten.text == REWRITTEN and rewritten.embedding is None  # lexical until the backfill
    assert store.get(owner(ALICE), "exa2s") is None
    assert [m.memory_id for m in store.without_embedding(embeddings.model_id, 10)[0]].count("h2me3") == 1
    assert _changes(store) == ["add", "add", "add", "delete", "update"]


def test_a_person_erased_while_the_vector_was_computed_keeps_nothing_not_even_the_vector(dynamo, serialised_moto):
    """The person's record allowed the embedding (read again after the writes); the erasure comes
    while the model works: the vector's update is refused and brings back no item."""
    client, settings = dynamo
    person = "424242424242424242"
    clock = Clock(NOW)
    store = DynamoMemoryStore(client, settings, clock=clock)
    people = DynamoPeopleStore(client, settings)
    store.apply(Change(Action.ADD, None, memory(person, "h2me3", "Lives in Kyoto"), "seed"), actor=Actor.EXTRACTION)

    def erased() -> None:
        later = Clock(NOW + timedelta(seconds=1))
        result = Erasure(store, DynamoMessageStore(client, settings), people, clock=later).run(person)
        assert result.found and result.memories == 1

    jev = ScriptedJev(verdicts={"h2me3": Verdict.UPDATE}, add=0.1)
    chat = ScriptedChat(texts={"h2me3": REWRITTEN})
    said = [message(person, "I moved to Osaka", name="p", at=NOW - timedelta(minutes=1))]
    extractor = Extractor(
        store, jev, chat, clock=clock, embeddings=MeanwhileEmbeddings(REWRITTEN, erased), people=people
    )
    result = extractor.run(speaker(person, "p"), GLOBAL_SCOPE, said)
    assert result.updated == ["h2me3"]  # written before the erasure
    key = {"owner": {"S": owner(person).key}, "memory_id": {"S": "h2me3"}}
    assert client.get_item(TableName=settings.table(tables.MEMORIES), Key=key, ConsistentRead=True).get("Item") is None
