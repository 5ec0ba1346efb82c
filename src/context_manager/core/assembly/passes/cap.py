"""The per-result cap (``max_result_tokens``, ``core.passes.cap``)."""

from __future__ import annotations

from context_manager.core.assembly.context import WorkingContext
from context_manager.core.assembly.prepare import Call
from context_manager.core.assembly.report import CapReport
from context_manager.core.assembly.request import AssembleOptions
from context_manager.core.passes.cap import cap_results
from context_manager.core.settings import WorkerConfig


def cap_threshold(options: AssembleOptions, config: WorkerConfig) -> int:
    """The effective ``max_result_tokens``; 0 caps nothing."""
    return options.max_result_tokens if options.max_result_tokens is not None else config.max_result_tokens


class Cap:
    name = "cap"
    fits = False

    async def run(self, state: WorkingContext, call: Call) -> CapReport:
        threshold = cap_threshold(call.request.options, call.config)
        capped = cap_results(state.view, state.sizes, threshold, call.estimator, state.function_ids(),
                             state.result_tokens, reuse=call.reuse)
        if state.explanation is not None:
            state.explanation.cap(capped.changes, state.view_to_orig)
        state.rewrite(capped.messages, capped.sizes)
        if capped.stats.capped_parts:
            call.log.info(
                "assemble: capped %d oversized function result(s), %d tokens",
                capped.stats.capped_parts,
                capped.stats.capped_tokens,
            )
        return CapReport(capped.stats.capped_parts, capped.stats.capped_tokens)
