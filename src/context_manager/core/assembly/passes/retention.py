"""The ``retention`` policy (``core.passes.retention``); its warnings are ``applied.warnings``."""

from __future__ import annotations

from context_manager.core.assembly.context import WorkingContext
from context_manager.core.assembly.prepare import Call
from context_manager.core.assembly.report import RetentionReport
from context_manager.core.passes.retention import apply_retention


class Retention:
    name = "retention"
    fits = False

    async def run(self, state: WorkingContext, call: Call) -> RetentionReport | None:
        policy = call.config.retention
        assert policy is not None  # the plan holds this pass only with a policy
        retained = apply_retention(state.view, state.sizes, policy, call.estimator, call.request.model.provider)
        state.rewrite(retained.messages, retained.sizes)
        if state.explanation is not None:
            state.explanation.retention(retained.changes, state.view_to_orig)
        return RetentionReport(retained.warnings) if retained.warnings else None
