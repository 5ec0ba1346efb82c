"""``python -m bench.league [--data DIR] [--budgets 32k,128k] [--json] [--quick] [--plot PNG]``.

Prints the league table: per budget, every peer strategy (``bench.kit.peers``, with the
observation-masking sweep) and every worker mode (``bench.league.modes``), summed over the
sessions of the folder (the generated ones, ``bench/kit/sessions``, by default). ``--quick``
replays only the smallest session at 32k (a smoke test). Definitions: ``bench/league/__init__.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench.kit.sessions import shipped_sessions
from bench.league.run import BUDGETS
from bench.league.standings import LEGEND, league, strategies
from bench.league.table import markdown


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.league", description=__doc__)
    parser.add_argument("--data", type=Path, help="folder of recorded sessions (default: the generated ones)")
    parser.add_argument("--budgets", default="32k,128k", help="comma-separated, of " + ",".join(BUDGETS))
    parser.add_argument("--strategies", help="comma-separated strategy names (default: all)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead")
    parser.add_argument("--quick", action="store_true", help="the smallest session at 32k only")
    parser.add_argument("--plot", type=Path, help="also draw billed input against recall to this PNG")
    parser.add_argument("--progress", action="store_true", help="time each row on stderr")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    sessions = shipped_sessions(args.data) if args.data else shipped_sessions()
    if not sessions:
        print(f"no sessions (*.json, *.json.gz) in {args.data}", file=sys.stderr)
        return 2
    budgets = [b.strip() for b in args.budgets.split(",") if b.strip()]
    if args.quick:
        sessions = [min(sessions, key=lambda s: len(s.messages))]
        budgets = ["32k"]
    unknown = [b for b in budgets if b not in BUDGETS]
    chosen = strategies(args.quick)
    if args.strategies:
        wanted = [s.strip() for s in args.strategies.split(",") if s.strip()]
        by_name = {s.name: s for s in chosen}
        unknown += [name for name in wanted if name not in by_name]
        chosen = [by_name[name] for name in wanted if name in by_name]
    if unknown:
        print(f"unknown budget(s) or strategy(ies): {', '.join(unknown)}", file=sys.stderr)
        return 2
    started = time.monotonic()
    rows = league(sessions, budgets, chosen, args.progress)
    if args.plot:
        from bench.league.plot import draw  # matplotlib: only when asked for
        draw(rows, args.plot)
    if args.json:
        print(json.dumps([row.as_json() for row in rows], indent=1))
    else:
        print(markdown(rows))
        print()
        print(LEGEND)
        print(f"\n{len(sessions)} session(s), {time.monotonic() - started:.0f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

