"""``python -m bench.recall [--data DIR] [--budgets 16k/2k,32k/4k] [--modes ...] [--sessions ...] [--quick] [--json FILE] [--missing N] [--plans]``.

With ``--plans`` it replays the generated plan sessions instead (``bench.kit.generate``) and
prints their plan and constraint fidelity (``bench.recall.plan``).

Replays every recorded session (the generated ones of ``bench/kit/sessions`` by default) as a
persisting harness does, with the deterministic summariser (``bench.kit.loop``, ``bench.kit.summariser``), per
budget and mode, and prints one Markdown table per budget: the long-range future-entity recall
(defined in ``bench.kit.recall`` and ``bench.kit.entities``) beside the overflows, the
prefix rewrites and the billed input of ``bench.kit.ledger``. The numbers are deterministic.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench.kit.generate import plan_sessions
from bench.kit.sessions import named_sessions, sessions_of
from bench.recall.modes import DEFAULT_BUDGETS, MODES, QUICK_MODES, budget, mode
from bench.recall.plan import PLAN_MODES, measure_plans, plan_table
from bench.recall.run import LEGEND, QUICK_SESSION, measure, table

# The plan functions of the generated plan sessions.
PLAN_TOOLS = ("TodoWrite", "update_plan")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.recall", description=__doc__)
    parser.add_argument("--data", type=Path,
                        help="read recorded sessions (*.json, *.json.gz) from this directory")
    parser.add_argument("--sessions", help="comma-separated session names (default: every one)")
    parser.add_argument("--budgets", help="comma-separated WINDOW/OUTPUT, e.g. 16k/2k "
                        f"(default {','.join(DEFAULT_BUDGETS)})")
    parser.add_argument("--modes", help="comma-separated, of " + ",".join(m.name for m in MODES)
                        + " or any mode of bench.kit.modes (default: the former)")
    parser.add_argument("--quick", action="store_true",
                        help=f"one generated session ({QUICK_SESSION}), 16k/2k, modes "
                        + ",".join(QUICK_MODES) + " (a smoke run)")
    parser.add_argument("--json", type=Path, help="also write the rows (with every missed entity) here")
    parser.add_argument("--missing", type=int, default=0, metavar="N",
                        help="print the N most often missed entities of each row")
    parser.add_argument("--plans", action="store_true",
                        help="the generated plan sessions: plan fidelity, stale plans, completed-item "
                        "regressions and constraint fidelity (modes " + ",".join(m.name for m in PLAN_MODES) + ")")
    return parser.parse_args(argv)


def plans_main(args: argparse.Namespace) -> int:
    budgets = _names(args.budgets, DEFAULT_BUDGETS)
    modes = [m for m in PLAN_MODES if args.modes is None or m.name in args.modes.split(",")]
    if args.modes:
        modes += [found for name in args.modes.split(",")
                  if name not in {m.name for m in PLAN_MODES} and (found := mode(name)) is not None]
    sessions = plan_sessions()
    rows = []
    for budget_name in budgets:
        window, output = budget(budget_name) or ("", 0)
        if not window:
            print(f"unknown budget: {budget_name}", file=sys.stderr)
            return 2
        measured = measure_plans(sessions, budget_name, window, output, modes, PLAN_TOOLS)
        rows.extend(measured)
        print(f"### {budget_name} ({len(sessions)} plan sessions)\n")
        print(plan_table(measured))
        print()
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.plans:
        return plans_main(args)
    loaded = sessions_of(args.data)
    if loaded is None:
        return 2
    sessions = loaded
    wanted = args.sessions or (QUICK_SESSION if args.quick and not args.data else None)
    if wanted:
        picked = named_sessions(sessions, wanted)
        if picked is None:
            return 2
        sessions = picked
    if not sessions:
        print("no recorded sessions (*.json, *.json.gz) found", file=sys.stderr)
        return 2
    budgets = _names(args.budgets, ("16k/2k",) if args.quick else DEFAULT_BUDGETS)
    modes = _names(args.modes, QUICK_MODES if args.quick else tuple(m.name for m in MODES))
    unknown = [b for b in budgets if budget(b) is None] + [m for m in modes if mode(m) is None]
    if unknown:
        print(f"unknown budget(s) or mode(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    for budget_name in budgets:
        measured = measure(sessions, budget_name, modes)
        rows.extend(measured)
        print(f"### {budget_name} ({len(sessions)} sessions)\n")
        print(table(measured))
        for row in measured[:] if args.missing else ():
            top = ", ".join(f"{entity} ({count})" for entity, count in row["missing"][:args.missing])
            print(f"\nmissed by {row['mode']}: {top or '-'}")
        print()
    print(LEGEND)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


def _names(given: str | None, default: tuple[str, ...]) -> list[str]:
    return [n.strip() for n in (given or ",".join(default)).split(",") if n.strip()]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

