"""Which serving process takes a call: the one that served its session last, unless that one is
loaded with much more work than another, which then takes the call and the session with it.

A process's load is the bytes of the invocation frames it holds: a proxy for the CPU work queued
on it that needs no parsing. Staying with the last process keeps its parse and count caches
warm for the session, and keeps each session's cached messages in one process instead of all of
them; moving costs one cold call. So a call stays unless the wait would cost more (about a
quarter megabyte of frames ahead of it, or its own size if larger) or its process has no room.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from context_manager.wire.lru import ByteLRU

SPILL_BYTES = 256 * 1024
MAX_SESSIONS = 4096


class Loaded(Protocol):
    @property
    def index(self) -> int: ...

    @property
    def load(self) -> int: ...

    @property
    def calls_in_hand(self) -> int: ...

    @property
    def has_room(self) -> bool: ...


def pick(live: Sequence[Loaded], last: int | None, size: int = 0, needs_room: bool = True) -> Loaded | None:
    """The process among ``live`` for a call of ``size`` bytes whose session ``last`` served
    (None: a new one); None when no process has room for it.

    Moving a call costs about a cold serve of it, so the margin grows with the call: a call
    moves when the frames ahead of it exceed those elsewhere by more than its own size.
    A call that ``needs_room`` false (a large one, limited in number elsewhere) ignores room.
    """
    ready = [process for process in live if process.has_room or not needs_room]
    if not ready:
        return None
    best = min(ready, key=lambda p: (p.load, p.calls_in_hand))
    own = next((process for process in live if process.index == last), None)
    if own is None:
        return best
    if (own.has_room or not needs_room) and own.load <= best.load + max(SPILL_BYTES, size):
        return own
    return best


class Affinity:
    """Session hint -> the process that served it last; least recently used forgotten first."""

    def __init__(self, capacity: int = MAX_SESSIONS) -> None:
        self._last: ByteLRU[int, int] = ByteLRU(capacity)  # each session costs 1

    def last(self, hint: bytes | None) -> int | None:
        return None if hint is None else self._last.get(hash(hint))

    def remember(self, hint: bytes | None, index: int) -> None:
        if hint is None:
            return
        self._last.put(hash(hint), index, 1)

    def __len__(self) -> int:
        return len(self._last)
