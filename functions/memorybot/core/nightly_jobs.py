"""The typed payloads between the nightly run's steps (the state machine's states, and the
local stack's in-process run of the same steps).

Like ``jobs.py``: frozen dataclasses with one JSON round-trip; ``from_json`` refuses
(``BadJob``) a payload with a missing, unknown or mistyped field, naming fields, never
values. Ids only: a payload never carries message or memory text.

The flow: ``NightlyStart`` -> claim -> ``ClaimedRun`` -> plan -> ``RunPlan`` -> the map over
the manifest's speakers, each ``SpeakerTask`` (a failed one, after its retries, as
``SpeakerFailure``) -> review (``RunPlan``) -> finish (``RunPlan`` -> ``RunFinished``).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

from .jobs import BadJob

P = TypeVar("P", bound="StepPayload")

CLAIMED = "claimed"
ALREADY_CLAIMED = "already_claimed"


def _fits(value: Any, kind: Any) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is str:
        return isinstance(value, str)
    if typing.get_origin(kind) is list:
        [inner] = typing.get_args(kind)
        return isinstance(value, list) and all(_fits(v, inner) for v in value)
    if kind is dict:
        return isinstance(value, dict)
    raise TypeError(f"unsupported payload field type {kind!r}")


@dataclass(frozen=True)
class StepPayload:
    STEP: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_json(cls: type[P], event: Any) -> P:
        if not isinstance(event, dict):
            raise BadJob(f"{cls.__name__}: not an object")
        hints = typing.get_type_hints(cls)
        names = [f.name for f in fields(cls)]
        missing = sorted(n for n in names if n not in event)
        unknown = sorted(k for k in event if k not in names)
        if missing or unknown:
            raise BadJob(f"{cls.__name__}: missing {missing}, unknown {unknown}")
        wrong = sorted(n for n in names if not _fits(event[n], hints[n]))
        if wrong:
            raise BadJob(f"{cls.__name__}: wrong type: {wrong}")
        return cls(**{n: _frozen(event[n]) for n in names})


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def _frozen(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


@dataclass(frozen=True)
class NightlyStart(StepPayload):
    """The schedule's time (EventBridge's ``time``): the run is as of it, so a late start names the same day."""

    time: str


@dataclass(frozen=True)
class ClaimedRun(StepPayload):
    """``status`` is ``claimed`` (run_id is the day's run) or ``already_claimed`` (nothing to do, run_id 0)."""

    status: str
    run_id: int
    day_label: str
    as_of: str


@dataclass(frozen=True)
class RunPlan(StepPayload):
    """The claimed run and where its manifest is (one entry per speaker: owner and message ids)."""

    run_id: int
    day_label: str
    as_of: str
    manifest: str  # the manifest's key in the manifest store
    speakers: int


@dataclass(frozen=True)
class SpeakerTask(StepPayload):
    """One speaker of one run: an Owner (scope, user) and their messages as [channel id, message id]."""

    run_id: int
    scope: str
    user_id: str
    messages: list[list[str]]

    @property
    def speaker_key(self) -> str:
        return f"{self.scope}#{self.user_id}"


@dataclass(frozen=True)
class SpeakerFailure(StepPayload):
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
class RunFinished(StepPayload):
    run_id: int
    day_label: str
    status: str  # "done"


def manifest_entry(scope: str, user_id: str, messages: list[tuple[str, str]]) -> dict[str, Any]:
    """One line of the manifest (what the map's ItemSelector passes on with the run id)."""
    return {"scope": scope, "user_id": user_id, "messages": [[c, m] for c, m in messages]}
