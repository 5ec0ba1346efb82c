"""Which serving process takes a call: the one that served its session last, unless it is
loaded with much more work than another (then the call spills over to the least loaded).

A process's load is the bytes of the invocation frames it holds: a proxy for the CPU work queued
on it that needs no parsing. Staying with the last process keeps its parse and count caches
warm for the session; moving costs one cold call, so a call stays unless the wait would cost
more (about a quarter megabyte of frames ahead of it).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

SPILL_BYTES = 256 * 1024
MAX_SESSIONS = 4096


class Loaded(Protocol):
    @property
    def index(self) -> int: ...

    @property
    def load(self) -> int: ...

    @property
    def calls_in_hand(self) -> int: ...


class Affinity:
    """Session hint -> the process that served it last; least recently used forgotten first."""

    def __init__(self, capacity: int = MAX_SESSIONS) -> None:
        self._capacity = capacity
        self._last: OrderedDict[int, int] = OrderedDict()

    def choose(self, live: Sequence[Loaded], hint: bytes | None) -> Loaded:
        """The process for a call with ``hint`` among the ``live`` ones (at least one)."""
        best = min(live, key=lambda p: (p.load, p.calls_in_hand))
        if hint is None:
            return best
        key = hash(hint)
        chosen = best
        last = self._last.get(key)
        if last is not None:
            for process in live:
                if process.index == last and process.load <= best.load + SPILL_BYTES:
                    chosen = process
                    break
            self._last.move_to_end(key)
        self._last[key] = chosen.index
        if len(self._last) > self._capacity:
            self._last.popitem(last=False)
        return chosen

    def __len__(self) -> int:
        return len(self._last)
