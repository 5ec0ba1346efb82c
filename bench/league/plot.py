"""The league drawn: billed input (automatic caching) against long-range recall, one panel per budget.

One point per strategy, numbered, with the key under the panel: peers as orange squares, the
worker's modes as blue circles; strategies that land on the same point share it. A hollow marker
is a strategy that overflowed (its bill leaves out the calls it could not send, so it looks
cheaper than it is). Of the observation-masking sweep only M = 10 and the best M are drawn. When
no call of a budget is under pressure there is nothing to recall: the points are drawn at 100%
and the panel says so. matplotlib is a benchmark-only dependency (the ``bench`` extra).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bench.league.table import Row  # noqa: E402

PEER, WORKER = "#d9730d", "#1f5fa8"


def best_masking(rows: list[Row]) -> Row | None:
    """Of one budget's masking rows: fewest overflows, then the highest recall, then the lowest bill."""
    masking = [r for r in rows if r.strategy.startswith("masking M=")]
    if not masking:
        return None
    return min(masking, key=lambda r: (r.ledger.overflows, -(r.ledger.recall or 0.0),
                                       r.ledger.billed_automatic))


def drawn(rows: list[Row]) -> list[Row]:
    best = best_masking(rows)
    return [r for r in rows if not r.strategy.startswith("masking M=") or r.strategy == "masking M=10"
            or r is best]


def _point(row: Row) -> tuple[float, float]:
    recall = row.ledger.recall
    return round(row.ledger.billed_automatic / 1e6, 3), 100.0 if recall is None else round(100 * recall, 1)


def draw(rows: list[Row], path: Path) -> None:
    budgets = list(dict.fromkeys(r.budget for r in rows))
    figure, axes = plt.subplots(2, len(budgets), figsize=(9 * len(budgets), 13), squeeze=False,
                                gridspec_kw={"height_ratios": [3, 2]})
    for column, budget in enumerate(budgets):
        axis, key = axes[0][column], axes[1][column]
        mine = drawn([r for r in rows if r.budget == budget])
        points: dict[tuple[float, float], list[Row]] = {}
        for row in mine:
            points.setdefault(_point(row), []).append(row)
        lines: list[tuple[str, str]] = []
        for number, ((x, y), group) in enumerate(points.items(), start=1):
            peer = group[0].kind == "peer"
            colour = PEER if peer else WORKER
            hollow = any(r.ledger.overflows for r in group)
            axis.scatter([x], [y], marker="s" if peer else "o", s=70, linewidths=1.5,
                         facecolors="none" if hollow else colour, edgecolors=colour, zorder=3)
            # Alternate sides so that numbers of neighbouring points do not print over each other.
            offset = (6, 3) if number % 2 else (-16, -11)
            axis.annotate(str(number), (x, y), xytext=offset, textcoords="offset points", fontsize=8,
                          color=colour, weight="bold")
            for row in group:
                name = row.strategy.removeprefix("worker: ")
                if row.kind == "worker":
                    name = f"worker: {name}"
                if row.ledger.overflows:
                    name += f" ({row.ledger.overflows} overflows)"
                lines.append((f"{number:>2}  {name}", PEER if row.kind == "peer" else WORKER))
        untouched = all(r.ledger.recall is None for r in mine)
        title = f"{budget} window"
        if untouched:
            title += ": no call over the budget, nothing to recall (drawn at 100%)"
        axis.set_title(title)
        axis.set_xlabel("billed input, automatic caching (M uncached-token equivalents)")
        axis.set_ylabel("long-range future-entity recall (%)")
        axis.set_ylim(0, 105)
        axis.grid(True, alpha=0.3)
        key.axis("off")
        half = (len(lines) + 1) // 2
        for index, (text, colour) in enumerate(lines):
            left = index < half
            key.text(0.0 if left else 0.5, 1 - 0.065 * (index if left else index - half), text,
                     transform=key.transAxes, fontsize=8, color=colour, va="top", family="monospace")
    handles = [plt.Line2D([], [], marker="s", linestyle="", color=PEER, label="peer strategy"),
               plt.Line2D([], [], marker="o", linestyle="", color=WORKER, label="worker mode"),
               plt.Line2D([], [], marker="o", linestyle="", markerfacecolor="none", color="grey",
                          label="overflowed (calls not sent are not billed)")]
    figure.legend(handles=handles, loc="upper center", ncol=3, frameon=False)
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
