"""Concurrent `context::assemble` load through the test engine against a worker subprocess.

A caller connects to the engine with the project's own engine client and keeps ``concurrency``
invocations in flight until ``total`` calls are done. Payloads come from a fixed mix of sizes
(a greeting, tool-heavy sessions that prune, sessions that need emergency reduction, a capped
1 MB result, images); each answer is compared with the in-process answer of the same payload.
Resident memory of the worker (with its child processes, if it runs any) is sampled after every
``sample_every`` calls.
"""

from __future__ import annotations

import gc
import logging
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
import orjson

from context_manager import call
from context_manager.engine.client import EngineClient, RemoteError, worker_metadata
from context_manager.wire.codec import dumps_wire
from testengine.process import processes_flag

from .engine_support import tree_rss_kib, worker_on_engine


def _user(text: str, ts: int, image: bool = False) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if image:
        content.append({"type": "image", "mime": "image/png", "data": "iVBORw0KGgo="})
    return {"role": "user", "content": content, "timestamp": ts}


def _session(turns: int, result_bytes: int, seed: int, image_every: int = 0) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    ts = 1
    for i in range(turns):
        image = bool(image_every) and i % image_every == 0
        messages.append(_user(f"request {seed}/{i}: " + "please look " * 5, ts, image))
        messages.append({"role": "assistant", "content": [
            {"type": "function_call", "id": f"c{i}", "function_id": "read", "arguments": {"n": i}}],
            "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": ts + 1})
        messages.append({"role": "function_result", "function_call_id": f"c{i}", "function_id": "read",
                         "content": [{"type": "text", "text": f"{seed}:" + "r" * result_bytes}],
                         "timestamp": ts + 2})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"ok {i}"}],
                         "stop_reason": "end", "model": "m", "provider": "p", "timestamp": ts + 3})
        ts += 4
    return messages


def payload_mix() -> list[dict[str, Any]]:
    """Twenty payloads from ~20 tokens to ~1 MB, each answered (none overflows)."""
    big = {"id": "m", "limits": {"context_window": 200_000, "max_output_tokens": 8_000}}
    small = {"id": "m", "limits": {"context_window": 16_000, "max_output_tokens": 1_000}}
    mix: list[dict[str, Any]] = []
    for seed in range(4):
        mix.append({"messages": [_user(f"hello {seed}", 1)], "model": small})
        mix.append({"messages": _session(6, 2_000, seed), "model": big})
        mix.append({"messages": _session(30, 12_000, seed), "model": big})  # prunes
        # Emergency reduction; compaction is off so that concurrent calls on one history do not
        # race for its lease (a busy lease changes the answer, by design).
        mix.append({"messages": _session(12, 4_000, seed, image_every=6), "model": small,
                    "options": {"allow_compaction": False}})
        mix.append({"messages": _session(2, 1_000_000, seed), "model": big,  # capped
                    "options": {"max_result_tokens": 5_000}})
    return mix


def expected_answers(mix: list[dict[str, Any]]) -> list[Any]:
    return [orjson.loads(dumps_wire(call("context::assemble", p))) for p in mix]


@dataclass
class LoadReport:
    concurrency: int
    total: int
    answered: int = 0
    wrong: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    rss_kib: list[tuple[int, int]] = field(default_factory=list)  # (calls done, worker RSS)
    threads_before: int = 0
    threads_after: int = 0
    fds_before: int = 0
    fds_after: int = 0
    engine_pending_after: int = 0
    caller_pending_after: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def rss_growth_kib(self, warm_at: int) -> int:
        """How far the peak RSS of the later half of the run rose above the peak between
        `warm_at` and the midpoint. Samples are taken with the concurrent calls in flight, so one
        sample swings by several MiB either way; a leak shows as a later peak above an earlier one."""
        middle = (warm_at + self.total) // 2
        early = [rss for done, rss in self.rss_kib if warm_at <= done <= middle]
        late = [rss for done, rss in self.rss_kib if done > middle]
        return max(late) - max(early) if early and late else 0


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def _fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def _percentile(sorted_ms: list[float], q: float) -> float:
    if not sorted_ms:
        return 0.0
    index = min(len(sorted_ms) - 1, max(0, int(round(q * len(sorted_ms) + 0.5)) - 1))
    return round(sorted_ms[index], 1)


async def _drive(url: str, pid: int, mix: list[dict[str, Any]], expected: list[Any],
                 report: LoadReport, sample_every: int) -> None:
    caller = EngineClient(url, worker_metadata("load-caller", "0"))
    latencies: list[float] = []
    next_index = 0
    done = 0

    async def one_worker() -> None:
        nonlocal next_index, done
        while next_index < report.total:
            index = next_index
            next_index += 1
            which = index % len(mix)
            started = time.perf_counter()
            try:
                result = await caller.invoke("context::assemble", mix[which], timeout_ms=600_000)
            except RemoteError as exc:
                report.errors.append(f"{exc.code}: {exc}"[:200])
                continue
            finally:
                latencies.append((time.perf_counter() - started) * 1000)
            report.answered += 1
            if result != expected[which]:
                report.wrong += 1
            done += 1
            if done % sample_every == 0:
                report.rss_kib.append((done, tree_rss_kib(pid)))

    async with anyio.create_task_group() as group:
        group.start_soon(caller.run)
        await caller.wait_connected()
        started = time.perf_counter()
        async with anyio.create_task_group() as workers:
            for _ in range(report.concurrency):
                workers.start_soon(one_worker)
        report.seconds = round(time.perf_counter() - started, 2)
        report.caller_pending_after = len(caller._pending)
        await caller.close()
        group.cancel_scope.cancel()
    ordered = sorted(latencies)
    report.p50_ms = round(statistics.median(ordered), 1) if ordered else 0.0
    report.p95_ms = _percentile(ordered, 0.95)
    report.p99_ms = _percentile(ordered, 0.99)
    report.max_ms = round(ordered[-1], 1) if ordered else 0.0


def run_load(concurrency: int, total: int, sample_every: int = 100,
             workdir: Path | None = None, processes: int = 1) -> LoadReport:
    logging.getLogger("context_manager").setLevel(logging.WARNING)
    mix = payload_mix()
    expected = expected_answers(mix)
    gc.collect()
    report = LoadReport(concurrency, total)
    with tempfile.TemporaryDirectory() as scratch:
        base = workdir or Path(scratch)
        with worker_on_engine(base, args=processes_flag(processes)) as (engine, process):
            pid = process.proc.pid
            report.threads_before, report.fds_before = _threads(pid), _fds(pid)
            report.rss_kib.append((0, tree_rss_kib(pid)))
            anyio.run(_drive, engine.url, pid, mix, expected, report, sample_every)
            time.sleep(0.5)
            report.threads_after, report.fds_after = _threads(pid), _fds(pid)
            report.engine_pending_after = len(engine.pending)
            if process.proc.poll() is not None:
                report.errors.append(f"worker exited with {process.proc.returncode}")
    return report
