"""One measured run of the scale suite: the load process (``bench.scale.load``) against the worker at one process count, sampled from ``/proc`` (``bench.scale.proctree``); the definitions are in ``bench/scale/__init__.py``."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

import orjson

from bench.scale import proctree
from bench.scale.workload import Plan

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_EVERY = 0.05
RUN_TIMEOUT = 900.0


def _reader(stream: IO[bytes], events: queue.Queue[dict[str, Any] | None]) -> None:
    for line in stream:
        try:
            events.put(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue  # stray output is not an event
    events.put(None)


class _Cpu:
    """CPU seconds of the worker tree (per process), the load process, this sampler and the
    whole machine."""

    def __init__(self, worker_pid: int, load_pid: int) -> None:
        self.worker_pid, self.load_pid = worker_pid, load_pid

    def snapshot(self) -> dict[str, Any]:
        own = os.times()
        return {"worker": proctree.tree_cpu(self.worker_pid), "load": proctree.cpu_seconds(self.load_pid) or 0.0,
                "sampler": own.user + own.system, "machine": proctree.machine_busy_seconds()}

    def delta(self, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        per_process = {}
        for pid, seconds in after["worker"].items():
            role = "parent" if pid == self.worker_pid else f"child {pid}"
            per_process[role] = round(seconds - before["worker"].get(pid, 0.0), 3)
        out = {"worker_tree": round(sum(per_process.values()), 3), "worker": per_process,
               "engine_and_callers": round(after["load"] - before["load"], 3),
               "sampler": round(after["sampler"] - before["sampler"], 3)}
        # Whatever else ran on the machine meanwhile (other programs share its cores).
        ours = out["worker_tree"] + out["engine_and_callers"] + out["sampler"]
        out["others"] = round(max(0.0, after["machine"] - before["machine"] - ours), 3)
        return out


def run_one(processes: int, plan: Plan, log: IO[str] = sys.stderr) -> dict[str, Any]:
    """One process count from start to finish; ``{"failed": reason}`` in the result when it broke."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "src"), env.get("PYTHONPATH", "")])
    stderr = tempfile.TemporaryFile()
    load = subprocess.Popen([sys.executable, "-m", "bench.scale.load", str(processes), orjson.dumps(plan.as_dict())],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=ROOT, env=env)
    assert load.stdout is not None and load.stdin is not None
    events: queue.Queue[dict[str, Any] | None] = queue.Queue()
    threading.Thread(target=_reader, args=(load.stdout, events), daemon=True).start()
    result: dict[str, Any] = {"processes": processes, "phases": {}}
    cpu: _Cpu | None = None
    marks: dict[str, Any] = {}
    worker_pid = 0
    peak = phase_peak = 0
    deadline = time.monotonic() + RUN_TIMEOUT
    try:
        while True:
            try:
                event = events.get(timeout=SAMPLE_EVERY)
            except queue.Empty:
                event = {"event": "tick"}
            if worker_pid:
                rss = proctree.tree_rss_kib(worker_pid)
                peak, phase_peak = max(peak, rss), max(phase_peak, rss)
            if event is None:
                break
            kind = event["event"]
            if kind == "tick" and time.monotonic() > deadline:
                result["failed"] = f"no end within {RUN_TIMEOUT:.0f} s"
                break
            if kind == "ready":
                worker_pid = event["worker_pid"]
                cpu = _Cpu(worker_pid, load.pid)
                result["request_bytes"] = event["request_bytes"]
                log.write(f"processes={processes}: worker {worker_pid} ready\n")
            elif kind == "start" and cpu is not None:
                phase_peak = proctree.tree_rss_kib(worker_pid)
                marks = cpu.snapshot()
            elif kind == "end" and cpu is not None:
                phase = {**event["result"], "cpu": cpu.delta(marks, cpu.snapshot()), "peak_rss_kib": phase_peak}
                result["phases"][event["phase"]] = phase
                log.write(f"processes={processes}: {event['phase']} done in {phase['seconds']} s\n")
            elif kind == "finished":
                result["ledger"] = {k: v for k, v in event.items() if k not in ("event", "expected")}
                result["expected"] = event["expected"]
                result["peak_rss_kib"] = peak
                members = proctree.tree(worker_pid)
                result["hwm_kib"] = {("parent" if pid == worker_pid else f"child {pid}"): proctree.hwm_kib(pid)
                                     for pid in members}
                result["worker_processes"] = len(members)
                load.stdin.write(b"\n")
                load.stdin.flush()
            elif kind == "failed":
                result["failed"] = event["reason"]
    finally:
        if load.poll() is None:
            try:
                load.wait(60)
            except subprocess.TimeoutExpired:
                load.kill()
                load.wait(10)
    if load.returncode and "failed" not in result:
        stderr.seek(0)
        tail = stderr.read().decode("utf-8", "replace").strip().splitlines()[-3:] or ["no output"]
        result["failed"] = f"load process exited with status {load.returncode}: {' | '.join(tail)}"
    stderr.close()
    if "failed" in result:
        log.write(f"processes={processes}: FAILED: {result['failed']}\n")
    return result

