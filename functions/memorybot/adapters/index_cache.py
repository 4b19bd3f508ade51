"""A warm function's copy of the selection indexes it has read (adapters/profile_index.py).

A large profile's read ranks every entry of the owner's index; reading its chunks costs about a
read unit per 11 entries, decoding them about 30 µs an entry. A warm function keeps, per owner,
the header's generation and each chunk's entries decoded, under the chunk's count of changes.
Every change of a memory bumps its chunk's count on the chunk and on the header in one
transaction (in any process), and an erasure deletes the header (the next one starts a new
generation): so one strongly consistent read of the header tells which kept chunks are still
exactly the chunks (same generation, same count), and only the others are read again.

Bounded by the bytes the decoded entries take in the process (a 256-dimension vector's
codes are most of it), least recently used owner dropped first; an owner unused for
IDLE_SECONDS is dropped at the next use of the cache. Entries are kept and found by the owner's
key only: no ranking ever sees another owner's.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ..core.record.domain import Memory, StoredVector

# An erased or long-silent person's entries do not stay in a warm function: dropped once unused this long.
IDLE_SECONDS = 600.0

_FLOAT = sys.getsizeof(0.0)
_INT = sys.getsizeof(-100)
_DATETIME = 48  # sys.getsizeof of an aware datetime (its zone is shared)


def footprint(memory: Memory) -> int:
    """About the bytes ``memory`` (as rebuilt from its entry) takes in this process."""
    size = sys.getsizeof(memory) + sys.getsizeof(memory.__dict__) + sys.getsizeof(memory.text)
    size += sys.getsizeof(memory.memory_id) + 2 * _DATETIME
    if memory.embedding is not None:
        vector = memory.embedding.vector
        size += sys.getsizeof(memory.embedding) + sys.getsizeof(vector)
        if isinstance(vector, StoredVector):  # its codes: about half are below -5, an int object each
            size += sys.getsizeof(vector.codes) + _INT * len(vector) // 2
        else:
            size += _FLOAT * len(vector)
    return size


@dataclass(frozen=True)
class KeptChunk:
    """One chunk's entries as read when its count of changes was ``count``."""

    count: int
    memories: tuple[Memory, ...]
    size: int  # their footprint, counted once

    @classmethod
    def of(cls, count: int, memories: Iterable[Memory]) -> KeptChunk:
        kept = tuple(memories)
        return cls(count, kept, sum(map(footprint, kept)))


@dataclass(frozen=True)
class _Kept:
    generation: str | None
    chunks: Mapping[str, KeptChunk]
    size: int
    used: float


class IndexCache:
    """Each owner's decoded index chunks under the generation they were read in, at most
    ``capacity`` bytes in all (0: nothing is kept)."""

    def __init__(self, capacity: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = capacity
        self._clock = clock
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()  # a turn reads two owners' profiles at once

    @property
    def size(self) -> int:
        return self._size

    def owners(self) -> list[str]:
        with self._lock:
            return list(self._kept)

    def holds(self, owner_key: str) -> bool:
        with self._lock:
            self._expire()
            return owner_key in self._kept

    def get(self, owner_key: str, generation: str | None) -> dict[str, KeptChunk] | None:
        """The owner's kept chunks if read in ``generation``; otherwise None, and a copy of
        another generation (an erased profile's) is dropped."""
        with self._lock:
            self._expire()
            kept = self._kept.get(owner_key)
            if kept is None:
                return None
            if kept.generation != generation:
                self._drop(owner_key)
                return None
            self._kept[owner_key] = _Kept(kept.generation, kept.chunks, kept.size, self._clock())
            self._kept.move_to_end(owner_key)
            return dict(kept.chunks)

    def put(self, owner_key: str, generation: str | None, chunks: Mapping[str, KeptChunk]) -> None:
        """Keep ``chunks`` (read in ``generation``) for the owner, in place of any copy; the least
        recently used others go while the bound is passed. A profile larger than the bound is not kept."""
        size = sum(chunk.size for chunk in chunks.values())
        with self._lock:
            self._drop(owner_key)
            if size > self.capacity:
                return
            self._kept[owner_key] = _Kept(generation, dict(chunks), size, self._clock())
            self._size += size
            while self._size > self.capacity:
                self._drop(next(iter(self._kept)))

    def evict(self, owner_key: str) -> None:
        with self._lock:
            self._drop(owner_key)

    def _drop(self, owner_key: str) -> None:
        kept = self._kept.pop(owner_key, None)
        if kept is not None:
            self._size -= kept.size

    def _expire(self) -> None:
        now = self._clock()
        for owner_key in [k for k, kept in self._kept.items() if now - kept.used > IDLE_SECONDS]:
            self._drop(owner_key)
