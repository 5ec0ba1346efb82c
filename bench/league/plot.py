"""The league drawn: billed input (automatic caching) against long-range recall, one panel per budget.

One point per strategy: peers as squares, the worker's modes as circles; a hollow marker is a
strategy that overflowed (its bill leaves out the calls it could not send, so it looks cheaper
than it is). Of the observation-masking sweep only M = 10 and the best M are drawn. matplotlib is
a benchmark-only dependency (the ``bench`` extra).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bench.league.table import Row  # noqa: E402


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


def draw(rows: list[Row], path: Path) -> None:
    budgets = list(dict.fromkeys(r.budget for r in rows))
    figure, axes = plt.subplots(1, len(budgets), figsize=(8 * len(budgets), 7.5), squeeze=False)
    for axis, budget in zip(axes[0], budgets):
        for row in drawn([r for r in rows if r.budget == budget]):
            led = row.ledger
            if led.recall is None:
                continue
            x, y = led.billed_automatic / 1e6, 100 * led.recall
            peer = row.kind == "peer"
            colour = "#d9730d" if peer else "#1f5fa8"
            hollow = led.overflows > 0
            axis.scatter([x], [y], marker="s" if peer else "o", s=60, linewidths=1.5,
                         facecolors="none" if hollow else colour, edgecolors=colour, zorder=3)
            label = row.strategy.removeprefix("worker: ")
            if hollow:
                label += f" ({led.overflows} overflows)"
            axis.annotate(label, (x, y), xytext=(5, 3), textcoords="offset points", fontsize=7,
                          color=colour)
        axis.set_title(f"{budget} window: billed input against long-range recall")
        axis.set_xlabel("billed input, automatic caching (M uncached-token equivalents)")
        axis.set_ylabel("long-range future-entity recall (%)")
        axis.grid(True, alpha=0.3)
    handles = [plt.Line2D([], [], marker="s", linestyle="", color="#d9730d", label="peer strategy"),
               plt.Line2D([], [], marker="o", linestyle="", color="#1f5fa8", label="worker mode"),
               plt.Line2D([], [], marker="o", linestyle="", markerfacecolor="none", color="grey",
                          label="overflowed (calls not sent are not billed)")]
    figure.legend(handles=handles, loc="lower center", ncol=3, frameon=False)
    figure.tight_layout(rect=(0, 0.04, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
