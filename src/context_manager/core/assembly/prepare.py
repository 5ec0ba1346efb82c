"""Intake of one assemble call: the model and its usable budget, the model-facing view with its
pinned anchor and size memo, and the budget in the units the passes compare (``Call.budget``).

Under ``count_calibration: usage`` (an anchor in the request's ``usage``) or ``estimator: router``
(the router's count of the request as given) the budget is calibrated
(``core.counting.calibrated_budget``); the passes keep working on estimates.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from context_manager.core.anchor import anchor_length
from context_manager.core.assembly.context import WorkingContext
from context_manager.core.assembly.request import AssembleDeps, AssembleRequest
from context_manager.core.budget import default_reserved, usable_budget
from context_manager.core.carried_anchor import restore, split_summary
from context_manager.core.compaction.prompts import render_system_prompt, summary_message
from context_manager.core.counting.calibrated_budget import CalibratedBudget, routed_calibration
from context_manager.core.counting.calibration import Calibration, InputDigests, Recall, choose_calibration
from context_manager.core.counting.estimate import estimator_for_call, message_sizes, tools_tokens
from context_manager.core.counting.history_ceiling import ceiling_for, history_budget
from context_manager.core.explain import Explanation
from context_manager.core.passes.media import Capability, normalize_media
from context_manager.core.resolution import ResolvedModel, resolve_model
from context_manager.core.reuse import CallReuse
from context_manager.core.settings import WorkerConfig
from context_manager.ports import Estimator, TokenCounter
from context_manager.wire.messages import Message


@dataclass(slots=True)
class Call:
    """What every pass reads: the request (its previous summary without a carried anchor), the
    call context, the estimator and the budget (which the anchor pass and the router's second
    count may replace)."""

    request: AssembleRequest
    deps: AssembleDeps
    reuse: CallReuse
    config: WorkerConfig
    log: logging.Logger
    resolved: ResolvedModel
    estimator: Estimator
    anchor_requested: int
    budget: CalibratedBudget
    # ``count_calibration: usage``: the request's input digests, for the ledger of what was sent.
    digests: InputDigests | None
    # ``estimator: router``: the counter, for the second count of a context that changed.
    counter: TokenCounter | None
    # ``max_history_tokens``: the call's ceiling (None: none) and the window's usable budget.
    ceiling: int | None = None
    window_usable: int = 0
    # ``compact_ahead_at`` with ``eager_compaction_at``: the compaction pass's verdict on a
    # context it left as it was, ``(usable, headroom, early compaction due)``, for ``finish``.
    early_verdict: tuple[int, int, bool] | None = None


async def prepare(request: AssembleRequest, deps: AssembleDeps, reuse: CallReuse,
                  calibrate: bool = True) -> tuple[Call, WorkingContext]:
    """``calibrate=False`` counts without a usage anchor (the ledger still records)."""
    config = deps.config
    options = request.options
    # A summary carrying the anchor: every pass sees its text only, the anchor is put back here.
    carried = split_summary(options.previous_summary)
    if carried.text is not options.previous_summary:
        options = replace(options, previous_summary=carried.text)
        request = replace(request, options=options)
    resolved = await resolve_model(request.model, deps.resolver, config, deps.log)
    reserved = (
        options.reserved_tokens
        if options.reserved_tokens is not None
        else default_reserved(resolved.context_window, config)
    )
    usable = usable_budget(resolved, reserved, options.thinking_level)
    # The history ceiling: every reduction below aims for min(usable, ceiling).
    ceiling = ceiling_for(options.max_history_tokens, config.max_history_tokens)
    window_usable, usable = usable, history_budget(usable, ceiling)
    estimator = estimator_for_call(request.model.id, config, deps.tokenizers, request.model.provider)

    anchor_requested = (
        options.anchor_messages if options.anchor_messages is not None else config.anchor_messages
    )
    state = initial_context(request, resolved.vision, estimator, reuse, anchor_requested,
                            config.summary_placement, carried.anchor if anchor_requested else [])
    if options.explain:
        state.explanation = Explanation()
    calibration, digests = usage_calibration(state, request, estimator, deps, reuse, usable)
    if not calibrate:
        calibration = None
    counter = deps.token_counter if config.estimator == "router" else None
    routed = None
    if counter is not None:
        # The router's exact count of the request as given anchors the whole request.
        routed = await router_calibration(state, request, counter)
        if routed is not None:
            calibration, digests = routed, None
    budget = CalibratedBudget.of(usable, state.overhead_tokens, calibration, routed is not None)
    call = Call(request, deps, reuse, config, deps.log, resolved, estimator, anchor_requested,
                budget, digests, counter, ceiling, window_usable)
    return call, state


def initial_context(
    request: AssembleRequest, vision: Capability, estimator: Estimator, reuse: CallReuse,
    anchor_requested: int, placement: str, carried: list[Message],
) -> WorkingContext:
    """The model-facing view (no custom messages, media normalized), its anchor and size memo.

    ``carried`` is the anchor the previous summary carries: put back first (and pinned whole)
    unless the view already starts with it."""
    view: list[Message] = []
    view_to_orig: list[int] = []
    for index, message in enumerate(request.messages):
        if message["role"] != "custom":
            view.append(message)
            view_to_orig.append(index)
    original = view
    restored = restore(view, carried)
    if restored:
        view, view_to_orig = [*carried, *view], [-1] * restored + view_to_orig
        anchor_requested = max(anchor_requested, restored)
    pinned = anchor_length(view, anchor_requested)
    anchor = view[:pinned]
    anchor_to_orig = view_to_orig[:pinned]
    if pinned:
        view, view_to_orig = view[pinned:], view_to_orig[pinned:]
    view = normalize_media(view, vision)
    previous = request.options.previous_summary
    placed: Message | None = None
    if placement == "message" and previous is not None:
        placed = summary_message(previous, view[0] if view else None)
        previous = None
    system_prompt = render_system_prompt(request.system_prompt, previous)
    return WorkingContext(
        view=view,
        sizes=message_sizes(view, estimator, reuse),
        view_to_orig=view_to_orig,
        system_prompt=system_prompt,
        prompt_tokens=estimator.text(system_prompt),
        tools_tokens=tools_tokens(request.tools, estimator, reuse) if request.tools else 0,
        overhead_tokens=request.options.request_overhead_tokens or 0,
        anchor=anchor,
        anchor_sizes=message_sizes(anchor, estimator, reuse) if anchor else [],
        summary_message=placed,
        summary_size=estimator.message(placed) if placed is not None else 0,
        anchor_to_orig=anchor_to_orig,
        restored=restored,
        original=original,
    )


def usage_calibration(
    state: WorkingContext, request: AssembleRequest, estimator: Estimator, deps: AssembleDeps,
    reuse: CallReuse, usable: int,
) -> tuple[Calibration | None, InputDigests | None]:
    """The call's anchor (``core.counting.calibration``) and its input digests, under
    ``count_calibration: usage``; (None, None) otherwise."""
    if deps.config.count_calibration != "usage":
        return None, None
    digests = InputDigests(
        (estimator.kind, request.model.id, request.system_prompt, request.options.previous_summary,
         request.tools),
        request.messages,
        reuse.memo,
    )
    ledger = deps.sent_ledger
    restored = state.restored
    calibration = choose_calibration(
        request.messages,
        state.anchor_to_orig[restored:] + state.view_to_orig if state.anchor else state.view_to_orig,
        state.anchor_sizes[restored:] + state.sizes if state.anchor else state.sizes,
        # A summary placed as a message, and an anchor put back from the summary, are counted
        # with the fixed part: no request index holds them.
        state.prompt_tokens + state.tools_tokens + state.summary_size
        + sum(state.anchor_sizes[:restored]),
        Recall(ledger, digests) if ledger is not None else None,
        exact=estimator.kind == "tokenizer",
        # Over the budget, a prompt this process has no record of was reduced somewhere.
        unrecorded_limit=usable,
        # After a compaction every prompt sent was fitted to the budget: one counted over it
        # held the history the summary replaced.
        summarized_limit=usable if request.options.previous_summary is not None else None,
    )
    return calibration, digests


async def router_calibration(state: WorkingContext, request: AssembleRequest,
                             counter: TokenCounter) -> Calibration | None:
    """The router's count of the context as it stands, as a calibration of the whole of it."""
    counted = await counter.count(request.model.id, state.system_prompt, request.tools, state.messages())
    return routed_calibration(counted, state.total() - state.overhead_tokens)
