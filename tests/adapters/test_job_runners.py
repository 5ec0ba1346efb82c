"""The ``JobRunner`` adapters (``compact_ahead_at``): one job per key, a bound on how many run,
a timeout, and nothing waited for by the caller; the library's ``call()`` runs its jobs on a
background thread of the process."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from context_manager import acall, call
from context_manager.adapters.job_runners import LoopJobRunner, ThreadJobRunner
from context_manager.api import LIBRARY_AHEAD, LIBRARY_LOOP_AHEAD, LIBRARY_SESSIONS
from context_manager.core.compaction import ahead
from context_manager.core.compaction.recall import session_key
from context_manager.wire.decode import decode_messages
from tests.core.compaction.test_compact_ahead import payload, session


def test_the_loop_runner_runs_one_job_per_key_within_its_limit() -> None:
    async def main() -> list[str]:
        runner = LoopJobRunner(max_jobs=2)
        done: list[str] = []
        gate = asyncio.Event()

        def job(name: str) -> Any:
            async def run() -> None:
                await gate.wait()
                done.append(name)
            return run

        assert runner.start("a", job("a1"), 5) is True
        assert runner.start("a", job("a2"), 5) is False  # one per key
        assert runner.start("b", job("b1"), 5) is True
        assert runner.start("c", job("c1"), 5) is False  # at the limit
        assert runner.running == 2
        gate.set()
        await asyncio.sleep(0.01)
        assert runner.running == 0
        assert runner.start("a", job("a3"), 5) is True  # the key is free again
        await asyncio.sleep(0.01)
        return done

    assert asyncio.run(main()) == ["a1", "b1", "a3"]


def test_a_key_its_job_settled_is_not_started_again() -> None:
    async def main() -> list[bool]:
        runner = LoopJobRunner()
        answers = iter([False, True])

        async def job() -> bool:
            return next(answers)

        started = [runner.start("a", job, 5)]
        await asyncio.sleep(0.01)  # answered False: not settled
        started.append(runner.start("a", job, 5))
        await asyncio.sleep(0.01)  # answered True: settled
        started.append(runner.start("a", job, 5))
        started.append(runner.start("b", job, 5))
        await runner.aclose()
        return started

    assert asyncio.run(main()) == [True, True, False, True]


def test_the_loop_runner_cancels_a_job_past_its_timeout_and_on_close() -> None:
    async def main() -> tuple[int, list[str]]:
        runner = LoopJobRunner()
        ended: list[str] = []

        async def forever() -> None:
            try:
                await asyncio.sleep(3600)
            finally:
                ended.append("cancelled")

        runner.start("slow", forever, 0.01)
        await asyncio.sleep(0.05)
        after_timeout = runner.running
        runner.start("other", forever, 3600)
        await asyncio.sleep(0.01)
        await runner.aclose()
        return after_timeout, ended

    assert asyncio.run(main()) == (0, ["cancelled", "cancelled"])


def test_a_job_does_none_of_its_work_in_the_loop_iteration_that_started_it() -> None:
    """The call that starts a job writes its reply in that iteration, before the job's work."""
    ran: list[str] = []

    async def job() -> bool:
        ran.append("job")
        return True

    async def main() -> tuple[list[str], list[str]]:
        runner = LoopJobRunner()
        assert runner.start("k", job, 5.0)
        await asyncio.sleep(0)  # the rest of the iteration that started it
        during = list(ran)
        while runner.running:
            await asyncio.sleep(0)
        return during, list(ran)

    assert asyncio.run(main()) == ([], ["job"])


def test_the_loop_runner_without_a_running_loop_starts_nothing() -> None:
    async def job() -> None:
        return None

    assert LoopJobRunner().start("a", job, 1) is False


def test_the_thread_runner_runs_jobs_off_the_calling_thread() -> None:
    runner = ThreadJobRunner(max_jobs=1)
    threads: list[str] = []
    release = threading.Event()

    async def job() -> None:
        threads.append(threading.current_thread().name)
        while not release.is_set():
            await asyncio.sleep(0.001)

    started = time.monotonic()
    assert runner.start("a", job, 5) is True
    assert time.monotonic() - started < 0.5  # never waits for the job
    assert runner.start("b", job, 5) is False  # at its limit of one
    release.set()
    deadline = time.monotonic() + 5
    while runner.running and time.monotonic() < deadline:
        time.sleep(0.005)
    assert runner.running == 0 and threads == ["context-manager-ahead"]


def test_library_call_computes_the_summary_ahead_and_uses_it_later(tmp_path: Path) -> None:
    asked: list[str] = []

    def summarizer(system: str, prompt: str, model: dict) -> str:
        asked.append(threading.current_thread().name)
        return "SUMMARY FROM THE BACKGROUND"

    config = {"compact_ahead_at": 0.7, "lease_dir": str(tmp_path)}
    first = payload(session(7, first="library session"))
    plain = call("context::assemble", first)
    answered = call("context::assemble", first, config=config, summarizer=summarizer)
    assert answered == plain and answered["applied"]["compacted"] is False
    key = ahead.record_key(session_key(decode_messages(first["messages"]), None))
    deadline = time.monotonic() + 10
    while asyncio.run(LIBRARY_SESSIONS.peek(key)) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(asked) == 1 and asked[0] != threading.main_thread().name
    later = call("context::assemble", payload(session(11, first="library session")), config=config,
                 summarizer=summarizer)
    applied = later["applied"]
    assert (applied["compacted"], applied["summary"], applied["tail_start_index"]) == (
        True, "SUMMARY FROM THE BACKGROUND", 13)
    assert len(asked) == 1  # the later call summarised nothing itself
    while LIBRARY_AHEAD.running and time.monotonic() < deadline:
        time.sleep(0.005)  # the job releases its lease after it wrote the record
    assert LIBRARY_AHEAD.running == 0


def test_library_acall_runs_its_jobs_on_the_callers_loop(tmp_path: Path) -> None:
    loops: list[Any] = []

    async def summarizer(system: str, prompt: str, model: dict) -> str:
        loops.append(asyncio.get_running_loop())
        return "SUMMARY ON THE CALLERS LOOP"

    config = {"compact_ahead_at": 0.7, "lease_dir": str(tmp_path)}

    async def main() -> dict:
        first = payload(session(7, first="acall session"))
        answered = await acall("context::assemble", first, config=config, summarizer=summarizer)
        assert answered["applied"]["compacted"] is False and loops == []
        while LIBRARY_LOOP_AHEAD.running:
            await asyncio.sleep(0.01)
        assert loops == [asyncio.get_running_loop()]
        later = await acall("context::assemble", payload(session(11, first="acall session")), config=config,
                            summarizer=summarizer)
        return later["applied"]

    applied = asyncio.run(main())
    assert (applied["compacted"], applied["summary"], applied["tail_start_index"]) == (
        True, "SUMMARY ON THE CALLERS LOOP", 13)
    assert len(loops) == 1
