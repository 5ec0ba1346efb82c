"""Inline compaction, when over budget (or past ``eager_compaction_at`` of it, then with a smaller
tail and only when that pays, ``core.compaction.inline``), unless ``allow_compaction`` is false.

``compaction_step`` hands a ``CompactionRequest`` to ``try_compact``, whose ``InlineCompaction``
(or ``None``: no summariser and no extractive fallback, busy lease, nothing to summarise,
summariser failure without the fallback) comes back; both types document the contract. Without
an outcome the call falls through to emergency reduction. With one, the report holds the
summary, ``tail_start_index = view_to_orig[tail_start_view]`` and ``tokens_before``.

With ``compact_ahead_at`` set, ``compaction_step`` never calls the summariser: it hands the same
request to ``core.compaction.ahead.compact_without_waiting`` (a summary computed ahead of time,
else the no-wait path), and ``finish`` starts the next one from the request
:func:`compaction_request` builds of the context as returned.
"""

from __future__ import annotations

from math import floor

from context_manager.core.assembly.context import WorkingContext
from context_manager.core.assembly.prepare import Call
from context_manager.core.assembly.report import CompactionReport
from context_manager.core.assembly.request import AssembleDeps
from context_manager.core.compaction import ahead
from context_manager.core.compaction.conversation import ConversationContext
from context_manager.core.compaction.inline import CompactionRequest, InlineCompaction, try_compact
from context_manager.core.counting.history_ceiling import summarizer_window_budget
from context_manager.core.settings import WorkerConfig


async def compaction_step(request: CompactionRequest, deps: AssembleDeps,
                          early_due: bool | None = None) -> InlineCompaction | None:
    """Inline compaction; ``None`` means "not compacted this call" (also without a summariser).
    ``early_due``: with ``compact_ahead_at``, ``core.compaction.ahead.early_verdict`` of ``request``."""
    if request.config.compact_ahead_at is not None:
        # A summary computed ahead of time, else the no-wait path: the summariser is never
        # called on the call's own path (``core.compaction.ahead.compact_without_waiting``).
        return await ahead.compact_without_waiting(request, deps, deps.session_store, early_due)
    return await try_compact(request, deps)


def compaction_due(total: int, usable: int, config: WorkerConfig) -> bool:
    """Over budget, or (``eager_compaction_at``) past that share of it though still fitting."""
    if total > usable:
        return True
    eager = config.eager_compaction_at
    return eager is not None and total > floor(eager * usable)


def compaction_request(state: WorkingContext, call: Call) -> CompactionRequest:
    request, config, budget = call.request, call.config, call.budget
    options = request.options
    usable = budget.limit
    return CompactionRequest(
        view=list(state.view),
        sizes=list(state.sizes),
        view_to_orig=list(state.view_to_orig),
        request_messages=request.messages,
        lease_key=options.lease_key,
        base_system_prompt=request.system_prompt,
        previous_summary=options.previous_summary,
        system_prompt=state.system_prompt,
        usable=usable,
        tail_turns=options.tail_turns if options.tail_turns is not None else config.tail_turns,
        model=request.model,
        estimator=call.estimator,
        config=config,
        early_headroom=usable - state.total() if state.total() <= usable else None,
        # The summariser's budget is never below the uncalibrated one.
        summarizer_budget=budget.summarizer_budget(),
        # The history ceiling leaves the summariser's requests the window's budget.
        chunk_budget=None if call.ceiling is None else summarizer_window_budget(
            call.window_usable, budget.calibration, state.overhead_tokens, budget.guarded),
        history_ceiling=call.ceiling if call.ceiling is not None and call.ceiling < call.window_usable else None,
        summarized=call.deps.summarizer is not None,
        conversation=_conversation(state, call),
    )


def _conversation(state: WorkingContext, call: Call) -> ConversationContext | None:
    """What precedes the head in the context this call would return, for ``summarizer_request:
    conversation``; ``None`` by default."""
    if call.config.summarizer_request != "conversation":
        return None
    return ConversationContext(state.system_prompt, tuple(state.lead()), tuple(call.request.tools or ()),
                               state.fixed_tokens())


class Compaction:
    name = "compaction"
    fits = False

    async def run(self, state: WorkingContext, call: Call) -> CompactionReport | None:
        if not compaction_due(state.total(), call.budget.limit, call.config):
            return None
        request = compaction_request(state, call)
        # Only a call that still fits (``eager_compaction_at``) has a verdict.
        early_due = ahead.early_verdict(request) if call.config.compact_ahead_at is not None else None
        outcome = await compaction_step(request, call.deps, early_due)
        if outcome is None:
            if early_due is not None and request.early_headroom is not None:
                call.early_verdict = (request.usable, request.early_headroom, early_due)
            return None
        estimator = call.estimator
        if state.explanation is not None:
            state.explanation.compact(state.view_to_orig[0], outcome.tokens_before,
                                      estimator.text(outcome.summary))
        tail_start_index = state.view_to_orig[outcome.tail_start_view]
        state.summarize_head(outcome.head_len, outcome.summary, call.request.system_prompt,
                             call.config.summary_placement, estimator)
        return CompactionReport(outcome, tail_start_index)
