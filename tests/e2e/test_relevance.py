"""The relevant ten, over HTTP against a local stack of its own with the offline stand-ins (as
`make run` starts it; the offline embedding model included): a person with twelve memories asks
about their oldest fact and the reply prompt holds it (the stand-in reply lists exactly the
memories quoted in its prompt); they re-mention it and it is updated, not duplicated."""

from __future__ import annotations

import httpx
import pytest
from stack_process import StackProcess

from memorybot.local.client import LocalClient, find_admin_secret, find_signing_key

# Twelve self-statements with no keyword in common (the stand-in decides by shared keywords),
# oldest first: the hiking fact is the oldest, so the design's newest ten leave it out.
FACTS = [
    "I love hiking in the Alps",
    "I have two cats named Miso and Soba",
    "I play the cello in an orchestra",
    "I work as a nurse at the hospital",
    "I live in Sapporo",
    "I drink matcha every morning",
    "I study Portuguese on weekends",
    "I bought vinyl records",
    "I am allergic to peanuts",
    "I grow tomatoes on my balcony",
    "I use a red bicycle",
    "I read science fiction novels",
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    state_dir = tmp_path_factory.mktemp("relevance-state")
    running = StackProcess(state_dir, {})
    yield running.url, state_dir
    running.stop()


@pytest.fixture
def hana(stack):
    url, state_dir = stack
    client = LocalClient(
        url,
        "hana-relevance",
        find_signing_key(state_dir),
        http=httpx.Client(timeout=120),
        admin_secret=find_admin_secret(state_dir),
    )
    client.catch_up()
    yield client
    client.http.close()


def memory_lines(shown: list[str]) -> list[str]:
    """The DM's "<id> [offline] <text>" lines (a post may hold several lines)."""
    return [line for post in shown for line in post.splitlines() if "[offline]" in line]


def test_an_old_fact_is_in_the_reply_prompt_when_asked_about_and_updated_not_duplicated_when_re_mentioned(hana):
    for fact in FACTS:
        hana.chat(fact)
    remembered = memory_lines(hana.show())
    assert len(remembered) == 12, remembered
    assert sum("hiking in the Alps" in line for line in remembered) == 1

    # Asked about the oldest fact (a question, not a statement: nothing is written)
    [answer] = [post for post in hana.chat("What do you remember about hiking?") if "offline stand-in" in post]
    assert "I remember 10 things about you" in answer  # still ten in the prompt, not twelve
    assert "Loves hiking in the Alps" in answer  # the newest ten would not hold it

    # Re-mentioned: Jev judges the selected ten, the oldest among them, so it is updated
    hana.chat("I love hiking in the Dolomites now")
    after = memory_lines(hana.show())
    assert len(after) == 12, after  # not a thirteenth
    hiking = [line for line in after if "hiking" in line]
    assert len(hiking) == 1 and "Dolomites" in hiking[0], hiking
    [original] = [line for line in remembered if "hiking" in line]
    assert hiking[0].split()[0] == original.split()[0]  # the same memory id: the original was updated
