"""The typed messages that travel between functions (cosmicpython's commands).

Each is a frozen dataclass with one JSON round-trip: ``to_json`` builds the event an
invoker sends, ``from_json`` reads it back and refuses (``BadJob``) anything that does not
fit, so a misspelt key fails loudly at the edge instead of deep in an async retry.
Strings only: ids are Discord snowflakes, kept as text.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar, TypeVar

J = TypeVar("J", bound="Job")


class BadJob(ValueError):
    """An event that is not the job its worker expects (the message names fields, never values)."""


@dataclass(frozen=True)
class Job:
    WORKER: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls: type[J], event: Any) -> J:
        if not isinstance(event, dict):
            raise BadJob(f"{cls.__name__}: not an object")
        names = {f.name for f in fields(cls)}
        # A field with a default may be absent (a job sent before the field existed).
        required = {f.name for f in fields(cls) if f.default is MISSING}
        missing = sorted(n for n in required if n not in event)
        unknown = sorted(k for k in event if k not in names)
        if missing or unknown:
            raise BadJob(f"{cls.__name__}: missing {missing}, unknown {unknown}")
        wrong = sorted(n for n in names if n in event and not isinstance(event[n], str))
        if wrong:
            raise BadJob(f"{cls.__name__}: not text: {wrong}")
        return cls(**{n: event[n] for n in names if n in event})

    def ids(self) -> dict[str, str]:
        """What a log line may carry about the job: ids, never text or tokens."""
        return {k: v for k, v in self.to_json().items() if k.endswith("_id") or k == "scope"}


@dataclass(frozen=True)
class ReplyJob(Job):
    """``/chat`` was stored: answer it (interactions function → reply worker)."""

    WORKER: ClassVar[str] = "reply"

    interaction_id: str
    token: str
    application_id: str
    channel_id: str
    user_id: str
    user_name: str
    scope: str
    locale: str = ""  # the person's Discord locale ("ja", "en-US"): the first-use notice's language


@dataclass(frozen=True)
class ExtractionJob(Job):
    """The reply is posted: decide what to remember from the person's own exchange
    (reply worker → extraction worker). ``up_to_message_id`` is the bot's reply: the
    exchange ends there, whatever was said after."""

    WORKER: ClassVar[str] = "extraction"

    interaction_id: str
    channel_id: str
    user_id: str
    user_name: str
    scope: str
    up_to_message_id: str

    @classmethod
    def after_reply(cls, job: ReplyJob, reply_message_id: str) -> ExtractionJob:
        return cls(job.interaction_id, job.channel_id, job.user_id, job.user_name, job.scope, reply_message_id)
