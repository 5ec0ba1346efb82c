"""Jobs the worker runs off the call, on the replay's simulated clock.

The worker hands a job (``compact_ahead_at``: a summary computed ahead of time) to its job
runner and answers at once. Here the runner is the suite's: a job started by a call answered at
time ``t`` is run once that call has returned (on its own event loop, so its summariser calls
count as off the turn), and what it writes to the session store becomes visible at
``t + L × (the summariser calls it made)``: before then a later call does not find it and
compacts without it, as a worker whose summariser takes L seconds would. One job per key at a
time, a key whose job succeeded is not started again (the runner port's contract); jobs never
run concurrently here, which a worker's bounded runner allows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from context_manager.ports import RememberedCompaction, SessionStore


@dataclass
class SimulatedClock:
    now: float = 0.0


@dataclass
class DelayedSessions:
    """A session store whose writes made by a job become readable only at their ready time."""

    inner: SessionStore
    clock: SimulatedClock
    in_job: bool = False
    held: list[tuple[str, RememberedCompaction]] = field(default_factory=list)
    pending: list[tuple[float, str, RememberedCompaction]] = field(default_factory=list)

    async def _release(self) -> None:
        due = [p for p in self.pending if p[0] <= self.clock.now]
        self.pending = [p for p in self.pending if p[0] > self.clock.now]
        for _ready, key, record in due:
            await self.inner.put(key, record)

    async def get(self, key: str) -> RememberedCompaction | None:
        await self._release()
        return await self.inner.get(key)

    async def peek(self, key: str) -> RememberedCompaction | None:
        await self._release()
        return await self.inner.peek(key)

    async def put(self, key: str, record: RememberedCompaction) -> None:
        if self.in_job:
            self.held.append((key, record))
        else:
            await self.inner.put(key, record)


@dataclass
class SimulatedJobs:
    """The worker's ``JobRunner`` in the replay: :meth:`start` queues, :meth:`run_queued` runs."""

    sessions: DelayedSessions
    latency: float
    summariser_calls: Callable[[], int]
    queued: list[tuple[str, Callable[[], Awaitable[bool]]]] = field(default_factory=list)
    settled: set[str] = field(default_factory=set)
    started: int = 0

    def start(self, key: str, job: Callable[[], Awaitable[bool]], timeout_s: float) -> bool:
        if key in self.settled or any(k == key for k, _ in self.queued):
            return False
        self.queued.append((key, job))
        self.started += 1
        return True

    def run_queued(self, answered_at: float) -> None:
        """Run the jobs the last call started; their writes are ready ``L`` per summariser call later."""
        queued, self.queued = self.queued, []
        for key, job in queued:
            before = self.summariser_calls()
            self.sessions.in_job = True
            try:
                ok = anyio.run(job)
            finally:
                self.sessions.in_job = False
            ready = answered_at + self.latency * (self.summariser_calls() - before)
            self.sessions.pending += [(ready, k, r) for k, r in self.sessions.held]
            self.sessions.held = []
            if ok:
                self.settled.add(key)
