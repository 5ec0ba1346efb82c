"""End-to-end column: one call through the test engine and a real worker process (WebSocket
round trip), using the test engine of ``testengine``.

This is a hook: it measures only when both the harness and the worker entry point
(``context_manager.worker``) exist; otherwise :func:`unavailable_reason` says why and the
table marks the column pending.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from bench.kit.measure import summary

ROOT = Path(__file__).resolve().parents[2]
_FUNCTIONS = {"W1": "context::assemble", "W2": "context::assemble", "W2-prune": "context::prune",
              "W3": "context::assemble", "W4": "context::count-tokens"}
_engine: Any = None
_worker: Any = None


def unavailable_reason() -> str | None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        if importlib.util.find_spec("testengine") is None:
            return "testengine not found"
    except ModuleNotFoundError:
        return "testengine not found"
    if importlib.util.find_spec("context_manager.worker") is None:
        return "worker entry point context_manager.worker not landed yet"
    return None


def _start() -> Any:
    global _engine, _worker
    if _engine is None:
        from bench.kit.summariser import SUMMARY_TEXT
        from testengine import FakeRouter, TestEngine, WorkerProcess

        # The fake router answers summaries at once, like W3's in-process summariser.
        _engine = TestEngine(router=FakeRouter(summary=SUMMARY_TEXT)).start()
        _worker = WorkerProcess(_engine.url, cwd=tempfile.mkdtemp(prefix="bench-worker-"))
        _engine.wait_for_functions(set(_FUNCTIONS.values()), timeout=30)
    return _engine


def stop() -> None:
    global _engine, _worker
    if _worker is not None:
        _worker.kill()
    if _engine is not None:
        _engine.stop()
    _engine = _worker = None


async def _timed_call(engine: Any, function_id: str, payload: Any) -> float:
    """Milliseconds of one call, timed on the engine's own loop like a caller colocated with the
    engine: the blocking helper's two thread hops (~0.4 ms) belong to the harness, not to the
    round trip. Always wall time: the work happens in other processes."""
    start = time.perf_counter_ns()
    result = await engine.call_async(function_id, payload)
    ms = (time.perf_counter_ns() - start) / 1e6
    del result  # freed after the clock stopped, as a caller would after reading it
    return ms


def measure(name: str, data_dir: Path, runs: int) -> dict[str, Any] | None:
    """Median/p95 of ``runs`` engine calls on ``name``'s request (after one discarded call)."""
    from bench.kit.workloads import shifted  # the same never-seen-before variants as in-process

    try:
        engine = _start()
    except Exception as exc:  # the harness is someone else's moving target: never fail the run
        return {"error": f"{type(exc).__name__}: {exc}"}
    function_id = _FUNCTIONS[name]
    base = orjson.loads((data_dir / f"{name}.json").read_bytes())

    async def timed_calls() -> list[float]:
        samples = []
        for i in range(runs + 1):
            ms = await _timed_call(engine, function_id, shifted(base, 3 * i + 7))
            if i:
                samples.append(ms)
        return samples

    try:
        samples = engine.run(timed_calls, timeout=120 * (runs + 1))
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return summary(samples)


def measure_w5(data_dir: Path, indices: list[int]) -> dict[str, Any] | None:
    """W5 through the engine: the agent loop's calls 1..N in order (warm: calls ``indices``),
    then the same histories with their own timestamp offsets (cold: nothing to reuse)."""
    from bench.kit.workloads import grown, shifted

    try:
        engine = _start()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    base = orjson.loads((data_dir / "W2.json").read_bytes())
    growth = orjson.loads((data_dir / "W5-growth.json").read_bytes())

    async def one(payload: dict[str, Any]) -> float:
        return await _timed_call(engine, "context::assemble", payload)

    async def timed_calls() -> tuple[list[float], list[float]]:
        warm = {}
        for k in range(1, len(growth) + 1):
            warm[k] = await one(grown(base, growth, k))
        cold = [await one(shifted(grown(base, growth, k), 5 * 10**9 + k * 10**6)) for k in indices]
        return [warm[k] for k in indices], cold

    try:
        warm, cold = engine.run(timed_calls, timeout=60 * (len(growth) + len(indices)))
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"warm": summary(warm), "cold": summary(cold)}
