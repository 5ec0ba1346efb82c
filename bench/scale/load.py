"""The load side of ``python -m bench.scale``: a test engine, the worker under test and its callers.

``python -m bench.scale.load PROCESSES PLAN_JSON`` runs in its own process so that the sampler
(``bench.scale``) does not share its interpreter with the callers. It speaks one JSON object
per stdout line: ``ready`` (with the worker's pid), ``start``/``end`` around each measured
phase, then ``finished``; it then waits for one stdin line before stopping the worker, so that
the sampler can read the worker tree's high-water marks. ``failed`` replaces the rest when the
worker does not come up.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from bench.kit.measure import median, percentile
from bench.kit.summariser import SUMMARY_TEXT
from bench.scale.engine import BenchEngine
from bench.scale.workload import FUNCTION_ID, Payload, Plan, digest, in_process_answer, payloads
from testengine import FakeRouter, WorkerProcess
from testengine.process import processes_flag

CALL_TIMEOUT = 300.0
START_TIMEOUT = 60.0


def emit(event: str, **fields: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps({"event": event, **fields}) + b"\n")
    sys.stdout.flush()


class Tally:
    """Latencies and outcomes of one phase, per kind of call."""

    def __init__(self, expected: dict[tuple[str, int], bytes]) -> None:
        self.expected = expected
        self.expected_digest = {key: digest(answer) for key, answer in expected.items()}
        self.latencies: dict[str, list[float]] = {"small": [], "large": []}
        self.request_bytes: Counter[str] = Counter()
        self.wrong: Counter[str] = Counter()
        self.errors: list[str] = []
        self.lost = 0
        self.seen: dict[str, set[str]] = {}  # "kind#variant" -> digests of the answers

    def record(self, payload: Payload, ms: float, result: bytes | None, error: str) -> None:
        key = (payload.kind, payload.variant)
        self.latencies[payload.kind].append(ms)
        self.request_bytes[payload.kind] += len(payload.data)
        label = f"{payload.kind}#{payload.variant}"
        if result is None:
            self.errors.append(error)
            return
        # A byte comparison costs next to nothing; hashing a reply is left to one that differs.
        if result == self.expected[key]:
            self.seen.setdefault(label, set()).add(self.expected_digest[key])
        else:
            self.seen.setdefault(label, set()).add(digest(result))
            self.wrong[payload.kind] += 1

    def summary(self, seconds: float) -> dict[str, Any]:
        out: dict[str, Any] = {"seconds": round(seconds, 3), "lost": self.lost,
                               "errors": len(self.errors), "error_examples": self.errors[:3],
                               "answers": {k: sorted(v) for k, v in sorted(self.seen.items())}}
        for kind, samples in self.latencies.items():
            ordered = sorted(samples)
            out[kind] = {
                "calls": len(samples),
                "wrong": self.wrong[kind],
                "calls_per_s": round(len(samples) / seconds, 2) if seconds else 0.0,
                "mb_per_s": round(self.request_bytes[kind] / 1e6 / seconds, 2) if seconds else 0.0,
                "p50_ms": round(median(ordered), 2) if ordered else None,
                "p99_ms": round(percentile(ordered, 0.99), 2) if ordered else None,
                "max_ms": round(ordered[-1], 2) if ordered else None,
            }
        return out


async def _phase(engine: BenchEngine, sets: dict[str, list[Payload]], small_callers: int, large_callers: int,
                 seconds: float, tally: Tally) -> float:
    """Callers loop until ``seconds`` have passed; the phase ends when the last call returns."""
    loop = asyncio.get_running_loop()
    stop_at = loop.time() + seconds

    async def caller(pool: list[Payload], first: int, stride: int) -> None:
        i = first
        while loop.time() < stop_at:
            payload = pool[i % len(pool)]
            i += stride
            started = time.perf_counter_ns()
            try:
                reply = await engine.invoke_bytes(FUNCTION_ID, payload.data, CALL_TIMEOUT)
            except TimeoutError:
                tally.lost += 1
                continue
            tally.record(payload, (time.perf_counter_ns() - started) / 1e6, reply.result, reply.error)

    started = time.perf_counter()
    tasks = [caller(sets["small"], k, small_callers) for k in range(small_callers)]
    # Large caller k always sends variant k: no two callers share a history (and its lease).
    tasks += [caller([sets["large"][k]], 0, 1) for k in range(large_callers)]
    await asyncio.gather(*tasks)
    return time.perf_counter() - started


def _wait_for_worker(engine: BenchEngine, worker: WorkerProcess) -> str | None:
    """None once the worker serves ``context::assemble``; otherwise why it does not."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if FUNCTION_ID in engine.function_ids():
            return None
        if worker.proc.poll() is not None:
            tail = worker.stderr.strip().splitlines()[-3:] or ["no output"]
            return f"worker exited with status {worker.proc.returncode}: {' | '.join(tail)}"
        time.sleep(0.05)
    return f"worker did not register {FUNCTION_ID} within {START_TIMEOUT:.0f} s"


def run(processes: int, plan: Plan) -> int:
    logging.getLogger("context_manager").setLevel(logging.WARNING)
    sets = payloads(plan)
    expected = {(p.kind, p.variant): in_process_answer(p) for pool in sets.values() for p in pool}
    engine = BenchEngine(router=FakeRouter(summary=SUMMARY_TEXT))
    engine.start()
    scratch = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    worker = WorkerProcess(engine.url, *processes_flag(processes), cwd=scratch,
                           env={"III_COMPOSE_DIR": str(scratch), "LOG_LEVEL": "warn"})
    try:
        problem = _wait_for_worker(engine, worker)
        if problem:
            emit("failed", reason=problem)
            return 1
        emit("ready", worker_pid=worker.proc.pid, processes=processes,
             request_bytes={kind: len(pool[0].data) for kind, pool in sets.items()})
        phases = (("warm", plan.large_callers, plan.warm_seconds),
                  ("small", 0, plan.small_seconds),
                  ("mixed", plan.large_callers, plan.mixed_seconds))
        for name, large, seconds in phases:
            tally = Tally(expected)
            emit("start", phase=name)
            took = engine.run(lambda: _phase(engine, sets, plan.small_callers, large, seconds, tally),
                              timeout=seconds + 2 * CALL_TIMEOUT)
            emit("end", phase=name, result=tally.summary(took))
            # The engine keeps every call and frame it sees for tests' assertions; not needed here.
            engine.calls.clear()
            engine.received.clear()
        if worker.proc.poll() is not None:
            emit("failed", reason=f"worker exited with status {worker.proc.returncode} during the run")
            return 1
        ledger = engine.ledger
        emit("finished", sent=ledger.sent, answered=ledger.answered, doubled=ledger.doubled,
             reparsed=ledger.reparsed, still_waiting=engine.waiting(),
             expected={f"{kind}#{variant}": digest(answer) for (kind, variant), answer in expected.items()})
        sys.stdin.readline()  # the sampler has read the worker tree's high-water marks
        return 0
    finally:
        worker.kill()
        engine.stop()


if __name__ == "__main__":
    plan = Plan(**orjson.loads(sys.argv[2]))
    sys.exit(run(int(sys.argv[1]), plan))
