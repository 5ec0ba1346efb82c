"""What ``count_calibration: usage`` adds to a warm worker turn (W5's agent loop).

    BENCH_CONFIG='{"count_calibration": "usage"}' python -m bench.calibration_cost [--calls 30] [--strip-usage]

Runs W5's growing history through one ``WorkerTurn`` and reports the CPU time per warm turn
(turns 6..N) and the part spent choosing the anchor and keeping the ledger. ``--strip-usage``
removes the ``usage`` members (W5's are random), so both modes take the same decisions and the
difference is the calibration's own cost.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import orjson

import context_manager.core.assemble as assemble_module
from bench import workloads
from bench.inproc import WorkerTurn

WARMUP = 5


def _timed(function: Callable[..., Any], spent: dict[str, float], key: str) -> Callable[..., Any]:
    def wrapper(*args: Any) -> Any:
        start = time.process_time()
        try:
            return function(*args)
        finally:
            spent[key] += time.process_time() - start
    return wrapper


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--strip-usage", action="store_true")
    args = parser.parse_args(argv)
    base = workloads._assemble_request(workloads.session_for("W2", quick=True), workloads.DEFAULT_SEED)
    growth = workloads.w5_growth(calls=args.calls)
    if args.strip_usage:
        def strip(m: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in m.items() if k != "usage"}
        base = {**base, "messages": [strip(m) for m in base["messages"]]}
        growth = [[strip(m) for m in round_] for round_ in growth]
    spent = {"calibration": 0.0}
    assemble_module._calibration = _timed(assemble_module._calibration, spent, "calibration")
    assemble_module._remember_sent = _timed(assemble_module._remember_sent, spent, "calibration")
    turn = WorkerTurn()
    frames = [turn.frame("context::assemble", orjson.dumps(
        {**base, "messages": base["messages"] + [m for r in growth[:k] for m in r]}), k)
        for k in range(1, args.calls + 1)]
    total = 0.0
    for k, frame in enumerate(frames):
        if k == WARMUP:
            spent["calibration"] = 0.0
        start = time.process_time()
        turn(frame)
        if k >= WARMUP:
            total += time.process_time() - start
    turns = len(frames) - WARMUP
    print(f"config {os.environ.get('BENCH_CONFIG', '{}')}: {turns} warm turns, "
          f"{total / turns * 1000:.3f} ms per turn, calibration {spent['calibration'] / turns * 1000:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
