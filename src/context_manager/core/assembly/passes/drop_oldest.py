"""With ``overflow_fallback: drop_oldest``, dropping the oldest turns/rounds while the context is
over budget (``core.passes.drop_oldest``); with ``working_set: true`` the dropped messages leave
a note of their working set in their place (``core.compaction.working_set.dropped_note``)."""

from __future__ import annotations

from context_manager.core.assembly.context import WorkingContext
from context_manager.core.assembly.prepare import Call
from context_manager.core.assembly.report import DropReport
from context_manager.core.budget import summary_budget
from context_manager.core.compaction.working_set import dropped_note, section_budget
from context_manager.core.passes.drop_oldest import NoteMaker, drop_oldest
from context_manager.core.passes.steps import step_tokens
from context_manager.ports import Estimator
from context_manager.wire.messages import Message


def note_maker(budget: int, estimator: Estimator, plan_functions: tuple[str, ...] = ()) -> NoteMaker:
    """``working_set``: the note of a dropped range, its section within the share of the summary
    budget a summary's working set may take."""
    share = section_budget(summary_budget(budget))

    def make(dropped: list[Message]) -> tuple[Message, int] | None:
        note = dropped_note(dropped, None, share, estimator, plan_functions)
        return None if note is None else (note, estimator.message(note))

    return make


class DropOldest:
    name = "drop_oldest"
    fits = True

    async def run(self, state: WorkingContext, call: Call) -> DropReport | None:
        limit, config = call.budget.limit, call.config
        if state.total() <= limit:
            return None
        note = note_maker(limit, call.estimator, config.plan_functions) if config.working_set else None
        dropped = drop_oldest(state.view, state.sizes, state.view_to_orig, state.total() - limit,
                              step_tokens(limit, config.reduce_to), note)
        if not dropped.dropped_messages:
            return None
        if state.explanation is not None:
            kept = {orig for i, orig in enumerate(dropped.view_to_orig) if i != dropped.note_index}
            state.explanation.drop([(orig, size) for orig, size in zip(state.view_to_orig, state.sizes)
                                    if orig not in kept], dropped.note_size)
        before = state.view_to_orig
        state.drop(dropped.messages, dropped.sizes, dropped.view_to_orig)
        call.log.warning(
            "assemble: over budget after every pass; dropped the %d oldest message(s) %s",
            dropped.dropped_messages,
            dropped.dropped_ranges,
        )
        # With a retention policy every dropped range is a warning.
        warnings = [] if config.retention is None else [
            {"code": "history_dropped", "dropped": sum(1 for orig in before if start <= orig < end),
             "start": start, "end": end}
            for start, end in dropped.dropped_ranges]
        return DropReport(dropped.dropped_messages, dropped.dropped_ranges,
                          dropped.note_size if dropped.note_index is not None else None, warnings)
