"""Which league rows are drawn, the cost–recall front, and a panel's title: the plot's choices, kept
apart from the drawing so that they load (and are tested) without matplotlib.

Drawn (:func:`drawn`): every peer strategy (of the observation-masking sweep only M = 10 and the
best M), the worker's default configuration as a reference and its two profiles (``worker:
recommended`` with and without a summariser), plus, at a budget whose pressure set is the history
budget's (``bench.league.recall.PRESSURE_CEILING``), the recommended profile with that history
budget; the other worker modes (ablations) stay in the table. The cost–recall front
(:func:`front`): of the drawn rows with 0 overflows, those no other such row beats on both the bill
(lower) and recall (higher).
"""

from __future__ import annotations

from collections import Counter

from bench.league.recall import PRESSURE_CEILING
from bench.league.table import Row

DEFAULT = "worker: defaults"
PROFILES = ("worker: recommended", "worker: recommended without summariser")
HISTORY = ("worker: recommended+history 32000", "worker: recommended+history 32000 without summariser")


def best_masking(rows: list[Row]) -> Row | None:
    """Of one budget's masking rows: fewest overflows, then the highest recall, then the lowest bill."""
    masking = [r for r in rows if r.strategy.startswith("masking M=")]
    if not masking:
        return None
    return min(masking, key=lambda r: (r.ledger.overflows, -(r.ledger.recall or 0.0),
                                       r.ledger.billed_automatic))


def drawn(rows: list[Row]) -> list[Row]:
    """One budget's rows that are drawn, in table order."""
    best = best_masking(rows)
    workers = {DEFAULT, *PROFILES}
    if rows and rows[0].budget in PRESSURE_CEILING:
        workers.update(HISTORY)

    def shown(row: Row) -> bool:
        if row.kind == "worker":
            return row.strategy in workers
        return not row.strategy.startswith("masking M=") or row.strategy == "masking M=10" or row is best

    return [r for r in rows if shown(r)]


def recall_of(row: Row) -> float:
    recall = row.ledger.recall
    return 1.0 if recall is None else recall


def front(rows: list[Row]) -> list[Row]:
    """The cost–recall front of ``rows``: those with 0 overflows that no other row with 0 overflows
    dominates (billed no higher and recall no lower, one of them strictly), cheapest first."""
    sent = [r for r in rows if not r.ledger.overflows]

    def dominated(row: Row) -> bool:
        bill, recall = row.ledger.billed_automatic, recall_of(row)
        return any(o.ledger.billed_automatic <= bill and recall_of(o) >= recall
                   and (o.ledger.billed_automatic < bill or recall_of(o) > recall) for o in sent)

    return sorted((r for r in sent if not dominated(r)),
                  key=lambda r: (r.ledger.billed_automatic, -recall_of(r)))


def point(row: Row) -> tuple[float, float]:
    return round(row.ledger.billed_automatic / 1e6, 3), round(100 * recall_of(row), 1)


def name(row: Row) -> str:
    name = row.strategy + (" (the default)" if row.strategy == DEFAULT else "")
    if row.ledger.overflows:
        name += f" ({row.ledger.overflows} overflows)"
    return name


def pressure_title(budget: str, rows: list[Row]) -> str:
    """The panel's title: the budget and the calls its recall is scored on."""
    needs = Counter(r.ledger.recall_total for r in rows if r.ledger.recall is not None)
    ceiling = PRESSURE_CEILING.get(budget)
    where = (f"calls whose raw history exceeds the history budget ({ceiling:,} tokens)" if ceiling
             else "calls whose raw history exceeds the default usable budget")
    count = f", {needs.most_common(1)[0][0]:,} long-range needs" if needs else ", none"
    return f"{budget} window\nrecall over the {where}{count}"
