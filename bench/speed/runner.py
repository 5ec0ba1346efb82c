"""Generate the workloads, run each set in its own process, collect and report."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench.kit import workloads
from bench.kit.measure import CLOCK
from bench.speed import e2e
from bench.speed.report import Report, build, render

ALL_SETS = ("W1", "W2", "W2-prune", "W3", "W4", "W5")


@dataclass(frozen=True)
class Plan:
    runs: int
    w5_calls: int
    w5_cold_samples: int
    quick: bool
    seed: int = workloads.DEFAULT_SEED


FULL = Plan(runs=21, w5_calls=workloads.W5_CALLS, w5_cold_samples=15, quick=False)
QUICK = Plan(runs=5, w5_calls=workloads.W5_CALLS_QUICK, w5_cold_samples=3, quick=True)


def write_workloads(data_dir: Path, sets: tuple[str, ...], plan: Plan) -> None:
    needed = set(sets)
    if "W5" in needed:
        needed.add("W2")
    for name, builder in workloads.BUILDERS.items():
        if name in needed:
            (data_dir / f"{name}.json").write_bytes(builder(plan.seed, plan.quick).request_bytes())
    if "W5" in needed:
        growth = workloads.w5_growth(plan.seed, plan.w5_calls)
        (data_dir / "W5-growth.json").write_bytes(orjson.dumps(growth))


def _child(*args: str) -> dict[str, Any]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-m", "bench.speed.child", *args], capture_output=True, env=env,
                          cwd=root, check=False)
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        return {"pending": f"set failed: {tail[0]}"}
    return orjson.loads(done.stdout.splitlines()[-1])


def run_w5(data_dir: Path, plan: Plan) -> dict[str, Any]:
    warm = _child("W5-warm", str(data_dir))
    if "pending" in warm:
        return warm
    first = max(2, plan.w5_calls - plan.w5_cold_samples + 1)  # call 1 is the loop's own warm-up
    indices = list(range(first, plan.w5_calls + 1))
    cold = _child("W5-cold", str(data_dir), ",".join(map(str, indices)))
    if "pending" in cold:
        return cold
    return {"warm": warm, "cold_ms": cold["calls_ms"], "cold_indices": indices}


def run(sets: tuple[str, ...], plan: Plan, with_e2e: bool = True, log=sys.stderr) -> tuple[Report, dict[str, Any], str]:
    results: dict[str, Any] = {}
    e2e_results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        data_dir = Path(tmp)
        started = time.perf_counter()
        write_workloads(data_dir, sets, plan)
        log.write(f"workloads generated in {time.perf_counter() - started:.1f}s\n")
        for name in sets:
            started = time.perf_counter()
            if name == "W5":
                results[name] = run_w5(data_dir, plan)
            else:
                results[name] = _child(name, str(data_dir), str(plan.runs))
                results[name].setdefault("function_id", workloads.BUILDERS[name](plan.seed, plan.quick).function_id)
            log.write(f"{name}: {time.perf_counter() - started:.1f}s\n")
            log.flush()
        e2e_state = e2e.unavailable_reason() or ""
        if with_e2e and not e2e_state:
            try:
                for name in sets:
                    if "pending" in results[name]:
                        continue
                    started = time.perf_counter()
                    if name == "W5":
                        e2e_results[name] = e2e.measure_w5(data_dir, results[name]["cold_indices"])
                    elif name in workloads.BUILDERS:
                        e2e_results[name] = e2e.measure(name, data_dir, plan.runs)
                    else:
                        continue
                    log.write(f"{name} e2e: {time.perf_counter() - started:.1f}s\n")
            finally:
                e2e.stop()
    report = build(results, e2e_results, plan.quick)
    report.notes.append(f"clock: {CLOCK} ({'process CPU time' if CLOCK == 'cpu' else 'wall-clock latency'}); "
                        f"{plan.runs} runs after one discarded warm-up; ratios are medians of run-by-run ratios")
    if e2e_state:
        report.notes.append(f"e2e column: pending ({e2e_state}); hook: bench/speed/e2e.py")
    return report, results, "pending" if e2e_state else "—"


def main(sets: tuple[str, ...], quick: bool, json_path: str | None, markdown: bool, with_e2e: bool) -> int:
    plan = QUICK if quick else FULL
    report, raw, e2e_state = run(sets, plan, with_e2e)
    print(render(report, e2e_state, markdown))
    if json_path:
        Path(json_path).write_bytes(orjson.dumps({"plan": plan.__dict__, "results": raw}, option=orjson.OPT_INDENT_2))
    return 0
