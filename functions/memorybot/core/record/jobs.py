"""The typed messages that travel between functions (cosmicpython's commands).

Each is a frozen dataclass with one JSON round-trip: ``to_json`` builds the event an
invoker sends, ``from_json`` reads it back and refuses (``BadJob``) anything that does not
fit, so a misspelt key fails loudly at the edge instead of deep in an async retry. None has a
generated ``__repr__``: a job carries a member's words and an interaction's token, and a log line
names its ids only (``Job.ids``); leaving it out also spares the cold start building one.
``Payload`` is that round-trip, once, for the workers' jobs and the nightly steps' payloads
(``nightly_jobs.py``) alike.
"""

from __future__ import annotations

import typing
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar, TypeVar

P = TypeVar("P", bound="Payload")


class BadJob(ValueError):
    """An event that is not the job its worker expects (the message names fields, never values)."""


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
    if kind is dict or typing.get_origin(kind) is dict:
        return isinstance(value, dict)
    raise TypeError(f"unsupported payload field type {kind!r}")


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


@dataclass(frozen=True, repr=False)
class Payload:
    """The one validator of every message between functions and steps: ``from_json`` refuses
    (``BadJob``) an event with a missing, unknown or mistyped field, naming fields, never values.
    A field with a default may be absent (an event sent before the field existed)."""

    def to_json(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_json(cls: type[P], event: Any) -> P:
        if not isinstance(event, dict):
            raise BadJob(f"{cls.__name__}: not an object")
        hints = typing.get_type_hints(cls)
        names = [f.name for f in fields(cls)]
        required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
        missing = sorted(n for n in required if n not in event)
        unknown = sorted(k for k in event if k not in names)
        if missing or unknown:
            raise BadJob(f"{cls.__name__}: missing {missing}, unknown {unknown}")
        wrong = sorted(n for n in names if n in event and not _fits(event[n], hints[n]))
        if wrong:
            raise BadJob(f"{cls.__name__}: wrong type: {wrong}")
        return cls(**{n: event[n] for n in names if n in event})


@dataclass(frozen=True, repr=False)
class Job(Payload):
    """A worker's job: text fields only (ids are Discord snowflakes, kept as text), done once per
    interaction (its id is the job's idempotency key)."""

    WORKER: ClassVar[str] = ""

    interaction_id: str

    def ids(self) -> dict[str, str]:
        """What a log line may carry about the job: ids, never text or tokens."""
        # guild_id is left out: the scope names the server already where memories are kept per server.
        return {k: v for k, v in self.to_json().items() if (k.endswith("_id") and k != "guild_id") or k == "scope"}


@dataclass(frozen=True, repr=False)
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
    guild_id: str = ""  # the server it was said in ("" elsewhere): its settings apply (core/rights/servers.py)


@dataclass(frozen=True, repr=False)
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
    # The interaction, for the receipt of what the turn changed (an ephemeral follow-up on it,
    # within its 15 minutes); empty in a job sent before receipts existed: no receipt.
    token: str = ""
    application_id: str = ""
    locale: str = ""
    guild_id: str = ""  # the server it was said in ("" elsewhere): its settings apply

    @classmethod
    def after_reply(cls, job: ReplyJob, reply_message_id: str) -> ExtractionJob:
        return cls(
            job.interaction_id,
            job.channel_id,
            job.user_id,
            job.user_name,
            job.scope,
            reply_message_id,
            job.token,
            job.application_id,
            job.locale,
            guild_id=job.guild_id,
        )


@dataclass(frozen=True, repr=False)
class RememberJob(Job):
    """ "Remember this" on the person's own message: the exchange is that message alone, at its
    own time (interactions function → extraction worker, which fills in the deferred answer).
    The message's text travels in the job: Discord handed it over with the command, and it may be
    one the bot never stored (any ordinary message in the channel)."""

    WORKER: ClassVar[str] = "extraction"

    interaction_id: str
    token: str
    application_id: str
    channel_id: str
    user_id: str
    user_name: str
    scope: str
    locale: str
    target_message_id: str  # the message pointed at: the memory's source
    content: str
    guild_id: str = ""  # the server it was said in ("" elsewhere): its settings apply


@dataclass(frozen=True, repr=False)
class ForgetAllJob(Job):
    """A confirmed ``/memory forget-all``: delete every memory of the person in the scope, then
    update the confirmation (interactions function → extraction worker, whose role already
    deletes memories with their rows). ``forget_all_started`` is the stamp on the person's record
    (``domain.iso``); ``where`` the scope in the person's words, as the confirmation said it."""

    WORKER: ClassVar[str] = "extraction"

    interaction_id: str
    token: str
    application_id: str
    user_id: str
    scope: str
    locale: str
    where: str
    forget_all_started: str
    everywhere: bool = False  # everywhere:true: the person's own scope's memories too (core/rights/everywhere.py)
