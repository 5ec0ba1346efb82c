"""The league's rows: one per budget and strategy, summed over the sessions; Markdown and JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.kit.ledger import Ledger


@dataclass(frozen=True)
class Row:
    budget: str
    strategy: str
    kind: str  # "peer" or "worker"
    summariser: bool
    ledger: Ledger

    def as_json(self) -> dict[str, Any]:
        led = self.ledger
        return {"budget": self.budget, "strategy": self.strategy, "kind": self.kind,
                "summariser": self.summariser, "calls": led.calls, "overflows": led.overflows,
                "tokens_sent": led.sent, "prefix_rewrites": led.rewrites,
                "cache_hit_rate": round(led.hit_rate, 4),
                "billed_automatic": round(led.billed_automatic, 1),
                "billed_anthropic": round(led.billed_anthropic, 1),
                "summariser_calls": led.summarizer_calls, "summariser_input": led.summarizer_input,
                "summariser_share": round(summariser_share(led), 4),
                "defended": led.defended, "recall_found": led.recall_found,
                "recall_total": led.recall_total,
                "recall": None if led.recall is None else round(led.recall, 4)}


COLUMNS = ("budget", "strategy", "calls", "overflows", "tokens sent", "prefix rewrites", "cache hit",
           "billed (auto)", "billed (Anthropic)", "summariser calls", "summariser input",
           "summariser share", "long-range recall")


def summariser_share(led: Ledger) -> float:
    """The summariser's part of the billed input (automatic caching), 0 when nothing is billed."""
    return led.summarizer_billed_automatic / led.billed_automatic if led.billed_automatic else 0.0


def _m(tokens: float) -> str:
    return f"{tokens / 1e6:.2f} M"


def cells(row: Row) -> tuple[str, ...]:
    led = row.ledger
    recall = "-" if led.recall is None else f"{100 * led.recall:.1f}% of {led.recall_total:,}"
    return (row.budget, row.strategy, f"{led.calls:,}", f"{led.overflows:,}", _m(led.sent), f"{led.rewrites:,}",
            f"{100 * led.hit_rate:.1f}%", _m(led.billed_automatic), _m(led.billed_anthropic),
            f"{led.summarizer_calls:,}", _m(led.summarizer_input), f"{100 * summariser_share(led):.1f}%", recall)


def markdown(rows: list[Row]) -> str:
    table = [COLUMNS, *(cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    text_columns = (0, 1)

    def line(values: tuple[str, ...]) -> str:
        return "| " + " | ".join(v.ljust(w) if i in text_columns else v.rjust(w)
                                 for i, (v, w) in enumerate(zip(values, widths))) + " |"

    rule = "|" + "|".join("-" * (w + 2) if i in text_columns else "-" * (w + 1) + ":"
                          for i, w in enumerate(widths)) + "|"
    return "\n".join([line(COLUMNS), rule, *(line(cells(r)) for r in rows)])
