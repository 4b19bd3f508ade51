"""Property: over random interleavings of several people in one channel, no change to a
person's profile is ever decided on an exchange holding someone else's message, on the
live path (reply, then extraction up to that reply) or in the nightly run.

The models are deliberately naive: they act on marker words anywhere in the exchange, so
any foreign line that slipped in would turn into a change in the wrong profile.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import T0, Clock, FakeMemoryStore, FakeMessageStore, FakeRunStore, message, owner, speaker
from hypothesis_profiles import examples
from memorybot.adapters.manifests import InMemoryManifests
from memorybot.core.night.consolidation import Consolidator
from memorybot.core.night.nightly_steps import run_in_process
from memorybot.core.prompting.decisions import decide_per_record
from memorybot.core.record.domain import EXCHANGE_MESSAGES, Actor, Exchange, MemoryDraft, Verdict
from memorybot.core.turn.extraction import Extractor

ADD, DEL = "ZEBRAADD", "ZEBRADEL"
PEOPLE = ("a", "b", "c")
SCOPE = "guild:1"


class NaiveJev:
    """Acts on markers anywhere in the exchange; records every exchange it was shown."""

    def __init__(self) -> None:
        self.shown: list[Exchange] = []

    def _see(self, exchange: Exchange) -> str:
        self.shown.append(exchange)
        return exchange.render()

    def worth(self, exchange):
        text = self._see(exchange)
        return 0.9 if ADD in text or DEL in text else 0.1

    def decide(self, exchange, memories, early=None):
        return decide_per_record(self, exchange, memories, early)

    def verdict(self, exchange, memory):
        return Verdict.DELETE if DEL in self._see(exchange) else Verdict.KEEP

    def add(self, exchange, verdicts):
        return 0.9 if ADD in self._see(exchange) else 0.1

    def review(self, memory):
        return Verdict.KEEP


class EchoChat:
    """Writes a memory as the whole exchange: a foreign line would show up in its text."""

    def write_memory(self, exchange, current):
        return MemoryDraft(exchange.render())

    def write_reply(self, prompt):
        return "ok"

    def write_diary(self, transcript, language="ja"):
        return "日記"


turns = st.lists(
    st.tuples(st.sampled_from(PEOPLE), st.sampled_from((ADD, DEL, "hello")), st.integers(0, 3)), min_size=1, max_size=14
)


def only_own_lines(exchange: Exchange) -> bool:
    return all(m.is_bot or m.author_id == exchange.speaker.user_id for m in exchange.messages) and all(
        m.conversation_of == exchange.speaker.user_id for m in exchange.messages
    )


@settings(max_examples=examples(60), deadline=None)
@given(turns, st.booleans())
def test_live_extraction_never_decides_on_someone_elses_words(events, whole_channel):
    """``whole_channel``: the extractor is handed the channel's whole tail instead of the
    person's conversation, so the core's own rule (``Exchange.of``) is what is tested."""
    clock = Clock()
    memories, log, jev = FakeMemoryStore(clock), FakeMessageStore(), NaiveJev()
    extractor = Extractor(memories, jev, EchoChat(), clock=clock)
    pending: list[tuple[int, str]] = []  # (turns until the reply lands, person)
    at = T0
    for turn, (person, marker, lag) in enumerate(events):
        at += timedelta(seconds=1)
        log.put(message(person, f"I love {marker} thing{turn} said-by-{person}", at=at))
        pending.append((lag, person))
        # Replies land after other people may have spoken; each reply ends its person's exchange.
        due = [p for p in pending if p[0] == 0]
        pending = [(lag - 1, p) for lag, p in pending if lag > 0]
        for _, who in due:
            at += timedelta(milliseconds=10)
            reply = message("bot", "ok", at=at, bot=True, to=who)
            log.put(reply)
            before = {p: memories.of(owner(p)) for p in PEOPLE}
            if whole_channel:
                exchange_lines = log.recent("c1", 50, up_to=reply.message_id)
            else:
                exchange_lines = log.conversation("c1", who, EXCHANGE_MESSAGES, up_to=reply.message_id)
            extractor.run(speaker(who), "global", exchange_lines, actor=Actor.EXTRACTION)
            others = [p for p in PEOPLE if p != who]
            assert all(memories.of(owner(p)) == before[p] for p in others), "only the speaker's profile may change"
    assert all(only_own_lines(e) for e in jev.shown)
    for person in PEOPLE:
        assert all(
            f"said-by-{person}" in m.text and all(f"said-by-{o}" not in m.text for o in PEOPLE if o != person)
            for m in memories.of(owner(person))
        )


@settings(max_examples=examples(40), deadline=None)
@given(turns, st.lists(st.sampled_from(("x", "y")), max_size=5))
def test_nightly_never_decides_on_someone_elses_words(events, history_authors):
    clock = Clock(T0)
    memories, log, runs, jev = FakeMemoryStore(clock), FakeMessageStore(), FakeRunStore(), NaiveJev()
    at = T0
    for turn, (person, marker, _) in enumerate(events):
        at += timedelta(seconds=1)
        log.put(message(person, f"I love {marker} thing{turn} said-by-{person}", at=at, scope=SCOPE))
        log.put(message("bot", "ok", at=at + timedelta(milliseconds=5), bot=True, to=person, scope=SCOPE))
    for turn, author in enumerate(history_authors):  # people who never used the bot
        at += timedelta(seconds=1)
        log.put(message(author, f"I love {ADD} channel-only {turn} said-by-{author}", at=at, to="", scope=SCOPE))
    extractor = Extractor(memories, jev, EchoChat(), clock=clock)
    nightly = Consolidator(memories, log, runs, extractor, jev, EchoChat(), manifests=InMemoryManifests(), clock=clock)
    assert run_in_process(nightly, T0 + timedelta(days=1)) is not None
    assert all(only_own_lines(e) and e.scope == SCOPE for e in jev.shown)
    assert not {e.speaker.user_id for e in jev.shown} & set(history_authors), (
        "no profile for people who never used the bot"
    )
    for author in ("x", "y"):
        assert memories.of(owner(author, SCOPE)) == []
    for person in PEOPLE:
        assert all(
            all(f"said-by-{o}" not in m.text for o in PEOPLE + ("x", "y") if o != person)
            for m in memories.of(owner(person, SCOPE))
        )
