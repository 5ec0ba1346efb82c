"""``python -m bench [--quick] [--only W1,W4] [--clock wall|cpu] [--json FILE] [--markdown] [--no-e2e]``."""

from __future__ import annotations

import argparse
import os
import sys


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer runs and smaller sizes (< 60 s)")
    parser.add_argument("--only", default="W1,W2,W2-prune,W3,W4,W5",
                        help="comma-separated workload sets (default: all of W1,W2,W2-prune,W3,W4,W5)")
    parser.add_argument("--json", help="also write the raw measurements to this file")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall-clock latency (default) or process CPU time (steadier on a busy machine)")
    parser.add_argument("--no-e2e", action="store_true", help="skip the end-to-end engine column")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse(sys.argv[1:])
    os.environ["BENCH_CLOCK"] = args.clock  # before bench.kit.measure is imported, and for children
    from bench.speed.runner import ALL_SETS, main

    sets = tuple(s.strip() for s in args.only.split(",") if s.strip())
    unknown = [s for s in sets if s not in ALL_SETS]
    if unknown:
        sys.exit(f"unknown workload set(s): {', '.join(unknown)}; known: {', '.join(ALL_SETS)}")
    sys.exit(main(sets, args.quick, args.json, args.markdown, not args.no_e2e))
