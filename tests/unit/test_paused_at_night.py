"""Nothing of a paused person reaches a model at night: their stale memories are not reviewed
(they go behind the others in the queue, so they never hold the night's places), the vector
backfill leaves their memories out, and their lines leave the diary's transcript."""

from __future__ import annotations

from datetime import timedelta

from test_consolidation import Night, jst
from test_recall import CountingEmbeddings

from fakes import FakePeopleStore, memory
from memorybot.core.record.changes import LedgerEntry
from memorybot.core.record.domain import Action, Actor


def test_a_paused_persons_memories_and_lines_reach_no_model_at_night():
    people, embeddings = FakePeopleStore(), CountingEmbeddings()
    night = Night(people=people, embeddings=embeddings)
    old = jst(29, 12) - timedelta(days=60)
    night.memories.seed(
        *[memory("p", f"p{i}aaa"[:5], f"PAUSED-fact-{i}", at=old - timedelta(days=1)) for i in range(25)],
        memory("q", "q2aaa", "OTHER-fact", at=old),
    )
    people.pause("p", LedgerEntry("p", Action.PAUSE, Actor.COMMAND, "pause", old))
    night.say("p", "PAUSED-line in the channel", jst(29, 10), to="")  # channel history: the diary's only
    night.say("q", "OTHER-line in the channel", jst(29, 10, 1))

    night.run()

    reviewed = night.jev.asked("review")
    assert reviewed == ["q2aaa"]  # the paused person's 25 older ones did not hold the 20 places
    assert not any("PAUSED" in text for text in embeddings.texts) and "OTHER-fact" in embeddings.texts
    (transcript,) = [s for q, s in night.chat.seen if q == "write_diary"]
    assert "PAUSED" not in transcript and "OTHER-line" in transcript
    assert len(night.memories.of("p")) == 25  # nothing of theirs was deleted
    # Moved behind the others in the queue, so tomorrow they do not stand first either.
    assert all(m.reviewed_at is not None for m in night.memories.of("p"))
