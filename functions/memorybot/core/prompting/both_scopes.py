"""One relevance choice over two of the same person's profiles: the scope's own and their own
("everywhere") memories, each read through the store's one read method (``read_selected``).

The two reads run at once; each hands its loaded profile over, the choice is made once over both
(the ten come from either), and each read then keeps its part of it, so each partition's ``read``
row names exactly the memories of its own that were chosen. The person's own scope gets no row
when none of its memories was chosen (most people have none there: no row, no scope of theirs).
A failure of either read ends both before any row is written.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..record.domain import EVERYWHERE_SCOPE, Memory, Owner
from ..record.ports import ProfileReader

# Generous: the choice waits at most for the query's embedding (recall.QUERY_EMBEDDING_WAIT_SECONDS).
CHOICE_WAIT_SECONDS = 60.0
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="everywhere-read")
        return _POOL


class _NoneOfYours(Exception):
    """None of the person's own memories was chosen: that read ends without its row."""


class _OtherFailed(Exception):
    """The other read failed before handing its profile over: this one ends too, without a row."""


def read_both(
    memories: ProfileReader,
    owner: Owner,
    choose: Callable[[list[Memory]], list[Memory]],
    **read: Any,
) -> list[Memory]:
    """``choose`` over the owner's profile and the person's own, as ``read_selected`` reads one
    (``read``: its keywords: actor, reason, run_id, unused_if, entry_id); what it chose, in its order.
    An exception ``choose`` raises ends both reads with it, before any row."""
    if owner.scope == EVERYWHERE_SCOPE:
        return memories.read_selected(owner, choose, **read)
    yours = Owner(EVERYWHERE_SCOPE, owner.user_id)
    loaded: dict[Owner, Future[list[Memory]]] = {owner: Future(), yours: Future()}
    unused: set[Owner] = set()  # ended by ``unused_if`` (the same answer for both): nothing chosen
    chosen: Future[list[Memory]] = Future()
    lock = threading.Lock()

    def settle() -> None:
        with lock:
            if chosen.done() or not all(f.done() for f in loaded.values()):
                return
            try:
                profiles = [f.result() for f in loaded.values()]
                chosen.set_result([] if unused else choose(profiles[0] + profiles[1]))
            except BaseException as exc:  # noqa: BLE001 - the other read failed, or choose raised: both end
                chosen.set_exception(exc)

    def part(whose: Owner) -> Callable[[list[Memory]], list[Memory]]:
        def keep(profile: list[Memory]) -> list[Memory]:
            loaded[whose].set_result(profile)
            settle()
            picked = [m for m in chosen.result(timeout=CHOICE_WAIT_SECONDS) if m.owner == whose]
            if whose == yours and not picked:
                raise _NoneOfYours
            return picked

        return keep

    def run(whose: Owner) -> list[Memory]:
        try:
            result = memories.read_selected(whose, part(whose), **read)
        except _NoneOfYours:
            return []
        except BaseException:
            if not loaded[whose].done():  # failed before handing its profile over: the other ends too
                loaded[whose].set_exception(_OtherFailed())
                settle()
            raise
        if not loaded[whose].done():  # not used (``unused_if``): no row, nothing chosen
            unused.add(whose)
            loaded[whose].set_result([])
            settle()
        return result

    other = _pool().submit(run, yours)
    try:
        run(owner)
    except _OtherFailed:
        raise other.exception() or RuntimeError("the other read failed") from None
    other.result()  # its own failure, if any, is this read's
    return chosen.result() if chosen.done() else []
