"""The assemble pipeline: prepare, run the plan the configuration implies, finish."""

from __future__ import annotations

from typing import Any

from context_manager.core.assembly.finish import Rerun, finish
from context_manager.core.assembly.passes.fit import run_passes
from context_manager.core.assembly.plan import plan
from context_manager.core.assembly.prepare import prepare
from context_manager.core.assembly.report import AssembleReport
from context_manager.core.assembly.request import AssembleDeps, AssembleRequest
from context_manager.core.reuse import CallReuse
from context_manager.wire import errors


async def run(request: AssembleRequest, deps: AssembleDeps, reuse: CallReuse,
              calibrate: bool = True) -> dict[str, Any]:
    """One call; ``calibrate=False`` counts without a usage anchor (the ledger still records)."""
    call, state = await prepare(request, deps, reuse, calibrate)
    steps = plan(call.config, call.request.options, call.anchor_requested)
    report = AssembleReport(state.total())
    await run_passes(steps, state, call, report)
    answer = await finish(call, state, report, steps)
    if isinstance(answer, Rerun):
        return await _uncalibrated(call.request, deps, reuse, answer.error)
    return answer


async def _uncalibrated(request: AssembleRequest, deps: AssembleDeps, reuse: CallReuse,
                        error: errors.HandlerError) -> dict[str, Any]:
    """The call run again without its usage anchor, after the calibrated run ended over budget:
    its answer if that fits, else the calibrated overflow (the better count of the two)."""
    try:
        return await run(request, deps, reuse, calibrate=False)
    except errors.HandlerError as exc:
        if exc.kind == errors.OVERFLOW:
            raise error from None
        raise
