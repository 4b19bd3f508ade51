"""The metrics of one /chat turn and of one night, read back from the local stack's own output:
the embedded-metric-format lines (one JSON object per line, as CloudWatch Logs reads them) that
the functions print when an invocation ends. Every model call goes to a loopback
OpenAI-compatible server that reports its own usage, so the token counts can be held to it."""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from stack_process import StackProcess

from loopback.openai_server import OpenAIServer
from memorybot.config import DEFAULT_MODEL_PRICES, estimated_cost
from memorybot.core.night.window import window_for
from memorybot.core.record import metrics as names
from memorybot.core.record.domain import iso, utcnow
from memorybot.local.client import LocalClient, find_admin_secret, find_signing_key

MODEL = "gpt-4o-mini"  # priced by default: the estimated cost is checked against its price
ALLOWED_DIMENSIONS = {"service", "function", "purpose", "model"}
WAIT_SECONDS = 30


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAIServer]:
    with OpenAIServer(default_probability=0.9, default_verdict="keep") as server:
        yield server


@pytest.fixture(scope="module")
def running(llm, tmp_path_factory) -> Iterator[StackProcess]:
    state_dir = tmp_path_factory.mktemp("memorybot-metrics")
    env = {
        "MEMORYBOT_DECISION_MODEL": "openai",
        "MEMORYBOT_CHAT_MODEL": "openai",
        "OPENAI_BASE_URL": llm.url,
        "OPENAI_API_KEY": "sk-loopback",
        "OPENAI_MODEL": MODEL,
    }
    stack = StackProcess(state_dir, env)
    stack.state_dir = state_dir  # type: ignore[attr-defined]
    yield stack
    stack.stop()


def emf_lines(output: list[str]) -> list[dict]:
    """Every metric line printed: a JSON object with CloudWatch's ``_aws`` metadata."""
    found = []
    for line in output:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "_aws" in value:
            found.append(value)
    return found


class Metric:
    """What a set of EMF lines says: each metric's values, by name, and by (name, purpose)."""

    def __init__(self, lines: list[dict]) -> None:
        self.lines = lines
        self.values: dict[str, list[float]] = defaultdict(list)
        self.by_purpose: dict[tuple[str, str], list[float]] = defaultdict(list)
        for line in lines:
            [directive] = line["_aws"]["CloudWatchMetrics"]
            assert directive["Namespace"] == "MemoryBot"
            [dimensions] = directive["Dimensions"]
            assert set(dimensions) <= ALLOWED_DIMENSIONS, dimensions
            for metric in directive["Metrics"]:
                raw = line[metric["Name"]]
                values = raw if isinstance(raw, list) else [raw]
                self.values[metric["Name"]] += values
                if "purpose" in line:
                    assert line["model"] == MODEL
                    self.by_purpose[(metric["Name"], line["purpose"])] += values

    def total(self, name: str) -> float:
        return sum(self.values[name])


def metrics_since(stack: StackProcess, start: int, until: str) -> Metric:
    """The metric lines printed after ``start`` lines of output, once one holds ``until``."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        lines = emf_lines(stack.output[start:])
        if any(until in line for line in lines) or time.monotonic() > deadline:
            return Metric(lines)
        time.sleep(0.1)


def test_one_chat_turn_and_one_night_as_metric_lines(running, llm):
    url, state_dir = running.url, running.state_dir  # type: ignore[attr-defined]
    admin_secret = find_admin_secret(state_dir)
    with httpx.Client(timeout=60) as http:
        ren = LocalClient(
            url, "ren-metrics", find_signing_key(state_dir), "1400000000000000001", http=http, admin_secret=admin_secret
        )
        ren.catch_up()

        # ---- one /chat turn: the reply, then the extraction after it (drained by the client)
        start, llm.usage_given = len(running.output), []
        answer = ren.chat("I grow tomatoes on my balcony every summer")
        assert any(line.startswith("memorybot: ") for line in answer), answer
        turn = metrics_since(running, start, names.TURN_OUTCOMES["done"])
        usage = list(llm.usage_given)
        print("\n".join(json.dumps(line, separators=(",", ":")) for line in turn.lines))

        assert turn.total(names.TURNS) == 1  # counted once
        assert turn.total(names.TURN_OUTCOMES["done"]) == 1
        assert all(turn.total(n) == 0 for o, n in names.TURN_OUTCOMES.items() if o != "done")
        assert turn.total(names.MEMORIES_ADDED) == 1
        assert turn.total(names.MODEL_REQUESTS) == len(usage) >= 3  # reply, worth, the new memory's text
        assert turn.total(names.INPUT_TOKENS) == sum(u["prompt_tokens"] for u in usage) > 0
        assert turn.total(names.OUTPUT_TOKENS) == sum(u["completion_tokens"] for u in usage) > 0
        assert len(turn.values[names.MODEL_LATENCY]) == len(usage)
        assert all(0 < ms < 60_000 for ms in turn.values[names.MODEL_LATENCY])
        tokens = int(turn.total(names.INPUT_TOKENS)), int(turn.total(names.OUTPUT_TOKENS))
        expected_cost = estimated_cost(DEFAULT_MODEL_PRICES[MODEL], *tokens)
        assert turn.total(names.ESTIMATED_COST) == pytest.approx(expected_cost)
        purposes = {purpose for (name, purpose) in turn.by_purpose if name == names.MODEL_REQUESTS}
        assert {"reply", "worth", "write"} <= purposes <= {"reply", "worth", "decide", "write"}
        assert turn.by_purpose[(names.MODEL_REQUESTS, "reply")] == [1]
        assert turn.total(names.MODEL_THROTTLES) == 0 and turn.total(names.MODEL_RETRIES) == 0
        # Nobody's id is in a metric line.
        printed = json.dumps(turn.lines)
        assert ren.user_id not in printed and "1400000000000000001" not in printed

        # ---- the night that covers the turn (POST /local/nightly, as the schedule would start it)
        start, llm.usage_given = len(running.output), []
        now = iso(window_for(utcnow()).end + timedelta(days=1))
        run = http.post(
            f"{url}/local/nightly", json={"now": now}, headers={"Authorization": f"Bearer {admin_secret}"}, timeout=300
        )
        assert run.status_code == 200, run.text
        summary = run.json()["summary"]
        night = metrics_since(running, start, names.NIGHT_RUNS)
        usage = list(llm.usage_given)
        print("\n".join(json.dumps(line, separators=(",", ":")) for line in night.lines))

        assert night.total(names.NIGHT_RUNS) == 1
        assert night.total(names.NIGHT_SPEAKERS) == 1 == summary["speakers"]
        assert night.total(names.NIGHT_FAILED_SPEAKERS) == 0
        assert night.total(names.NIGHT_CHUNKS) == 1 == summary["chunks"]
        assert night.total(names.NIGHT_REVIEWS) == summary["reviews"] == 0  # nothing is 30 days old yet
        assert night.total(names.NIGHT_DIARIES) == 1
        assert night.total(names.MEMORIES_ADDED) == len(summary["added"])
        assert night.total(names.MODEL_REQUESTS) == len(usage) == summary["model_calls"]
        assert night.total(names.INPUT_TOKENS) == sum(u["prompt_tokens"] for u in usage)
        assert night.total(names.OUTPUT_TOKENS) == sum(u["completion_tokens"] for u in usage)
        night_purposes = Counter(p for (name, p), v in night.by_purpose.items() if name == names.MODEL_REQUESTS)
        assert "diary" in night_purposes and "reply" not in night_purposes
        assert night.total(names.TURNS) == 0  # a night is not a turn
