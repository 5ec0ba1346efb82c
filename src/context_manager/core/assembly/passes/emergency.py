"""Emergency reduction (``core.passes.emergency``), while the context is over budget."""

from __future__ import annotations

from context_manager.core.assembly.context import WorkingContext
from context_manager.core.assembly.prepare import Call
from context_manager.core.assembly.report import EmergencyReport
from context_manager.core.passes.emergency import emergency_reduce
from context_manager.core.passes.steps import step_tokens, stepped_amount
from context_manager.wire.messages import Message


def rewrites_earlier_history(before: list[Message], after: list[Message]) -> bool:
    """Does ``after`` change a message ahead of the newest assistant message? What follows it
    (that message's results) is new since the caller's previous call, so no cached prefix
    held it."""
    newest = next((i for i in range(len(before) - 1, -1, -1) if before[i]["role"] == "assistant"), 0)
    return any(old is not new for old, new in zip(before[:newest], after[:newest]))


class Emergency:
    name = "emergency"
    fits = True

    async def run(self, state: WorkingContext, call: Call) -> EmergencyReport | None:
        limit = call.budget.limit
        if state.total() <= limit:
            return None
        step = step_tokens(limit, call.config.reduce_to)
        required = state.total() - limit
        estimator = call.estimator
        reduced = emergency_reduce(state.view, state.sizes, required, estimator)
        if step > 0 and rewrites_earlier_history(state.view, reduced.messages):
            # Stable steps: the results in transcript order, up to a whole number of steps, so
            # the next calls replace the same ones until the next step is needed.
            reduced = emergency_reduce(state.view, state.sizes, stepped_amount(required, step),
                                       estimator, oldest_first=True)
        if state.explanation is not None:
            state.explanation.emergency(reduced.changes, state.view_to_orig)
        state.rewrite(reduced.messages, reduced.sizes)
        return EmergencyReport(reduced.stats.pruned_parts > 0, reduced.stats.pruned_tokens)
