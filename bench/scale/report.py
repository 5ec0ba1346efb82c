"""Checks and the table of ``python -m bench.scale``: both runs side by side, and the ratios
measured in the same invocation."""

from __future__ import annotations

import os
from typing import Any

from bench.scale.workload import Plan

MEASURED = ("small", "mixed")
COLUMNS = ("processes", "phase", "seconds", "small calls", "small/s", "small p50 ms", "small p99 ms",
           "large calls", "large/s", "MB/s", "worker CPU s", "cores", "engine+callers CPU s", "others CPU s", "peak RSS MB")


def _observed(run: dict[str, Any]) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for phase in run["phases"].values():
        for label, digests in phase["answers"].items():
            seen.setdefault(label, set()).update(digests)
    return seen


def _run_problems(run: dict[str, Any]) -> list[str]:
    name = f"processes={run['processes']}"
    if "failed" in run:
        return [f"{name}: run failed: {run['failed']}"]
    problems = []
    for phase_name, phase in run["phases"].items():
        where = f"{name} {phase_name}"
        if phase["lost"] or phase["errors"]:
            problems.append(f"{where}: {phase['lost']} unanswered, {phase['errors']} errors {phase['error_examples']}")
        for kind in ("small", "large"):
            if phase[kind]["wrong"]:
                problems.append(f"{where}: {phase[kind]['wrong']} {kind} answers differ from the in-process answer")
    ledger = run["ledger"]
    if ledger["answered"] != ledger["sent"] or ledger["doubled"] or ledger["still_waiting"]:
        problems.append(f"{name}: sent {ledger['sent']}, answered {ledger['answered']}, "
                        f"answered twice {ledger['doubled']}, still waiting {ledger['still_waiting']}")
    for label, digests in _observed(run).items():
        if digests != {run["expected"][label]}:
            problems.append(f"{name}: {label} answered {len(digests)} different ways")
    return problems


def checks(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Every call answered exactly once with the in-process answer, and the same answers in
    every run; ``ok`` is False when any run failed or any check did not hold."""
    problems = [p for run in runs for p in _run_problems(run)]
    done = [run for run in runs if "failed" not in run]
    identical = None
    if len(done) > 1:
        identical = all(_observed(run) == _observed(done[0]) for run in done[1:])
        if not identical:
            problems.append("answers differ between the runs")
    return {"ok": not problems, "problems": problems, "identical_across_runs": identical,
            "failed_runs": [run["processes"] for run in runs if "failed" in run]}


def _row(run: dict[str, Any], name: str) -> list[str]:
    phase = run["phases"][name]
    small, large, cpu = phase["small"], phase["large"], phase["cpu"]
    mb = small["mb_per_s"] + large["mb_per_s"]
    return [str(run["processes"]), name, f"{phase['seconds']:.1f}", str(small["calls"]), f"{small['calls_per_s']:.1f}",
            f"{small['p50_ms']:.1f}", f"{small['p99_ms']:.1f}", str(large["calls"]),
            f"{large['calls_per_s']:.2f}" if large["calls"] else "—", f"{mb:.1f}", f"{cpu['worker_tree']:.2f}",
            f"{cpu['worker_tree'] / phase['seconds']:.2f}", f"{cpu['engine_and_callers']:.2f}",
            f"{cpu['others']:.2f}", f"{phase['peak_rss_kib'] / 1024:.0f}"]


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}×" if a is not None and b else "—"


def _ratios(runs: list[dict[str, Any]]) -> list[str]:
    lines = []
    for run in runs:
        small, mixed = run["phases"]["small"]["small"], run["phases"]["mixed"]["small"]
        lines.append(f"small-call p99 mixed / small-only, processes={run['processes']}: "
                     f"{_ratio(mixed['p99_ms'], small['p99_ms'])} ({mixed['p99_ms']:.1f} / {small['p99_ms']:.1f} ms)")
    if len(runs) == 2:
        one, many = runs
        n = many["processes"]

        def rate(run: dict[str, Any], phase: str, key: str) -> float:
            p = run["phases"][phase]
            return float(p["small"][key] + p["large"][key])

        lines.append(f"throughput {n}/1, small-only calls/s: {_ratio(rate(many, 'small', 'calls_per_s'), rate(one, 'small', 'calls_per_s'))}")
        lines.append(f"throughput {n}/1, mixed calls/s: {_ratio(rate(many, 'mixed', 'calls_per_s'), rate(one, 'mixed', 'calls_per_s'))}"
                     f"; mixed MB/s: {_ratio(rate(many, 'mixed', 'mb_per_s'), rate(one, 'mixed', 'mb_per_s'))}")
        lines.append(f"peak RSS of the worker tree {n}/1: {_ratio(many['peak_rss_kib'], one['peak_rss_kib'])} "
                     f"({many['peak_rss_kib'] / 1024:.0f} / {one['peak_rss_kib'] / 1024:.0f} MB)")
    return lines


def _per_process(run: dict[str, Any]) -> list[str]:
    lines = []
    for name in MEASURED:
        cpu = run["phases"][name]["cpu"]
        parts = ", ".join(f"{role} {seconds:.2f}" for role, seconds in cpu["worker"].items())
        lines.append(f"processes={run['processes']} {name}: worker CPU s {parts}; engine+callers "
                     f"{cpu['engine_and_callers']:.2f}; sampler {cpu['sampler']:.2f}; other programs {cpu['others']:.2f}")
    hwm = ", ".join(f"{role} {kib / 1024:.0f}" for role, kib in run["hwm_kib"].items())
    lines.append(f"processes={run['processes']}: peak RSS of the tree {run['peak_rss_kib'] / 1024:.0f} MB "
                 f"(sampled every 50 ms); VmHWM MB {hwm}")
    return lines


def render(runs: list[dict[str, Any]], verdict: dict[str, Any], plan: Plan) -> str:
    done = [run for run in runs if "failed" not in run]
    lines = [f"{os.cpu_count()} cores; {plan.small_callers} small callers (W1), {plan.large_callers} large callers (W3) in the mixed phase; "
             f"phases {plan.small_seconds:g} s small-only, {plan.mixed_seconds:g} s mixed after {plan.warm_seconds:g} s warm-up"]
    if done:
        sizes = done[0]["request_bytes"]
        lines[0] += f"; requests {sizes['small'] / 1e6:.2f} MB small, {sizes['large'] / 1e6:.2f} MB large"
        lines.append("")
        lines += _table([list(COLUMNS)] + [_row(run, name) for run in done for name in MEASURED])
        lines.append("")
        lines += _ratios(done)
        lines.append("")
        for run in done:
            lines += _per_process(run)
    for run in runs:
        if "failed" in run:
            lines.append(f"processes={run['processes']}: FAILED — {run['failed']}")
    lines.append("")
    identical = verdict["identical_across_runs"]
    lines.append("answers byte-identical across runs: "
                 + ("yes" if identical else "NO" if identical is False else "— (one run only)"))
    lines.append("every call answered exactly once with the in-process answer: "
                 + ("yes" if not [p for p in verdict["problems"] if "run failed" not in p] else "NO"))
    lines += [f"problem: {p}" for p in verdict["problems"]]
    return "\n".join(lines)
