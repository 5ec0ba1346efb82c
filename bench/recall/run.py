"""The recall suite's rows: the long-range future-entity recall of each mode over the sessions (``bench.kit.recall``), beside the overflows, the prefix rewrites and the billed input (``bench.kit.ledger``)."""

from __future__ import annotations

from typing import Any

from bench.kit.ledger import Ledger
from bench.kit.loop import round_trip
from bench.kit.modes import BUDGETS
from bench.kit.recall import HORIZON, WINDOW, Recall, RecallObserver, pressure_calls
from bench.kit.sessions import Session
from bench.kit.table import markdown
from bench.recall.modes import budget, mode

COLUMNS = ("mode", "pressure calls", "needs", "kept", "recall", "overflows", "prefix rewrites",
           "billed (auto cache)")


QUICK_SESSION = "multi-cache-invalidation"


LEGEND = f"""\
pressure calls = calls before which the whole recorded history exceeds usable (the same in every
mode); needs = over them, the entities the next {HORIZON} recorded messages mention (user and
assistant text, call arguments) that the history before the last {WINDOW} messages holds and
those {WINDOW} messages and the system prompt do not; kept = the needs the returned context holds
(case-folded substring; an overflow keeps nothing); recall = kept / needs; overflows = calls
failing with context/overflow (all calls); prefix rewrites = calls whose context does not extend
the previous one's; billed = uncached-token equivalents (the repeated prefix at 0.1, the rest and
the summariser's tokens at 1)."""


def measure(sessions: list[Session], budget_name: str, mode_names: list[str]) -> list[dict[str, Any]]:
    """One row per mode at one budget, summed over ``sessions``."""
    window, output = budget(budget_name) or ("", 0)
    pressure = {s.name: pressure_calls(s, window, output) for s in sessions}
    rows = []
    for name in mode_names:
        chosen = mode(name)
        assert chosen is not None
        observer = RecallObserver(pressure)
        bill, overflows, rewrites, calls = Ledger(), 0, 0, 0
        for session in sessions:
            ledger = round_trip(session, chosen, BUDGETS[window], max_output_tokens=output, observer=observer)
            bill.add(ledger)
            overflows += ledger.overflows
            rewrites += ledger.rewrites
            calls += ledger.calls
        rows.append(_row(budget_name, name, observer.recall, calls, overflows, rewrites, bill))
    return rows


def _row(budget_name: str, name: str, recall: Recall, calls: int, overflows: int, rewrites: int,
         bill: Ledger) -> dict[str, Any]:
    return {"budget": budget_name, "mode": name, "calls": calls,
            "pressure_calls": recall.pressure_calls, "needs": recall.needs, "kept": recall.kept,
            "recall": recall.share, "overflows": overflows, "prefix_rewrites": rewrites,
            "billed_auto": bill.billed_automatic, "billed_anthropic": bill.billed_anthropic,
            "missing": recall.missing.most_common()}


def table(rows: list[dict[str, Any]]) -> str:
    cells: list[tuple[str, ...]] = [(str(r["mode"]), str(r["pressure_calls"]), str(r["needs"]), str(r["kept"]),
              "-" if r["recall"] is None else f"{100 * r['recall']:.1f}%", str(r["overflows"]),
              str(r["prefix_rewrites"]), f"{r['billed_auto'] / 1e6:.2f} M") for r in rows]
    return markdown(cells, COLUMNS, text_columns=(0,))

