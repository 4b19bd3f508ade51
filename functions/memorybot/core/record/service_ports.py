"""The ports of the services outside the tables: the models, Discord, the hand-off to a worker, and
the metrics. Adapters implement them; unit tests fake them. ``ports`` names them too.

Model ports raise ``ModelError`` (or anything else) on failure; the core treats every exception
and every out-of-range answer as "no decision".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from .catalog import Language
from .domain import Decision, Embedding, Exchange, Memory, MemoryDraft, Message, PromptMessage, Verdict
from .jobs import Job


class ModelError(Exception):
    """A model call failed: error, timeout, or an answer that does not fit the contract."""


class UnusableAnswer(ModelError):
    """The model answered, but not in the form the question asked (no JSON object, a missing key,
    a probability out of range, an empty line...): "no decision", like any other ``ModelError``.
    Its own class so that ``memorybot eval`` can count the answers that failed to parse apart
    from the calls that failed."""


class ModelFailed(ModelError):
    """The service kept failing (server errors, timeouts, no connection) through the call's few
    quick retries: the call has failed, "no answer", like any other ``ModelError``.

    The core gives it the design's rule for a failed call (a verdict's record is left untouched,
    a review keeps the memory...); only where nothing has been decided yet (extraction's "worth")
    is it "not yet" instead.
    """


class ModelUnavailable(ModelError):
    """No answer yet: the model stayed throttled ("slow down") through every retry of the call.

    "Not yet", not "no": the core does not turn it into "no decision" but lets it through, so
    that the job fails before applying anything and runs again later.
    """


class DecisionModel(Protocol):
    """Jev: decides whether and which. Never phrases anything.

    Every question names whose memory it is: the exchange carries its speaker, and the
    stale review's memory its owner. Facts count only if the speaker stated them about
    themselves.
    """

    def worth(self, exchange: Exchange) -> float: ...

    def decide(
        self, exchange: Exchange, memories: Sequence[Memory], early: Callable[[Memory, object], None] | None = None
    ) -> Decision:
        """One decision on every memory shown (keep, update or delete each) and on the add.

        ``memories`` is never empty (with none, the design allows the add without asking).
        Raises when the whole decision failed: then nothing is changed and nothing added.
        ``early``: told each verdict as soon as it is known, when a backend learns them one by
        one (per-record questions), so that a rewrite need not wait for the rest."""

    def review(self, memory: Memory) -> Verdict:
        """Nightly stale review of one owner's memory: KEEP or DELETE."""


class RecordJudge(Protocol):
    """Jev's per-record questions: a verdict on one memory, then the add given every verdict.
    What a Jev service without ``/decide`` answers, and the offline stand-in's rules;
    ``decisions.decide_per_record`` turns them into one ``Decision``."""

    def verdict(self, exchange: Exchange, memory: Memory) -> Verdict: ...

    def add(self, exchange: Exchange, verdicts: Sequence[tuple[Memory, Verdict]]) -> float: ...


class ChatModel(Protocol):
    """Phrases things. Never decides whether to write."""

    def write_memory(self, exchange: Exchange, current: Memory | None) -> MemoryDraft:
        """A new memory about the exchange's speaker (current None) or the rewrite of ``current``:
        its text and its end (the last day a plan holds; None for a durable fact). The core checks
        the end against the record before storing it."""

    def write_reply(self, prompt: Sequence[PromptMessage]) -> str: ...

    def write_diary(self, transcript: str, language: Language = Language.JA) -> str:
        """One line, in ``language`` (the design's servers talk Japanese: MEMORYBOT_DIARY_LANGUAGE)."""


class EmbeddingModel(Protocol):
    """Turns texts into L2-normalised vectors for relevance (selection.py). Failures raise; the
    core then ranks lexically and stores the memory without a vector."""

    model_id: str  # what it stamps on the vectors it makes: vectors of different models never compare

    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        """One embedding per text, in order."""


class DiscordError(Exception):
    """A Discord API call failed (HTTP error, Discord error code, or transport failure)."""

    def __init__(self, message: str, *, status: int = 0, code: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class DmsClosedError(DiscordError):
    """Discord error 50007: the user does not accept DMs from the bot."""


class DiscordApi(Protocol):
    """What the bot asks of Discord. Every post carries allowed_mentions {"parse": []}."""

    def open_dm(self, user_id: str) -> str:
        """The DM channel id with the user."""

    def send_message(self, channel_id: str, content: str) -> str:
        """Post to a channel; the new message's id."""

    def send_file(self, channel_id: str, content: str, filename: str, data: bytes) -> str:
        """Post a message with one attached file; the new message's id."""

    def edit_original(self, application_id: str, token: str, content: str, components: Sequence[dict] = ()) -> str:
        """Fill in a deferred interaction answer (with ``components``: its buttons, rows as Discord
        takes them, built by the discord package); the message's id."""

    def follow_up(self, application_id: str, token: str, content: str, components: Sequence[dict] = ()) -> str:
        """An ephemeral follow-up to an interaction (only the person who asked sees it); its id."""

    def recent_channel_messages(self, channel_id: str, limit: int) -> list[Message]:
        """The channel's newest ordinary messages, oldest first (needs the Message Content intent)."""

    def guild_name(self, guild_id: str) -> str:
        """The server's name (raises when it cannot be read)."""


class AsyncInvoker(Protocol):
    """Hands work to a worker without waiting for it (Lambda "Event" invocation when deployed)."""

    def invoke(self, job: Job) -> None:
        """Send ``job`` (its JSON form) to the worker named by ``job.WORKER``."""


class Metrics(Protocol):
    """Counts and timings for the operator's dashboard (CloudWatch metrics when deployed).

    Dimensions are low-cardinality only: the purpose of a model call (worth, decide, write,
    reply, review, diary, embed) and the model id; never a person, server or channel. An adapter
    buffers what it is given and writes it out when the invocation ends (``flush``)."""

    def add(self, name: str, value: float = 1.0, *, unit: str = "Count", purpose: str = "", model: str = "") -> None:
        """Add ``value`` to the metric ``name`` (``unit``: Count, Milliseconds or None)."""

    def flush(self) -> None:
        """Write out what was added since the last flush (once per invocation)."""
