"""``python -m bench.speed.turn_cost [--quick] [--config JSON] [--off JSON] [--on JSON]``: the warm
agent-loop turn (W5) under one configuration against the same turn under another, measured in one
run. The defaults compare ``working_set: true`` with it off; ``--off '{}' --on
'{"profile": "recommended"}'`` compares the recommended profile with the faithful one;
``--off '{}' --on '{}' --namespace acme/proj-7`` the same turn with every call naming a namespace
that has a settings policy (cached after the first call) against the turn without namespaces.

Definitions: the W5 workload of ``bench.kit.workloads`` (its base history and growth rounds, written
once), served warm by ``bench.speed.child``'s ``W5-warm`` loop (call ``k`` extends call ``k-1``'s
history by one round, answered the way the worker answers an engine frame). The loop runs twice,
each time in a fresh child process, alternating off/on ``--pairs`` times so that drift on a shared
machine falls on both; ``BENCH_CONFIG`` is ``--config`` (default ``{}``) updated with ``--off``,
then with ``--on``. A turn's cost is its median over the loop's calls after the first (the first
call of a loop pays for the cold start); the ratio is the median over the pairs of
on-median / off-median. Times are process CPU time unless ``--clock wall``.
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


def _warm(data_dir: Path, config: dict[str, Any], namespace: str | None = None) -> list[float]:
    env = dict(os.environ)
    env.pop("BENCH_NAMESPACE", None)
    if namespace:
        env["BENCH_NAMESPACE"] = namespace
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env["BENCH_CONFIG"] = orjson.dumps(config).decode()
    done = subprocess.run([sys.executable, "-m", "bench.speed.child", "W5-warm", str(data_dir)],
                          capture_output=True, env=env, cwd=root, check=True)
    calls: list[float] = orjson.loads(done.stdout.splitlines()[-1])["calls_ms"]
    return calls[1:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.speed.turn_cost", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the quick W5 loop (10 calls)")
    parser.add_argument("--pairs", type=int, default=3, help="off/on loop pairs (default 3)")
    parser.add_argument("--config", default="{}", help="the configuration both loops share (JSON)")
    parser.add_argument("--off", default='{"working_set": false}', help="the baseline's own keys (JSON)")
    parser.add_argument("--on", default='{"working_set": true}', help="the measured loop's own keys (JSON)")
    parser.add_argument("--namespace", default=None,
                        help="the measured loop names this namespace, which has a settings policy")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="cpu",
                        help="process CPU time (default, steadier on a busy machine) or wall-clock")
    args = parser.parse_args(argv)
    os.environ["BENCH_CLOCK"] = args.clock  # read by the children
    base = orjson.loads(args.config)
    off_keys, on_keys = orjson.loads(args.off), orjson.loads(args.on)
    plan = runner.QUICK if args.quick else runner.FULL
    ratios: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-turn-") as tmp:
        data_dir = Path(tmp)
        runner.write_workloads(data_dir, ("W5",), plan)
        for _pair in range(args.pairs):
            off = statistics.median(_warm(data_dir, {**base, **off_keys}))
            on = statistics.median(_warm(data_dir, {**base, **on_keys}, args.namespace))
            ratios.append(on / off)
            print(f"W5 warm turn: off {off:.3f} ms, on {on:.3f} ms, ratio {on / off:.3f}")
    measured = args.on if args.namespace is None else f"{args.on} at namespace {args.namespace}"
    print(f"W5 warm turn, {measured} / {args.off} ({plan.w5_calls} calls, {args.pairs} pairs, "
          f"config {args.config}): {statistics.median(ratios):.3f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
