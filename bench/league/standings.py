"""The league's standings: every strategy (peers, the masking sweep, the worker modes) at every budget, summed over the sessions; the legend states the definitions."""

from __future__ import annotations

import sys
import time

from bench.kit.ledger import Ledger
from bench.kit.modes import Mode
from bench.kit.peers import MASKING_SWEEP, PEERS, Peer, masking_peer
from bench.kit.sessions import Session
from bench.league.modes import WORKER_MODES
from bench.league.run import BUDGETS, run_peer, run_worker
from bench.league.table import Row

LEGEND = """\
Each row sums the sessions. overflows = calls that could not be sent; tokens sent = tokens of the
contexts sent; prefix rewrites = sent calls that do not extend the previous one; cache hit = cached
input / input (summariser requests included); billed = uncached-token equivalents, automatic caching
(cached 0.1, rest 1) and Anthropic's (cached read 0.1, rest written 1.25), summariser replies at 1;
summariser input = its requests' tokens; long-range recall = share of the entities the next 10
messages use, seen before the last 20, found in the context sent, over the calls whose raw history
exceeds the default usable budget (at 128k: the 32000-token history budget, bench.league.recall;
"of N" = the needs scored). Counts are bytes / 4. Definitions: bench/league/__init__.py."""


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

