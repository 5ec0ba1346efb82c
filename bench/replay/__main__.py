"""``python -m bench.replay [--sessions A,B] [--budgets 32k,64k,128k] [--modes ...] [--dir DIR] [--economy]``,
or ``python -m bench.replay harness [ARGS ...]`` (``bench.replay.harness``).

Prints one Markdown table: a row per session, budget and mode; with ``--economy``, a row per
budget and mode summed over the sessions, priced by the one cost model of the suites
(``bench.kit.ledger``). The numbers are deterministic (no timings), so the tables can be
quoted as is.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.kit import cli
from bench.kit.sessions import named_sessions
from bench.replay.replay import (
    BUDGETS,
    DEFAULT_BUDGETS,
    ECONOMY_MODES,
    MODES,
    MODES_BY_NAME,
    replay,
    shipped_sessions,
)
from bench.replay.tables import (
    ECONOMY_BUDGETS,
    ECONOMY_COLUMNS,
    ECONOMY_LEGEND,
    LEGEND,
    economy_rows,
    markdown,
    row,
)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__)
    parser.add_argument("--sessions", help="comma-separated session names (default: every shipped one)")
    parser.add_argument("--budgets", help="comma-separated, of " + ",".join(BUDGETS)
                        + f" (default {','.join(DEFAULT_BUDGETS)}; with --economy {','.join(ECONOMY_BUDGETS)})")
    parser.add_argument("--modes", help="comma-separated, of " + ",".join(m.name for m in MODES)
                        + " (default: all; with --economy the cost comparison's)")
    parser.add_argument("--economy", action="store_true",
                        help="print the prefix-cache cost table summed over sessions instead")
    parser.add_argument("--dir", "--data", dest="dir", type=Path,
                        help="read sessions from this directory instead (e.g. ../shared/realdata)")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    sessions = shipped_sessions(args.dir) if args.dir else shipped_sessions()
    if args.sessions:
        picked = named_sessions(sessions, args.sessions)
        if picked is None:
            return 2
        sessions = picked
    default_budgets = ECONOMY_BUDGETS if args.economy else DEFAULT_BUDGETS
    default_modes = ECONOMY_MODES if args.economy else tuple(m.name for m in MODES)
    budgets = [b.strip() for b in (args.budgets or ",".join(default_budgets)).split(",") if b.strip()]
    modes = [m.strip() for m in (args.modes or ",".join(default_modes)).split(",") if m.strip()]
    unknown = [b for b in budgets if b not in BUDGETS] + [m for m in modes if m not in MODES_BY_NAME]
    if unknown:
        print(f"unknown budget(s) or mode(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.economy:
        results = [(budget, mode, replay(session, budget, MODES_BY_NAME[mode]))
                   for budget in budgets for mode in modes for session in sessions]
        print(markdown(economy_rows(results), ECONOMY_COLUMNS, text_columns=(0, 1)))
        print()
        print(ECONOMY_LEGEND)
        return 0
    rows = [row(session, replay(session, budget, MODES_BY_NAME[mode]))
            for session in sessions for budget in budgets for mode in modes]
    print(markdown(rows))
    print()
    print(LEGEND)
    return 0


COMMANDS = {
    "harness": ("bench.replay.harness", "the agent harness's turn loop over recorded sessions: failed turns"),
}

if __name__ == "__main__":
    sys.exit(cli.run(sys.argv[1:], COMMANDS, main, "python -m bench.replay"))

