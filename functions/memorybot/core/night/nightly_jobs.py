"""The typed payloads between the nightly run's steps (the state machine's states, and the
local stack's in-process run of the same steps).

Like ``jobs.py``, and through its one validator (``Payload``): frozen dataclasses with one JSON
round-trip; ``from_json`` refuses (``BadJob``) a payload with a missing, unknown or mistyped
field, naming fields, never values. Ids only: a payload never carries message or memory text.
The handlers parse and serialise at the edge; the steps (``nightly_steps``) take and answer
these types. The step marks (``SpeakerMark``, ``ReviewMark``) are what the run store keeps of a
finished step, through the same round-trip.

The flow: ``NightlyStart`` -> claim -> ``ClaimedRun`` -> plan -> ``RunPlan`` -> the map over
the manifest's speakers, each ``SpeakerTask`` (a failed one, after its retries, as
``SpeakerFailure``; either answers ``SpeakerDone``) -> review (``RunPlan``) -> finish
(``RunPlan`` -> ``RunFinished``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..record.jobs import Payload

CLAIMED = "claimed"
ALREADY_CLAIMED = "already_claimed"


@dataclass(frozen=True)
class NightlyStart(Payload):
    """The schedule's time (EventBridge's ``time``): the run is as of it, so a late start names the same day."""

    time: str


@dataclass(frozen=True)
class ClaimedRun(Payload):
    """``status`` is ``claimed`` (run_id is the day's run) or ``already_claimed`` (nothing to do, run_id 0)."""

    status: str
    run_id: int
    day_label: str
    as_of: str


@dataclass(frozen=True)
class RunPlan(Payload):
    """The claimed run and where its manifest is (one entry per speaker: owner and message ids)."""

    run_id: int
    day_label: str
    as_of: str
    manifest: str  # the manifest's key in the manifest store
    speakers: int


@dataclass(frozen=True)
class SpeakerTask(Payload):
    """One speaker of one run: an Owner (scope, user) and their messages as [channel id, message id]."""

    run_id: int
    scope: str
    user_id: str
    messages: list[list[str]]

    @property
    def speaker_key(self) -> str:
        return f"{self.scope}#{self.user_id}"


@dataclass(frozen=True)
class SpeakerFailure(Payload):
    """A speaker whose step still failed after its retries (the map's Catch): ``error`` is the
    state machine's ``{"Error", "Cause"}``; only the error's name is kept."""

    run_id: int
    scope: str
    user_id: str
    messages: list[list[str]]
    error: dict

    @property
    def speaker_key(self) -> str:
        return f"{self.scope}#{self.user_id}"


@dataclass(frozen=True)
class SpeakerDone(Payload):
    """A map child's answer: the speaker (``scope#user``) and its mark's status."""

    run_id: int
    speaker: str
    status: str  # "done" or "failed"


@dataclass(frozen=True)
class RunFinished(Payload):
    run_id: int
    day_label: str
    status: str  # "done"


@dataclass(frozen=True)
class SpeakerMark(Payload):
    """What the run store keeps of one speaker's step: ``done`` with its counts, or ``failed``
    with the error's name (a mark written before a field existed reads it as its default)."""

    status: str
    chunks: int = 0
    failures: int = 0
    model_calls: int = 0
    conflicts: int = 0
    error: str = ""


@dataclass(frozen=True)
class ReviewMark(Payload):
    """What the run store keeps of the run's review step: the diary and the review's counts."""

    diary: str = ""
    failures: int = 0
    conflicts: int = 0
    model_calls: int = 0
    reviewed: int = 0  # memories put to the review question
    embedded: int = 0  # the embedding backfill's: memories given a vector
    embedding_cursor: str = ""  # where the next night's backfill goes on
    embedding_error: str = ""  # the error's name when the backfill could not list memories


def manifest_entry(scope: str, user_id: str, messages: list[tuple[str, str]]) -> dict[str, Any]:
    """One line of the manifest (what the map's ItemSelector passes on with the run id)."""
    return {"scope": scope, "user_id": user_id, "messages": [[c, m] for c, m in messages]}


@dataclass(frozen=True)
class DiaryMark(Payload):
    """What the run store keeps of one server's own diary (core/rights/servers.py): posted, refused by
    Discord (its code: posting stops until the admins set the channel again) or failed. A mark is
    checked before posting, so a retried review step never posts a server's diary twice."""

    status: str  # posted | refused | failed | empty
    code: int = 0
