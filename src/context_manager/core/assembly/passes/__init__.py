"""The passes of ``context::assemble``, one module each; ``core.assembly.plan`` lists them.

A pass reads the context and the call, changes the context through ``WorkingContext``'s methods
and returns its report (``core.assembly.report``), or None when it changed nothing it reports.
The pure reductions they run live in ``core.passes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from context_manager.core.assembly.context import WorkingContext
    from context_manager.core.assembly.prepare import Call
    from context_manager.core.assembly.report import PassReport


class Pass(Protocol):
    # The pass's name in the plan.
    name: str
    # A pass that reduces the context to the budget: run again after the router's second count.
    fits: bool

    async def run(self, state: WorkingContext, call: Call) -> PassReport | None: ...
