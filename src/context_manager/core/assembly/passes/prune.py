"""The normal prune (``core.passes.prune``), unless ``allow_prune`` is false."""

from __future__ import annotations

from context_manager.core.assembly.context import WorkingContext
from context_manager.core.assembly.prepare import Call
from context_manager.core.assembly.report import PruneReport
from context_manager.core.passes.prune import PruneParams, prune


class Prune:
    name = "prune"
    fits = False

    async def run(self, state: WorkingContext, call: Call) -> PruneReport:
        # Assemble reads every prune threshold from configuration; only the protected list is per
        # call. Its token thresholds are in provider units under a calibration, like the budget.
        config, calibration = call.config, call.budget.calibration
        protect, min_free = config.protect_recent_tokens, config.min_free_tokens
        if calibration is not None:
            protect = calibration.estimate_of_amount(protect)
            min_free = calibration.estimate_of_amount(min_free)
        params = PruneParams(
            protect_recent_tokens=protect,
            decay_user_turns=config.decay_user_turns,
            protected_user_turns=config.protected_user_turns,
            min_free_tokens=min_free,
            max_output_chars=config.max_output_chars,
            protected_functions=call.request.options.protected_functions or (),
        )
        pruned = prune(state.view, params, call.estimator, state.sizes, state.function_ids(),
                       state.result_tokens, reuse=call.reuse)
        assert pruned.sizes is not None
        if state.explanation is not None:
            state.explanation.prune(pruned.replaced, state.view_to_orig)
        state.rewrite(pruned.messages, pruned.sizes)
        return PruneReport(pruned.stats.pruned_parts > 0, pruned.stats.pruned_tokens)
