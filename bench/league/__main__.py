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

from bench.kit.ledger import Ledger
from bench.kit.modes import Mode
from bench.kit.peers import MASKING_SWEEP, PEERS, Peer, masking_peer
from bench.kit.sessions import Session, shipped_sessions
from bench.league.modes import WORKER_MODES
from bench.league.run import BUDGETS, run_peer, run_worker
from bench.league.table import Row, markdown

LEGEND = """\
Each row sums the sessions. overflows = calls that could not be sent; tokens sent = tokens of the
contexts sent; prefix rewrites = sent calls that do not extend the previous one; cache hit = cached
input / input (summariser requests included); billed = uncached-token equivalents, automatic caching
(cached 0.1, rest 1) and Anthropic's (cached read 0.1, rest written 1.25), summariser replies at 1;
summariser input = its requests' tokens; long-range recall = share of the entities the next 10
messages use, seen before the last 20, found in the context sent, over the calls whose raw history
exceeds the default usable budget. Counts are bytes / 4. Definitions: bench/league/__init__.py."""


def strategies(quick: bool) -> list[Peer | Mode]:
    peers: list[Peer | Mode] = [*PEERS]
    if not quick:
        peers += [masking_peer(keep) for keep in MASKING_SWEEP]
    return [*peers, *WORKER_MODES]


def league(sessions: list[Session], budgets: list[str], chosen: list[Peer | Mode],
           progress: bool = False) -> list[Row]:
    rows = []
    for budget in budgets:
        for strategy in chosen:
            total, started = Ledger(), time.monotonic()
            for session in sessions:
                if isinstance(strategy, Peer):
                    total.add(run_peer(session, BUDGETS[budget], strategy))
                else:
                    total.add(run_worker(session, BUDGETS[budget], strategy))
            if isinstance(strategy, Peer):
                rows.append(Row(budget, strategy.name, "peer", strategy.summarises, total))
            else:
                rows.append(Row(budget, strategy.name, "worker", strategy.summarizer, total))
            if progress:
                print(f"{budget} {strategy.name}: {time.monotonic() - started:.1f} s", file=sys.stderr)
    return rows


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
