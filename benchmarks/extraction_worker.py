"""One extraction at a time, in a process of its own, for ``extraction_bench``: the write path of
whichever source tree is first on ``PYTHONPATH`` (this one, or the per-record one it is compared
with), through the real OpenAI-compatible adapters (chat completions and embeddings, one limiter,
the shared retry policy) against the loopback servers the benchmark runs.

The adapters are dated as the deployed factory dates them (``MEMORYBOT_TIMEZONE``, Asia/Tokyo by
default: today and each line's own time in the prompts) when the tree has dates; the per-record
tree predates them, so its prompts carry none. The exchange is a live turn: three lines over the
two minutes before now, the memories learned over the weeks before.

It reads one JSON request a line on stdin ``{"chat": url, "embed": url, "memories": n}`` and answers
one JSON line: how long ``Extractor.run`` took, when its last change was committed, and what it
did. It imports only what both trees have, so that the same harness drives both.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx

from memorybot.adapters.embeddings import OpenAIEmbeddings
from memorybot.adapters.limiter import ModelCallLimiter
from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAICompatibleClient, OpenAIDecisionModel
from memorybot.adapters.retry import Retrier
from memorybot.config import Settings
from memorybot.core.record.domain import GLOBAL_SCOPE
from memorybot.core.turn.extraction import Extractor
from tests.fakes import Clock, FakeMemoryStore, memory, message, speaker

MAX_IN_FLIGHT = 32  # the default MEMORYBOT_MODEL_MAX_IN_FLIGHT
FACTS = (
    "Lives in Kobe with her partner",
    "Works as a nurse at a children's hospital",
    "Has a cat called Tama",
    "Plays the cello in a community orchestra",
    "Loves green tea, especially gyokuro",
    "Is learning Spanish for a trip to Seville next spring",
    "Her sister Mei lives in Vancouver",
    "Runs 5 km most mornings before work",
    "Is allergic to peanuts",
    "Prefers mountains to beaches for holidays",
    # beyond ten: the ten are ranked, with the query's embedding
    "Collects vintage film cameras",
    "Volunteers at an animal shelter on Sundays",
)
SAID = (  # (who, what, seconds before now)
    ("alice", "I moved to Osaka last month for a new job at a game studio", 110),
    ("bot", "Congratulations! How are you finding Osaka so far?", 95),
    ("alice", "I love it, the food is great and my commute is only ten minutes", 20),
)
NOW = datetime(2026, 12, 1, 11, 30, tzinfo=UTC)  # 20:30 in Tokyo: one date in every zone near it
ZONE = getattr(Settings.from_env(), "zone", None)  # MEMORYBOT_TIMEZONE, as deployed; None: a tree without dates


def dated(model):
    """The factory's dating (the zone, and the clock the prompts' "today" is read from), where the
    tree's backends show dates."""
    if ZONE is not None and hasattr(model, "zone"):
        model.zone, model.clock = ZONE, lambda: NOW
    return model


@functools.cache
def adapters(chat_url: str, embed_url: str) -> tuple[OpenAICompatibleClient, OpenAIEmbeddings]:
    """Wired once for the worker's life, as a warm function's composition root wires them once: a
    run after the first finds its connections open, as a deployed turn after the first does."""
    retrier = Retrier(None, ModelCallLimiter(MAX_IN_FLIGHT))  # one limiter for chat and embeddings
    client = OpenAICompatibleClient(
        chat_url, "bench", timeout_seconds=8.0, max_connections=MAX_IN_FLIGHT, retrier=retrier
    )
    embeddings = OpenAIEmbeddings(
        embed_url,
        "bench-embed",
        dimensions=64,
        timeout_seconds=8.0,
        max_connections=MAX_IN_FLIGHT,
        retrier=retrier,
    )
    return client, embeddings


def one(request: dict) -> dict:
    client, embeddings = adapters(request["chat"], request["embed"])
    store = FakeMemoryStore(clock=Clock(NOW))
    store.seed(
        *(
            memory("u1", f"m{c}222", text, at=NOW - timedelta(days=60 - 4 * i, hours=i))
            for i, (c, text) in enumerate(zip("abcdefghjkmn", FACTS[: request["memories"]], strict=False))
        )
    )
    committed: list[float] = []  # each change with its ledger row
    original = store.apply

    def timed(*args, **kwargs):
        entry = original(*args, **kwargs)
        committed.append(time.perf_counter())
        return entry

    store.apply = timed  # type: ignore[method-assign]
    dates = {"zone": ZONE} if ZONE is not None else {}  # the day a memory's end is checked against
    jev, chat = dated(OpenAIDecisionModel(client)), dated(OpenAIChatModel(client))
    extractor = Extractor(store, jev, chat, embeddings=embeddings, clock=lambda: NOW, **dates)
    talk = [
        message("999", text, name="memorybot", bot=True, to="u1", at=NOW - timedelta(seconds=ago))
        if who == "bot"
        else message("u1", text, name="alice", at=NOW - timedelta(seconds=ago))
        for who, text, ago in SAID
    ]
    started = time.perf_counter()
    result = extractor.run(speaker("u1", "alice"), GLOBAL_SCOPE, talk)
    elapsed = time.perf_counter() - started
    return {
        "elapsed": elapsed,  # until run returned (a vector stored after its write included)
        "committed": (max(committed) - started) if committed else None,  # the last change written
        "model_calls": result.model_calls,
        "updated": len(result.updated),
        "added": len(result.added),
    }


@functools.cache
def bare() -> tuple[httpx.Client, ThreadPoolExecutor]:
    """The floor's client and its ten threads, made once for the worker's life (kept warm)."""
    return httpx.Client(limits=httpx.Limits(max_connections=MAX_IN_FLIGHT)), ThreadPoolExecutor(10)


def floor(request: dict) -> dict:
    """The shape's floor on this machine: a call, then another, then ten at once (as worth, the
    decision and the rewrites), each a bare POST of a small JSON body through one warm httpx
    client to the same server: no prompt, no parsing, no store. What it takes over 3 L is the
    loopback server's and this machine's own (timers, waking up, the loopback), not the path's."""
    client, pool = bare()
    url = request["chat"] + "/chat/completions"

    def call(_: object = None) -> None:
        client.post(url, json={"model": "bench", "messages": [{"role": "user", "content": "floor"}]}).raise_for_status()

    call()  # the connection is open, as the path's are
    started = time.perf_counter()
    call()
    one_call = time.perf_counter() - started
    call()
    list(pool.map(call, range(10)))
    return {"one": one_call, "chain": time.perf_counter() - started}


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            request = json.loads(line)
            print(json.dumps(floor(request) if request.get("floor") else one(request)), flush=True)


if __name__ == "__main__":
    main()
