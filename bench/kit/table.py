"""The Markdown tables the replayed suites print: text columns left-aligned, numbers right-aligned."""

from __future__ import annotations


def markdown(rows: list[tuple[str, ...]], columns: tuple[str, ...], text_columns: tuple[int, ...] = (0,)) -> str:
    widths = [max(len(columns[i]), *(len(r[i]) for r in rows)) for i in range(len(columns))]
    numeric = [i not in text_columns for i in range(len(columns))]

    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.rjust(w) if n else c.ljust(w)
                                 for c, w, n in zip(cells, widths, numeric)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if n else ("-" * (w + 2))
                          for w, n in zip(widths, numeric)) + "|"
    return "\n".join([line(columns), rule, *(line(r) for r in rows)])
