"""``python -m bench.speed instructions OLD NEW [--calls N] [--sets W1,W2,W5]``: the work of a warm
``context::assemble`` call in two checkouts, counted in machine instructions, so a change can be
held to a few percent on a machine too busy for timings to say so.

Definitions. OLD and NEW are source trees (a checkout or ``git worktree`` of each commit); each is
run with its own ``src/`` and ``bench/`` first on ``PYTHONPATH``, ``PYTHONHASHSEED=0``, under
Valgrind's cachegrind (``--cache-sim=no``: instructions executed, the same on every run of the
same program and input). For each set the driver makes one warm-up call, then ``N`` more: W1 and
W2 repeat the same request (the quick shapes of ``bench.kit.workloads``), W5 is the agent loop
(call ``k`` extends call ``k-1``'s history by one round). The cost of one call is (instructions
with ``N`` calls - instructions with none) / ``N``: start-up, imports and the warm-up cancel out.
The ratio is NEW / OLD. Counts exclude time spent waiting and say nothing about cache misses;
the timed suite (``python -m bench.speed``) stays the measure of latency.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DRIVER = """
import sys
from bench.kit import workloads as wl
from context_manager import call
kind, n = sys.argv[1], int(sys.argv[2])
if kind in ("W1", "W2"):
    payload = (wl.w1 if kind == "W1" else wl.w2)(quick=True).payload
    call("context::assemble", payload)
    for _ in range(n):
        call("context::assemble", payload)
else:
    histories = wl.w5_histories(quick=True)
    call("context::assemble", histories[0].payload)
    for history in histories[1:1 + n]:
        call("context::assemble", history.payload)
"""
SETS = ("W1", "W2", "W5")


def instructions(tree: Path, workload: str, calls: int, scratch: Path) -> int:
    driver = scratch / "driver.py"
    driver.write_text(DRIVER)
    out = scratch / f"cachegrind.{workload}.{calls}.out"
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
    subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                    sys.executable, str(driver), workload, str(calls)],
                   cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    found = re.search(r"^summary: (\d+)", out.read_text(), re.MULTILINE)
    if found is None:
        raise RuntimeError(f"no instruction count in {out}")
    return int(found.group(1))


def per_call(tree: Path, workload: str, calls: int, scratch: Path) -> float:
    return (instructions(tree, workload, calls, scratch) - instructions(tree, workload, 0, scratch)) / calls


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.speed instructions", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path, help="the source tree measured against")
    parser.add_argument("new", type=Path, help="the source tree measured")
    parser.add_argument("--calls", type=int, default=6, help="calls after the warm-up (default 6; W5 has at most 9)")
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated, of " + ",".join(SETS))
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install -y valgrind)", file=sys.stderr)
        return 2
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in sets if s not in SETS]
    missing = [str(t) for t in (args.old, args.new) if not (t / "src" / "context_manager").is_dir()]
    if unknown or missing or not 1 <= args.calls <= 9:
        print(f"unknown set(s): {unknown}; not a source tree: {missing}; --calls must be 1..9", file=sys.stderr)
        return 2
    print("set  old Minstr/call  new Minstr/call  new/old")
    with tempfile.TemporaryDirectory() as scratch:
        for workload in sets:
            old = per_call(args.old.resolve(), workload, args.calls, Path(scratch))
            new = per_call(args.new.resolve(), workload, args.calls, Path(scratch))
            print(f"{workload:4} {old / 1e6:15.2f}  {new / 1e6:15.2f}  {new / old:7.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
