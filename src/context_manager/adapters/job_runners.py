"""The ``JobRunner`` port: background jobs of one process (``compact_ahead_at``).

* :class:`LoopJobRunner` runs each job as a task of the event loop that starts it (the worker's,
  or a serving process's): ``Services`` owns one and cancels what is left when it stops.
* :class:`ThreadJobRunner` runs jobs on one background thread of the process with its own event
  loop, for the library's ``call()``, whose own loops end with each call. The thread is a daemon
  and is started on the first job: it ends with the process, and so do its jobs.

Both bound the jobs running at once (``max_jobs``), run at most one per key, and cancel a job
still running after its timeout. A job that answers ``True`` settled its key: the runner refuses
that key again while it remembers it (the last ``SETTLED_KEYS`` settled keys), so the calls that
follow a ready summary start nothing. A job that raises is logged and forgotten: a summary
computed ahead of time is never more than a saving.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable

log = logging.getLogger("context_manager.ahead")

# Jobs one process runs at once; a job refused at the limit is started again by a later call.
DEFAULT_MAX_JOBS = 4
# Settled keys one runner remembers (a key is short: a session key and a digest).
SETTLED_KEYS = 4096

Job = Callable[[], Awaitable[bool]]


class _Slots:
    """The keys running now, under a lock (jobs start on one thread and end on another)."""

    def __init__(self, max_jobs: int) -> None:
        self.max_jobs = max_jobs
        self._running: set[str] = set()
        self._settled: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: str) -> bool:
        with self._lock:
            if key in self._running or key in self._settled or len(self._running) >= self.max_jobs:
                return False
            self._running.add(key)
            return True

    def give_back(self, key: str, settled: bool = False) -> None:
        with self._lock:
            self._running.discard(key)
            if settled:
                self._settled[key] = None
                if len(self._settled) > SETTLED_KEYS:
                    self._settled.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._running)


async def _bounded(job: Job, key: str, timeout_s: float, slots: _Slots) -> None:
    settled = False
    try:
        # None of the job's work runs in the loop iteration that started it: the reply of the
        # call that started it is written in that iteration, before the job selects or hashes.
        await asyncio.sleep(0)
        async with asyncio.timeout(timeout_s):
            settled = await job()
    except TimeoutError:
        log.warning("summary ahead of time for %s cancelled after %ss", key, timeout_s)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("summary ahead of time for %s failed", key)
    finally:
        slots.give_back(key, settled)


class LoopJobRunner:
    """Jobs as tasks of the running event loop; :meth:`aclose` cancels the unfinished ones."""

    def __init__(self, max_jobs: int = DEFAULT_MAX_JOBS) -> None:
        self._slots = _Slots(max_jobs)
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, key: str, job: Job, timeout_s: float) -> bool:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False  # no loop to run on: the job is simply not started
        if not self._slots.take(key):
            return False
        task = loop.create_task(_bounded(job, key, timeout_s, self._slots), name=f"ahead {key}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    @property
    def running(self) -> int:
        return len(self._slots)

    async def aclose(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


class ThreadJobRunner:
    """Jobs on one background daemon thread with its own event loop (the library's runner)."""

    def __init__(self, max_jobs: int = DEFAULT_MAX_JOBS) -> None:
        self._slots = _Slots(max_jobs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="context-manager-ahead", daemon=True)
                thread.start()
                self._loop = loop
            return self._loop

    def start(self, key: str, job: Job, timeout_s: float) -> bool:
        if not self._slots.take(key):
            return False
        asyncio.run_coroutine_threadsafe(_bounded(job, key, timeout_s, self._slots), self._running_loop())
        return True

    @property
    def running(self) -> int:
        return len(self._slots)
