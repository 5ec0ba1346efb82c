"""The pinned anchor (``anchor_messages``, with the anchor a previous summary carries): never
cut, so a call it cannot fit fails at once; ``applied.anchor_tokens``."""

from __future__ import annotations

from context_manager.core.assembly.context import WorkingContext
from context_manager.core.assembly.prepare import Call
from context_manager.core.assembly.report import AnchorReport
from context_manager.wire import errors


class CarriedAnchor:
    name = "carried_anchor"
    fits = False

    async def run(self, state: WorkingContext, call: Call) -> AnchorReport:
        budget = call.budget
        if state.anchor and state.fixed_tokens() > budget.limit:
            # A usage anchor may only help: an anchor that fits uncalibrated runs uncalibrated.
            fitted = budget.for_anchor(state.fixed_tokens())
            if fitted is None:
                raise errors.overflow(budget.reported(state.fixed_tokens()), budget.usable)
            call.budget = fitted
        return AnchorReport(sum(state.anchor_sizes))
