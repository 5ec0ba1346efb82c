"""``python -m bench.speed [--quick] [--only W1,W4] [--clock wall|cpu] [--json FILE] [--markdown] [--no-e2e]``,
or ``python -m bench.speed COMMAND [ARGS ...]`` for one of :data:`COMMANDS`."""

from __future__ import annotations

import argparse
import os
import sys

from bench.kit import cli

COMMANDS = {
    "profile": ("bench.speed.profile", "cProfile top costs and a phase split of one call (W1 W2 W4 ...)"),
    "large-history": ("bench.speed.large_history", "in-process criteria on a 1 MB, 400-message history"),
    "turn-cost": ("bench.speed.turn_cost", "the warm agent-loop turn (W5) under two configurations"),
    "instructions": ("bench.speed.instructions", "a warm call's instructions in two checkouts (valgrind)"),
}


def parse(argv: list[str], prog: str = "python -m bench.speed", more: str = "") -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     epilog=cli.usage(COMMANDS, prog) + more,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs and smaller sizes (< 60 s)")
    parser.add_argument("--only", default="W1,W2,W2-prune,W3,W4,W5",
                        help="comma-separated workload sets (default: all of W1,W2,W2-prune,W3,W4,W5)")
    parser.add_argument("--json", help="also write the raw measurements to this file")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall-clock latency (default) or process CPU time (steadier on a busy machine)")
    parser.add_argument("--no-e2e", action="store_true", help="skip the end-to-end engine column")
    return parser.parse_args(argv)


def workloads(argv: list[str], prog: str = "python -m bench.speed", more: str = "") -> int:
    args = parse(argv, prog, more)
    os.environ["BENCH_CLOCK"] = args.clock  # before bench.kit.measure is imported, and for children
    from bench.speed.runner import ALL_SETS, main

    sets = tuple(s.strip() for s in args.only.split(",") if s.strip())
    unknown = [s for s in sets if s not in ALL_SETS]
    if unknown:
        sys.exit(f"unknown workload set(s): {', '.join(unknown)}; known: {', '.join(ALL_SETS)}")
    return main(sets, args.quick, args.json, args.markdown, not args.no_e2e)


if __name__ == "__main__":
    sys.exit(cli.run(sys.argv[1:], COMMANDS, workloads, "python -m bench.speed"))
