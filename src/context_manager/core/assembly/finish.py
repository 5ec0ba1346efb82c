"""The end of one assemble call: the router's second count (and fitting again to it), the
over-budget decision, the ledger of what was sent, explain's actions, the prefix report and the
response record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from context_manager.core.assembly.context import WorkingContext
from context_manager.core.assembly.passes import Pass
from context_manager.core.assembly.passes.compaction import compaction_request
from context_manager.core.assembly.passes.fit import fitting, run_passes
from context_manager.core.assembly.prepare import Call, router_calibration
from context_manager.core.assembly.report import AssembleReport
from context_manager.core.assembly.request import AssembleRequest
from context_manager.core.compaction import ahead
from context_manager.core.compaction.inline import CompactionRequest
from context_manager.core.compaction.prompts import render_system_prompt, summary_message
from context_manager.core.counting.calibrated_budget import CalibratedCount, OverBudget
from context_manager.core.counting.estimate import by_role
from context_manager.core.counting.history_ceiling import window_report
from context_manager.core.prefix import model_facing, prefix_report
from context_manager.core.settings import WorkerConfig
from context_manager.ports import Estimator
from context_manager.wire import errors


@dataclass(frozen=True, slots=True)
class Rerun:
    """A calibrated run over its budget and over ``usable``: run again without the usage anchor;
    ``error`` is the calibrated overflow, raised if that run overflows too."""

    error: errors.HandlerError


async def finish(call: Call, state: WorkingContext, report: AssembleReport,
                 plan: Sequence[Pass]) -> dict[str, Any] | Rerun:
    initial_total = report.initial_token_count
    initial = call.budget
    request = call.request
    if (initial.routed and call.counter is not None
            and not state.unchanged(request.system_prompt, request.options.previous_summary)):
        # What is returned differs from what was counted: the second (and last) router call.
        recount = await router_calibration(state, request, call.counter)
        if recount is not None:
            call.budget = initial.recalibrated(recount)
            await run_passes(fitting(plan), state, call, report)
    budget = call.budget
    if state.total() > budget.limit:
        error = errors.overflow(budget.reported(state.total()), budget.usable)
        decision = budget.over_budget(state.total())
        if decision is OverBudget.OVERFLOW:
            raise error
        if decision is OverBudget.RERUN_UNCALIBRATED:
            return Rerun(error)
        # Over the calibrated budget but within the uncalibrated one: answered uncalibrated.
        budget = initial = budget.uncalibrated()
    # The answer is final: maybe start the session's summary ahead of time, off this call
    # (``core.compaction.ahead.after_call``, never awaited); inert while the key is null. The
    # share is of the budget the passes aimed for (under ``max_history_tokens``, the ceiling's).
    if (ahead.due(call.config, state.total(), call.budget.limit, report.compacted())
            and not request.options.preview_only):
        ahead_request = compaction_request(state, call)
        ahead.after_call(ahead_request, call.deps, call.reuse.memo, _early_verdict(call, ahead_request))
    if call.digests is not None:
        remember_sent(state, call, initial_total - state.overhead_tokens)
    if budget.calibration is not None:
        if state.explanation is not None:
            state.explanation.calibrate(budget.calibration)
        report.initial_token_count = initial.reported(initial_total)
    report.count = budget
    if state.explanation is not None:
        report.actions = state.explanation.actions()
    report.anchor = state.anchor
    if call.config.report_prefix:
        report.prefix = _prefix_report(state, request, call.config)
    return {
        "system_prompt": state.system_prompt,
        "messages": state.messages(),
        "token_count": budget.reported(state.total()),
        "usable": budget.usable,
        "effective_max_output_tokens": call.resolved.max_output_tokens,
        "model_resolved": call.resolved.provenance,
        "applied": report.to_wire(),
        "breakdown": window_report(breakdown(state, request.parts, call.estimator, budget),
                                   call.ceiling, call.window_usable),
    }


def remember_sent(state: WorkingContext, call: Call, input_estimate: int) -> None:
    """A reduced context is not the request's prefix any more: remember what was sent, so the
    next call's anchor on this one is measured against it. An input over the usable budget
    that was sent as it is (its calibrated count fitted) is remembered too: without a record,
    a prefix over the budget is taken as reduced elsewhere and not anchored on."""
    ledger = call.deps.sent_ledger
    if ledger is None or call.digests is None:
        return
    request = call.request
    if (input_estimate > call.budget.usable
            or not state.unchanged(request.system_prompt, request.options.previous_summary)):
        ledger.remember(call.digests.whole(input_estimate), state.total() - state.overhead_tokens)


def breakdown(state: WorkingContext, parts: dict[str, str] | None, estimator: Estimator,
              count: CalibratedCount) -> dict[str, Any]:
    prompt_tokens, tools_count, roles = count.parts(
        state.prompt_tokens, state.tools_tokens, by_role(state.messages(), state.lead_sizes() + state.sizes))
    record: dict[str, Any] = {
        "system_prompt_tokens": prompt_tokens,
        "tools_tokens": tools_count,
        "by_role": roles,
    }
    if parts is not None:
        record["by_part"] = count.by_part(sorted(parts.items()), estimator)
    count.describe(record, estimator)
    return record


def _prefix_report(state: WorkingContext, request: AssembleRequest, config: WorkerConfig) -> dict[str, Any]:
    """The request as it would go out untouched, against what is returned (``core.prefix``)."""
    previous = request.options.previous_summary
    facing = model_facing(request.messages)
    if config.summary_placement == "message":
        baseline_prompt = render_system_prompt(request.system_prompt, None)
        if previous is not None:
            pinned = len(state.anchor) - state.restored
            following = facing[pinned] if pinned < len(facing) else None
            facing = [*facing[:pinned], summary_message(previous, following), *facing[pinned:]]
    else:
        baseline_prompt = render_system_prompt(request.system_prompt, previous)
    return prefix_report(baseline_prompt, facing, state.system_prompt, state.messages())


def _early_verdict(call: Call, request: CompactionRequest) -> bool | None:
    """The compaction pass's verdict when it judged this same context (the same budget and
    headroom: nothing ran after it), else ``None``."""
    verdict = call.early_verdict
    if verdict is None or (verdict[0], verdict[1]) != (request.usable, request.early_headroom):
        return None
    return verdict[2]
