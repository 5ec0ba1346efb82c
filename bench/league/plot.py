"""The league drawn: billed input (automatic caching) against long-range recall, one panel per budget.

Drawn (:func:`drawn`): every peer strategy (of the observation-masking sweep only M = 10 and the
best M), the worker's default configuration as a reference and its two profiles (``worker:
recommended`` with and without a summariser), plus, at a budget whose pressure set is the history
budget's (``bench.league.recall.PRESSURE_CEILING``), the recommended profile with that history
budget; the other worker modes (ablations) stay in the table. Peers are orange squares, the
worker's rows blue circles (the default a diamond), each named next to its point; strategies on the
same point share one label (one name a line). A hollow marker is a strategy that overflowed (its bill leaves out the
calls it could not send, so it looks cheaper than it is). The cost–recall front (:func:`front`):
of the drawn rows with 0 overflows, those no other such row beats on both the bill (lower) and
recall (higher), joined by a step line. Each panel's title names its budget and its pressure set.
matplotlib is a benchmark-only dependency (the ``bench`` extra).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bench.league.selection import DEFAULT, drawn, front, name, point, pressure_title  # noqa: E402
from bench.league.table import Row  # noqa: E402

PEER, WORKER = "#d9730d", "#1f5fa8"

# Offsets (points) tried in turn for a label, nearest first.
_OFFSETS = [(dx * r, dy * r) for r in (7, 16, 28, 42, 58, 90, 130, 180) for dx, dy in
            ((1, 0.3), (-1, 0.3), (1, -1), (-1, -1), (0.2, 1), (0.2, -1.6), (1, 1), (-1, 1), (1, -0.5),
             (-0.2, -1.6), (-1, -0.5), (0.6, -1.6))]


def _annotate(axis, text: str, x: float, y: float, offset: tuple[float, float], colour: str, *,
              va: str = "center", leader: bool = True):
    """One label at ``offset`` points from its point, on the side the offset points to."""
    return axis.annotate(text, (x, y), xytext=offset, textcoords="offset points", fontsize=8, color=colour,
                         ha="left" if offset[0] >= 0 else "right", va=va,
                         arrowprops={"arrowstyle": "-", "color": colour, "lw": 0.6, "alpha": 0.6}
                         if leader else None)


def _text_box(note, renderer):
    """The label's own box: an annotation's extent also spans its leader line, which would make
    every label clash with the markers beside its point."""
    note.update_positions(renderer)
    return matplotlib.text.Text.get_window_extent(note, renderer)


# A label of several names (points that coincide) hangs below and right of its point, top-aligned,
# as far out as it must go to leave its neighbours room.
_LIST_OFFSETS = [(dx, dy) for dx in (60, 120, 200, 280) for dy in (-45, -10, -90)]


def _label(axis, figure, x: float, y: float, text: str, colour: str, placed: list) -> None:
    renderer = figure.canvas.get_renderer()
    listed = text.count("\n") > 1
    va = "top" if listed else "center"
    panel = axis.get_window_extent(renderer)
    best = None
    for dx, dy in _LIST_OFFSETS if listed else _OFFSETS:
        note = _annotate(axis, text, x, y, (dx, dy), colour, va=va, leader=listed or abs(dx) > 10 or abs(dy) > 10)
        box = _text_box(note, renderer).expanded(1.02, 1.15)
        inside = panel.contains(box.x0, box.y0) and panel.contains(box.x1, box.y1)
        clashes = sum(box.overlaps(other) for other in placed) + (0 if inside else 5)
        if clashes == 0:
            placed.append(box)
            return
        if best is None or clashes < best[0]:
            best = (clashes, dx, dy)
        note.remove()
    assert best is not None
    placed.append(_text_box(_annotate(axis, text, x, y, best[1:], colour, va=va), renderer))


def draw(rows: list[Row], path: Path) -> None:
    budgets = list(dict.fromkeys(r.budget for r in rows))
    figure, axes = plt.subplots(1, len(budgets), figsize=(10 * len(budgets), 8.5), squeeze=False)
    panels: list[tuple[plt.Axes, dict[tuple[float, float], list[Row]]]] = []
    for column, budget in enumerate(budgets):
        axis = axes[0][column]
        mine = drawn([r for r in rows if r.budget == budget])
        best = front(mine)
        points: dict[tuple[float, float], list[Row]] = {}
        for row in mine:
            points.setdefault(point(row), []).append(row)
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        axis.set_xlim(0, max(xs) * 1.12)
        axis.set_ylim(min(0.0, min(ys) - 5), 108)
        if best:
            fx, fy = zip(*(point(r) for r in best))
            axis.step(fx, fy, where="post", color="#2a9d4b", lw=2, alpha=0.7, zorder=2)
        for (x, y), group in points.items():
            peer = group[0].kind == "peer"
            colour = PEER if peer else WORKER
            hollow = any(r.ledger.overflows for r in group)
            marker = "s" if peer else "D" if group[0].strategy == DEFAULT else "o"
            if any(r in best for r in group):
                axis.scatter([x], [y], marker=marker, s=260, color="#2a9d4b", alpha=0.35, zorder=2)
            axis.scatter([x], [y], marker=marker, s=60, linewidths=1.5,
                         facecolors="none" if hollow else colour, edgecolors=colour, zorder=3)
        axis.set_title(pressure_title(budget, mine), fontsize=11)
        axis.set_xlabel("billed input, automatic caching (M uncached-token equivalents)")
        axis.set_ylabel("long-range future-entity recall (%)")
        axis.grid(True, alpha=0.3)
        panels.append((axis, points))
    handles = [plt.Line2D([], [], marker="s", linestyle="", color=PEER, label="peer strategy"),
               plt.Line2D([], [], marker="o", linestyle="", color=WORKER, label="worker profile"),
               plt.Line2D([], [], marker="D", linestyle="", color=WORKER, label="worker default configuration"),
               plt.Line2D([], [], marker="o", linestyle="", markerfacecolor="none", color="grey",
                          label="overflowed (calls not sent are not billed; never on the front)"),
               plt.Line2D([], [], color="#2a9d4b", lw=2, marker="o", markersize=12, alpha=0.5,
                          label="cost–recall front: 0 overflows, no drawn row cheaper with more recall")]
    figure.legend(handles=handles, loc="upper center", ncol=3, frameon=False, fontsize=9)
    figure.tight_layout(rect=(0, 0, 1, 0.93))
    figure.canvas.draw()
    for axis, points in panels:  # after the layout: labels are placed in display coordinates
        placed = []
        for (x, y) in points:  # the markers themselves, so that labels avoid them
            px, py = axis.transData.transform((x, y))
            placed.append(matplotlib.transforms.Bbox([[px - 6, py - 6], [px + 6, py + 6]]))
        for (x, y), group in sorted(points.items(), key=lambda item: -item[0][1]):
            colour = PEER if group[0].kind == "peer" else WORKER
            _label(axis, figure, x, y, "\n".join(name(r) for r in group), colour, placed)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
