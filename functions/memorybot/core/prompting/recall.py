"""Reading the relevant ten: what the reply and extraction ask the store for, and with what query.

The query embedding is made only when a ranking needs it: once the profile is loaded, and only
when it holds more than ``limit`` memories (otherwise all of them are read and nothing is
ranked), and never for a reader that does not use what it read (a paused person's reply: the
person's words reach no memory model). The extraction loads the profile beside "worth"
(``read_once``), so that this embedding runs beside that call. A failed, slow or missing
embedding means lexical relevance only.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from ..record.domain import PROFILE_LIMIT, Actor, Embedding, Exchange, Memory, Message, Owner
from ..record.ports import EmbeddingModel, ProfileReader
from .both_scopes import read_both
from .selection import select

logger = logging.getLogger(__name__)

REPLY_QUERY_LINES = 3  # the new message and the speaker's two lines before it
# A query embedding is waited for at most this long once the profile is loaded (it usually
# arrives first: it started before the read). A throttled one is not worth a slower reply:
# past this, that turn is ranked lexically.
QUERY_EMBEDDING_WAIT_SECONDS = 2.0


def reply_query(conversation: Sequence[Message], user_id: str) -> str:
    """What the person is saying: their newest lines (the new message last), never anyone else's
    and never the bot's (its replies quote memories, and would pull the same ones back)."""
    own = [m.content.strip() for m in conversation if not m.is_bot and m.author_id == user_id and m.content.strip()]
    return "\n".join(own[-REPLY_QUERY_LINES:])


def exchange_query(exchange: Exchange) -> str:
    """For extraction: the speaker's own lines of the exchange."""
    return "\n".join(exchange.speaker_said())


class PendingQuery:
    """A query, embedded only if and when a ranking asks for its embedding (or, with ``prefetch``,
    as soon as the profile shows that a ranking will)."""

    def __init__(self, text: str, embeddings: EmbeddingModel | None, limit: int) -> None:
        self.text = text
        self._embeddings = embeddings if text.strip() else None
        self._limit = limit
        self._future: Future[Embedding] | None = None
        self._lock = threading.Lock()

    def prefetch(self, memories: Sequence[Memory]) -> None:
        """Start the embedding now if choosing among ``memories`` will rank them."""
        if len(memories) > self._limit:
            self._started()

    def _started(self) -> Future[Embedding] | None:
        with self._lock:
            if self._future is not None or self._embeddings is None:
                return self._future
            future: Future[Embedding] = Future()
            embeddings, text = self._embeddings, self.text

            def work() -> None:
                try:
                    future.set_result(embeddings.embed([text])[0])
                except BaseException as exc:  # noqa: BLE001 - handed to the reader, which goes on without it
                    future.set_exception(exc)

            # In a thread of its own, so that a slow model costs at most the wait, never the reply.
            threading.Thread(target=work, name="query-embedding", daemon=True).start()
            self._future = future
            return future

    def embedding(self) -> Embedding | None:
        future = self._started()
        if future is None:
            return None
        try:
            return future.result(timeout=QUERY_EMBEDDING_WAIT_SECONDS)
        except Exception as exc:  # noqa: BLE001 - relevance degrades to lexical, the read goes on
            logger.info("query embedding unavailable: lexical relevance only", extra={"error": type(exc).__name__})
            return None

    def choose(self, memories: list[Memory]) -> list[Memory]:
        if len(memories) <= self._limit:
            return select(memories, self.text, limit=self._limit)  # all of them: nothing to rank
        return select(memories, self.text, limit=self._limit, query_embedding=self.embedding())


class _Unwanted(Exception):
    """A read's memories turned out not to be wanted: raised by ``choose``, before the read's row."""


class Recall:
    """The one selection rule for every reader (reply prompt, live and nightly extraction)."""

    def __init__(self, memories: ProfileReader, embeddings: EmbeddingModel | None, *, limit: int = PROFILE_LIMIT):
        self._memories = memories
        self._embeddings = embeddings
        self.limit = limit

    @property
    def embeds(self) -> bool:
        """Whether there is an embedding model to ask."""
        return self._embeddings is not None

    def start(self, query: str) -> PendingQuery:
        """The query for a read; nothing is sent to a model until the read ranks with it."""
        return PendingQuery(query, self._embeddings, self.limit)

    def read(
        self,
        owner: Owner,
        query: PendingQuery,
        *,
        actor: Actor,
        reason: str,
        run_id: int | None = None,
        unused_if: Callable[[], bool] | None = None,
        usable: Callable[[Memory], bool] | None = None,
        entry_id: str = "",
    ) -> list[Memory]:
        """The owner's relevant memories, chosen from the scope's own and the person's "everywhere"
        ones (core/prompting/both_scopes.py); each read's ledger row names exactly its own. With
        ``usable``, the others are left out before choosing (neither chosen nor counted)."""
        choose = query.choose if usable is None else (lambda profile: query.choose([m for m in profile if usable(m)]))
        return read_both(
            self._memories,
            owner,
            choose,
            actor=actor,
            reason=reason,
            run_id=run_id,
            unused_if=unused_if,
            entry_id=entry_id,
        )

    def read_once(
        self,
        owner: Owner,
        query: PendingQuery,
        wanted: Callable[[], bool],
        *,
        actor: Actor,
        reason: str,
        run_id: int | None = None,
    ) -> list[Memory] | None:
        """The owner's relevant memories, loaded now (beside the model call that decides whether
        they are wanted) and used only once ``wanted()`` says so: the query's embedding starts as
        soon as the loaded profile shows a ranking will need it, so it never waits after that
        call. ``wanted()`` False: None, and no read row (loaded, never chosen nor used)."""

        def choose(profile: list[Memory]) -> list[Memory]:
            query.prefetch(profile)
            if not wanted():
                raise _Unwanted
            return query.choose(profile)

        try:
            return read_both(self._memories, owner, choose, actor=actor, reason=reason, run_id=run_id)
        except _Unwanted:
            return None

    def embed_texts(self, texts: Sequence[str]) -> dict[str, Embedding]:
        """Vectors for memory texts about to be written; {} when there is no model or it fails
        (the memory is written without one and the nightly backfill gives it one)."""
        if self._embeddings is None or not texts:
            return {}
        unique = list(dict.fromkeys(texts))
        try:
            vectors = self._embeddings.embed(unique)
        except Exception as exc:  # noqa: BLE001 - a failed embedding never blocks a write
            logger.info("memory embedding failed: written without a vector", extra={"error": type(exc).__name__})
            return {}
        return dict(zip(unique, vectors, strict=False))
