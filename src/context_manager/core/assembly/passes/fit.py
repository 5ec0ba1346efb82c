"""Fitting: the passes of a plan that reduce the context to the budget (emergency reduction, then
``drop_oldest``), run in the plan and again after the router's second count."""

from __future__ import annotations

from collections.abc import Sequence

from context_manager.core.assembly.context import WorkingContext
from context_manager.core.assembly.passes import Pass
from context_manager.core.assembly.prepare import Call
from context_manager.core.assembly.report import AssembleReport


def fitting(plan: Sequence[Pass]) -> tuple[Pass, ...]:
    return tuple(step for step in plan if step.fits)


async def run_passes(passes: Sequence[Pass], state: WorkingContext, call: Call,
                     report: AssembleReport) -> None:
    for step in passes:
        report.add(await step.run(state, call))
