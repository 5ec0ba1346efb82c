"""Long-range future-entity recall of the contexts a strategy sends, by ``bench.kit.recall``.

The pressure calls (the calls whose raw history exceeds the worker's default ``usable`` budget),
the entities, the long-range needs (entities the next 10 messages mention, seen before the last 20
messages and not in the system prompt) and what counts as kept are ``bench.recall``'s definitions;
they are the same for every strategy, peer or worker mode, so every row is scored on the same
calls and the same needs. A call that could not be sent keeps nothing. A worker mode with a
history ceiling (``max_history_tokens``) is scored on its own pressure set, the calls whose raw
history exceeds that ceiling: the calls where the ceiling, not the window, decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.kit.ledger import Ledger, Sent
from bench.kit.recall import SessionIndex, pressure_calls, recall_at_call

if TYPE_CHECKING:
    from bench.kit.peers import Budget
    from bench.kit.sessions import Session


_PRESSURE: dict[tuple[str, int, str, int | None], frozenset[int]] = {}


def _pressure(session: Session, budget: Budget, ceiling: int | None = None) -> frozenset[int]:
    """The session's pressure calls at ``budget`` (one raw replay per session, budget and history
    ceiling): with ``ceiling``, the calls whose raw history exceeds the history budget."""
    key = (session.name, id(session.messages), budget.name, ceiling)
    if key not in _PRESSURE:
        _PRESSURE[key] = pressure_calls(session, budget.name, max_output_tokens=budget.max_output,
                                        max_history_tokens=ceiling)
    return _PRESSURE[key]


class RecallProbe:
    """Scores every pressure call of one session at one budget into a Ledger."""

    def __init__(self, session: Session, budget: Budget, ceiling: int | None = None) -> None:
        self.pressure = _pressure(session, budget, ceiling)
        self.index = SessionIndex(session.system_prompt, session.messages) if self.pressure else None

    def score(self, ledger: Ledger, index: int, sent: Sent | None) -> None:
        if self.index is None or index not in self.pressure:
            return
        result = recall_at_call(self.index, index, *(sent if sent is not None else (None, None)))
        ledger.recall_total += len(result.needs)
        ledger.recall_found += len(result.kept)
