"""``python -m bench.speed.turn_cost [--quick] [--config JSON] [--off JSON] [--on JSON]``: the warm
agent-loop turn (W5) under one configuration against the same turn under another, measured in one
run. The defaults compare ``working_set: true`` with it off; ``--off '{}' --on
'{"profile": "recommended"}'`` compares the recommended profile with the faithful one;
``--off '{}' --on '{}' --namespace acme/proj-7`` the same turn with every call naming a namespace
that has a settings policy (cached after the first call) against the turn without namespaces.
``--jobs --off '{"profile": "recommended"}' --on '{"profile": "recommended", "compact_ahead_at":
0.01}'`` the turn of a call that starts a summary ahead of time against the same call without the
key: both loops' worker has an instant summariser, and after each call's timer stops the jobs it
started run to their end and the worker gets a fresh job runner, so every call of the measured
loop starts one (the line per pair says how many did) and none runs inside a timed call.

Definitions: the W5 workload of ``bench.kit.workloads`` (its base history and growth rounds, written
once), served warm by ``bench.speed.child``'s ``W5-warm`` loop (call ``k`` extends call ``k-1``'s
history by one round, answered the way the worker answers an engine frame). The loop runs twice,
each time in a fresh child process, alternating off/on ``--pairs`` times so that drift on a shared
machine falls on both; ``BENCH_CONFIG`` is ``--config`` (default ``{}``) updated with ``--off``,
then with ``--on``. A turn's cost is its median over the loop's calls after the first (the first
call of a loop pays for the cold start); the ratio is the median over the pairs of
on-median / off-median. Times are process CPU time unless ``--clock wall``.

``--interleave`` runs each pair in one child instead (``bench.speed.sets.run_w5_interleaved``):
two workers, one per configuration, answer each history of the loop in turn, the order
alternating and the garbage collected before each timed call, so that the drift of a shared
machine between two processes (single pairs of fresh processes range about ±25% on a two-core
machine) falls on both alike; the ratio is the same median of per-child ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from bench.speed import runner

_ROOT = str(Path(__file__).resolve().parents[2])


def _child_env(jobs: bool) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("BENCH_NAMESPACE", "BENCH_AHEAD_JOBS", "BENCH_CONFIG_OFF", "BENCH_CONFIG_ON"):
        env.pop(name, None)
    if jobs:
        env["BENCH_AHEAD_JOBS"] = "1"
    env["PYTHONPATH"] = _ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _warm(data_dir: Path, config: dict[str, Any], namespace: str | None = None,
          jobs: bool = False) -> tuple[list[float], int]:
    """The loop's timed calls after the first, and how many of those started a job."""
    env = _child_env(jobs)
    if namespace:
        env["BENCH_NAMESPACE"] = namespace
    env["BENCH_CONFIG"] = orjson.dumps(config).decode()
    done = subprocess.run([sys.executable, "-m", "bench.speed.child", "W5-warm", str(data_dir)],
                          capture_output=True, env=env, cwd=_ROOT, check=True)
    result = orjson.loads(done.stdout.splitlines()[-1])
    calls: list[float] = result["calls_ms"]
    return calls[1:], sum(1 for started in result["jobs"][1:] if started)


def _interleaved(data_dir: Path, off: dict[str, Any], on: dict[str, Any], jobs: bool) -> tuple[float, float, int, int]:
    """(off median, on median, calls measured, calls of them that started a job) of one child."""
    env = _child_env(jobs)
    env["BENCH_CONFIG_OFF"] = orjson.dumps(off).decode()
    env["BENCH_CONFIG_ON"] = orjson.dumps(on).decode()
    done = subprocess.run([sys.executable, "-m", "bench.speed.child", "W5-interleaved", str(data_dir)],
                          capture_output=True, env=env, cwd=_ROOT, check=True)
    result = orjson.loads(done.stdout.splitlines()[-1])
    off_ms, on_ms = result["off_ms"][1:], result["on_ms"][1:]
    started = sum(1 for n in result["jobs"][1:] if n)
    return statistics.median(off_ms), statistics.median(on_ms), len(on_ms), started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.speed.turn_cost", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the quick W5 loop (10 calls)")
    parser.add_argument("--pairs", type=int, default=3, help="off/on loop pairs (default 3)")
    parser.add_argument("--config", default="{}", help="the configuration both loops share (JSON)")
    parser.add_argument("--off", default='{"working_set": false}', help="the baseline's own keys (JSON)")
    parser.add_argument("--on", default='{"working_set": true}', help="the measured loop's own keys (JSON)")
    parser.add_argument("--namespace", default=None,
                        help="the measured loop names this namespace, which has a settings policy")
    parser.add_argument("--jobs", action="store_true",
                        help="give the worker a summariser and run the jobs each call starts after its timer")
    parser.add_argument("--interleave", action="store_true",
                        help="both configurations in one child per pair, call by call (not with --namespace)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="cpu",
                        help="process CPU time (default, steadier on a busy machine) or wall-clock")
    args = parser.parse_args(argv)
    if args.interleave and args.namespace:
        parser.error("--interleave does not take --namespace")
    os.environ["BENCH_CLOCK"] = args.clock  # read by the children
    base = orjson.loads(args.config)
    off_keys, on_keys = orjson.loads(args.off), orjson.loads(args.on)
    plan = runner.QUICK if args.quick else runner.FULL
    ratios: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-turn-") as tmp:
        data_dir = Path(tmp)
        runner.write_workloads(data_dir, ("W5",), plan)
        for _pair in range(args.pairs):
            if args.interleave:
                off, on, measured, started = _interleaved(data_dir, {**base, **off_keys}, {**base, **on_keys},
                                                          args.jobs)
            else:
                off_calls, _ = _warm(data_dir, {**base, **off_keys}, jobs=args.jobs)
                on_calls, started = _warm(data_dir, {**base, **on_keys}, args.namespace, args.jobs)
                off, on, measured = statistics.median(off_calls), statistics.median(on_calls), len(on_calls)
            ratios.append(on / off)
            jobs = f", {started} of {measured} measured calls started a job" if args.jobs else ""
            print(f"W5 warm turn: off {off:.3f} ms, on {on:.3f} ms, ratio {on / off:.3f}{jobs}")
    compared = args.on if args.namespace is None else f"{args.on} at namespace {args.namespace}"
    print(f"W5 warm turn, {compared} / {args.off} ({plan.w5_calls} calls, {args.pairs} pairs, "
          f"config {args.config}): {statistics.median(ratios):.3f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
