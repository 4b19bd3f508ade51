"""The offline stand-in's one decision is exactly its per-record rules: on generated exchanges and
profiles (English and Japanese, re-mentions, forgets, small talk), ``decide`` gives every memory
the verdict ``verdict`` gives it alone, and the add ``add`` gives once every memory is judged."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import T0, memory, message, speaker
from hypothesis_profiles import examples
from memorybot.adapters.offline import ADD_NO, ADD_YES, OfflineDecisionModel
from memorybot.core.prompting.decisions import decide_per_record
from memorybot.core.record.domain import GLOBAL_SCOPE, Exchange, Verdict

# Fragments that the stand-in's rules react to (self-statements, forgets, keywords) and some that
# they do not, so generated lines re-mention, change, forget or ignore generated memories.
OPENERS = [
    "I love",
    "I moved to",
    "My sister lives in",
    "I no longer like",
    "forget that I like",
    "I think",
    "",
    "私は",
    "もう",
]
THINGS = [
    "green tea",
    "black tea",
    "Osaka",
    "Kobe",
    "the cello",
    "jazz",
    "my cat Tama",
    "猫",
    "京都",
    "コーヒー",
    "hiking",
]
TAILS = ["", "now", "anymore", "since May", "が好き", "に住んでいる", "ない", "!", "today"]
SMALL_TALK = ["hi", "how are you?", "what time is it", "おはよう"]

lines = st.one_of(
    st.builds(
        lambda o, t, e: " ".join(p for p in (o, t, e) if p),
        st.sampled_from(OPENERS),
        st.sampled_from(THINGS),
        st.sampled_from(TAILS),
    ),
    st.sampled_from(SMALL_TALK),
)
facts = st.builds(
    lambda t, e: f"{t} {e}".strip(), st.sampled_from(THINGS + ["likes " + t for t in THINGS]), st.sampled_from(TAILS)
)
JEV = OfflineDecisionModel()


def _exchange(said: list[str]) -> Exchange:
    talk = [message("u1", text, name="alice") for text in said] + [message("b", "Nice!", bot=True, to="u1")]
    made = Exchange.of(speaker("u1", "alice"), GLOBAL_SCOPE, talk)
    assert made is not None
    return made


@settings(max_examples=examples(300), deadline=None)
@given(said=st.lists(lines, min_size=1, max_size=3), texts=st.lists(facts, min_size=1, max_size=10))
def test_the_one_decision_is_the_per_record_rules(said, texts):
    exchange = _exchange(said)
    profile = [memory("u1", f"m{i:04d}", text, at=T0) for i, text in enumerate(texts)]
    one = JEV.decide(exchange, profile)
    per_record = decide_per_record(JEV, exchange, profile)
    assert dict(one.verdicts) == dict(per_record.verdicts)
    assert one.add == per_record.add
    assert one.requests == 1 and per_record.requests == len(profile) + 1


@pytest.mark.parametrize(
    "said, text, verdict, add",
    [
        ("I love black tea now", "loves green tea", Verdict.UPDATE, ADD_NO),  # a re-mention: no add
        ("forget that I like jazz", "likes jazz", Verdict.DELETE, ADD_NO),
        ("I moved to Osaka", "likes jazz", Verdict.KEEP, ADD_YES),  # a new fact
        ("hi", "likes jazz", Verdict.KEEP, ADD_NO),
    ],
)
def test_the_rules_compared_reach_every_verdict_and_both_adds(said, text, verdict, add):
    """What the property compares is not idle: keep, update and delete, an add and none."""
    decision = JEV.decide(_exchange([said]), [memory("u1", "m0001", text)])
    assert dict(decision.verdicts) == {"m0001": verdict} and decision.add == add
