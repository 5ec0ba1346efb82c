"""``python -m bench.scale [--processes N] [--quick] [--json FILE]``: the worker under mixed load at
one process and at N.

For each process count a load process (``bench.scale.load``) starts a test engine, the worker
(``python -m context_manager --url … [--processes N]``) and its callers, and runs three phases:
a warm-up, small calls only, then the same small calls with a few callers looping large calls.
This process only samples: the worker tree's resident memory every 50 ms and the CPU time of
every process at each phase's start and end, so that sampling never competes with the callers
inside one interpreter. A run that cannot start its worker is reported as failed, not raised.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from bench.scale.report import checks, render
from bench.scale.run import run_one
from bench.scale.workload import FULL, QUICK


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2, help="the N compared with one process (default 2)")
    parser.add_argument("--quick", action="store_true", help="short phases and a smaller large history (seconds)")
    parser.add_argument("--json", help="also write the raw measurements to this file")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.processes < 1:
        sys.exit("--processes must be at least 1")
    plan = QUICK if args.quick else FULL
    counts = [1] if args.processes == 1 else [1, args.processes]
    runs = [run_one(n, plan) for n in counts]
    verdict = checks(runs)
    print(render(runs, verdict, plan))
    if args.json:
        Path(args.json).write_bytes(orjson.dumps({"plan": plan.as_dict(), "runs": runs, "checks": verdict},
                                                 option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    return 0 if verdict["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

