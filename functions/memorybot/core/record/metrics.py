"""What the bot counts for its operator, in one place: the metric names and how a turn, a
forget and a night become counts on the ``Metrics`` port (docs/operations.md lists them all).

Counts only, never text or ids: a metric's dimensions are the function that emitted it and, for
model calls, the call's purpose and model id.
"""

from __future__ import annotations

from .changes import NightlyRun
from .ports import Metrics

# A /chat turn answered (the reply worker) and what learning made of it (the extraction worker;
# "paused" also from the reply worker, which then hands nothing on).
TURNS = "Turns"
TURN_OUTCOMES = {
    "done": "TurnsDone",
    "not_worth": "TurnsNotWorth",
    "no_decision": "TurnsNoDecision",
    "paused": "TurnsPaused",
}
MEMORIES_ADDED = "MemoriesAdded"
MEMORIES_UPDATED = "MemoriesUpdated"
MEMORIES_DELETED = "MemoriesDeleted"
MEMORIES_DECAYED = "MemoriesDecayed"
MEMORIES_FORGOTTEN = "MemoriesForgotten"
# Every model request that answered, by purpose and model (adapters/metering.py).
MODEL_REQUESTS = "ModelRequests"
INPUT_TOKENS = "InputTokens"
OUTPUT_TOKENS = "OutputTokens"
MODEL_LATENCY = "ModelLatency"
ESTIMATED_COST = "EstimatedCostUSD"
MODEL_THROTTLES = "ModelThrottles"  # attempts the provider throttled (each retried or given up)
MODEL_RETRIES = "ModelRetries"  # attempts repeated after a server error or a timeout
# The night's (the finish step's, once per run).
NIGHT_RUNS = "NightRuns"
NIGHT_SPEAKERS = "NightSpeakers"
NIGHT_FAILED_SPEAKERS = "NightFailedSpeakers"
NIGHT_CHUNKS = "NightChunks"
NIGHT_REVIEWS = "NightReviews"
NIGHT_DIARIES = "NightDiaries"
# Emitted as before (handlers.count_metric, the service dimension only): its alarm reads it so.
DECISIONS_LOST = "DecisionsLost"

# The purposes of model calls (a metric dimension): the decision questions by their name, the
# writing tasks by theirs.
PURPOSES = ("worth", "decide", "write", "reply", "review", "diary", "embed")
_TASK_PURPOSES = {"write_memory": "write", "write_diary": "diary"}


def purpose_of(task_name: str) -> str:
    """The metric purpose of a question or writing task (``worth``, ``write_memory``...)."""
    return _TASK_PURPOSES.get(task_name, task_name)


def record_turn(metrics: Metrics, outcome: str) -> None:
    """What learning made of one turn: one count of its outcome (others, e.g. decisions lost or
    an exchange with nothing in it, have no outcome metric)."""
    name = TURN_OUTCOMES.get(outcome)
    if name is not None:
        _add(metrics, name)


def record_changes(metrics: Metrics, *, added: int = 0, updated: int = 0, deleted: int = 0) -> None:
    for name, count in ((MEMORIES_ADDED, added), (MEMORIES_UPDATED, updated), (MEMORIES_DELETED, deleted)):
        if count:
            _add(metrics, name, count)


def record_night(metrics: Metrics, run: NightlyRun) -> None:
    """A finished night: its speakers, chunks, reviews and diary, and the changes it made (each
    from the run record, so a redriven run is counted by what it did, once)."""
    s = run.summary
    _add(metrics, NIGHT_RUNS)
    _add(metrics, NIGHT_SPEAKERS, s.speakers)
    _add(metrics, NIGHT_FAILED_SPEAKERS, len(s.failed_speakers))
    _add(metrics, NIGHT_CHUNKS, s.chunks)
    _add(metrics, NIGHT_REVIEWS, s.reviews)
    _add(metrics, NIGHT_DIARIES, 1 if run.diary else 0)
    record_changes(metrics, added=len(s.added), updated=len(s.updated), deleted=len(s.deleted))
    if s.decayed:
        _add(metrics, MEMORIES_DECAYED, len(s.decayed))


def _add(metrics: Metrics, name: str, value: float = 1.0) -> None:
    metrics.add(name, value)


class NoMetrics:
    """Counts nothing: the default of a use case or adapter built without a metrics port."""

    def add(self, name: str, value: float = 1.0, *, unit: str = "Count", purpose: str = "", model: str = "") -> None:
        return None

    def flush(self) -> None:
        return None


NO_METRICS = NoMetrics()
