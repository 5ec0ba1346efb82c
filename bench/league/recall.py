"""Long-range future-entity recall of the contexts a strategy sends, by ``bench.kit.recall``.

The pressure calls (the calls whose raw history exceeds the worker's default ``usable`` budget),
the entities, the long-range needs (entities the next 10 messages mention, seen before the last 20
messages and not in the system prompt) and what counts as kept are ``bench.recall``'s definitions;
they are the same for every strategy, peer or worker mode, so every row is scored on the same
calls and the same needs. A call that could not be sent keeps nothing.

At 128k no call of the real sessions has a raw history over the usable budget, so at that budget
every row is scored on the pressure set the history budget defines (:data:`PRESSURE_CEILING`):
the calls whose raw history exceeds 32000 tokens, ``min(usable, max_history_tokens)`` with
``max_history_tokens: 32000`` (``bench.kit.recall.pressure_calls``). A worker mode with a history
ceiling of its own (``max_history_tokens``) is scored on the pressure set of that ceiling: the
calls where the ceiling, not the window, decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.kit.ledger import Ledger, Sent
from bench.kit.recall import SessionIndex, pressure_calls, recall_at_call

if TYPE_CHECKING:
    from bench.kit.peers import Budget
    from bench.kit.sessions import Session


# The history budget that defines a budget's pressure set; a budget not named here: the usable budget.
PRESSURE_CEILING: dict[str, int] = {"128k": 32_000}

_PRESSURE: dict[tuple[str, int, str, int | None], frozenset[int]] = {}


def _pressure(session: Session, budget: Budget, ceiling: int | None = None) -> frozenset[int]:
    """The session's pressure calls at ``budget`` (one raw replay per session, budget and history
    ceiling): with ``ceiling``, the calls whose raw history exceeds the history budget."""
    key = (session.name, id(session.messages), budget.name, ceiling)
    if key not in _PRESSURE:
        _PRESSURE[key] = pressure_calls(session, budget.name, max_output_tokens=budget.max_output,
                                        max_history_tokens=ceiling)
    return _PRESSURE[key]


def pressure_ceiling(budget: str, own: int | None = None) -> int | None:
    """The history budget whose pressure set a row at ``budget`` is scored on: the mode's own
    ``max_history_tokens`` when it has one, else :data:`PRESSURE_CEILING`'s (None: the usable budget)."""
    return own if own is not None else PRESSURE_CEILING.get(budget)


class RecallProbe:
    """Scores every pressure call of one session at one budget into a Ledger."""

    def __init__(self, session: Session, budget: Budget, ceiling: int | None = None) -> None:
        self.pressure = _pressure(session, budget, pressure_ceiling(budget.name, ceiling))
        self.index = SessionIndex(session.system_prompt, session.messages) if self.pressure else None

    def score(self, ledger: Ledger, index: int, sent: Sent | None) -> None:
        if self.index is None or index not in self.pressure:
            return
        result = recall_at_call(self.index, index, *(sent if sent is not None else (None, None)))
        ledger.recall_total += len(result.needs)
        ledger.recall_found += len(result.kept)
