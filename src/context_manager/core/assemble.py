"""`context::assemble`: fit a history into the target model's usable input budget.

Pass order (each pass keeps the per-message size memo exact, so the running total always equals
a from-scratch count of what would be returned):

1. resolve the model and compute ``usable``;
2. build the model-facing view (custom messages removed, request indices remembered) and set its
   pinned anchor aside (``core.anchor``; ``anchor_messages``, none by default): every later pass
   works on the rest only, and the anchor is returned first, verbatim;
3. media normalization of the view;
4. render the system prompt (base + optional previous-summary section), count everything:
   ``initial_token_count``;
4a. with a ``retention`` policy only, the retention pass (``core.passes.retention``), whose
   warnings are reported as ``applied.warnings``;
5. per-result cap (unless the effective ``max_result_tokens`` is 0);
6. normal prune (unless ``allow_prune`` is false);
7. compaction, when over budget (or past ``eager_compaction_at`` of it, then with a smaller tail
   and only when that pays, ``core.compaction.inline``) and ``allow_compaction`` is not false
   (see ``compaction_step``); with ``summary_placement: message`` the summary
   becomes a message after the anchor instead of a system prompt section;
8. emergency reduction, when still over budget;
9. with ``overflow_fallback: drop_oldest`` only, dropping the oldest turns/rounds (``core.drop_oldest``);
   with ``working_set: true`` the dropped messages leave a note of their working set in their
   place (``core.compaction.working_set.dropped_note``), reported as ``applied.working_set_note_tokens``;
10. ``context/overflow`` when still over budget, else the response (with ``report_prefix``, its
    cache-break report, ``core.prefix``).

Below ``reduce_to`` 1, steps 7–9 cut on the content-defined grid of ``core.passes.steps``. With
``summary_reuse``, :func:`assemble` first rewrites a request that extends its history's
remembered compaction into that round trip (``core.compaction.recall``). With
``options.preview_only`` it runs the call as with ``allow_compaction: false`` over deps that keep
no state (``core.preview``): the answer of that request, and nothing left behind.

Calibrated counts
-----------------
With ``count_calibration: usage`` (an anchor in the request's ``usage``) or ``estimator: router``
(the router's count of the request), a ``core.counting.calibration.Calibration`` converts
estimates into provider units. The passes keep working on estimates: the budget they compare
with is the largest estimate whose calibrated count fits ``usable`` (and prune's thresholds are
converted likewise); the response reports calibrated numbers, apportioned so that they add up to
``token_count``. Under ``router``, a context that changed is counted once more (two router calls
at most) and, if that count no longer fits, reduced again by emergency and ``drop_oldest``.

A usage anchor only ever helps (the router's count is the provider's own and is not second-
guessed): a pinned anchor that fits ``usable`` but not the calibrated budget runs the call
uncalibrated; the summariser's input budget is never below ``usable``; and a calibrated run that
ends over its budget is answered uncalibrated when its context fits ``usable``, else by a second
run without the anchor (:func:`_uncalibrated`), whose overflow reports the calibrated count.

Compaction hand-over
--------------------
``compaction_step`` hands a ``core.compaction.inline.CompactionRequest`` to ``try_compact``,
whose ``InlineCompaction`` (or ``None``: no summariser and no extractive fallback, busy
lease, nothing to summarise, summariser failure without the fallback) comes back; both types
document the contract. Without an outcome the call falls through to emergency reduction.
With one, assemble reports ``compacted``, ``summary``,
``tail_start_index = view_to_orig[tail_start_view]``, ``tokens_before`` and
``summarized_head_tokens``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from math import floor
from typing import Any, Protocol

from context_manager.core.anchor import anchor_length
from context_manager.core.budget import default_reserved, summary_budget, usable_budget
from context_manager.core.carried_anchor import restore, split_summary, with_anchor
from context_manager.core.compaction import ahead
from context_manager.core.compaction.inline import CompactionRequest, InlineCompaction, try_compact
from context_manager.core.compaction.prompts import render_system_prompt, summary_message
from context_manager.core.compaction.recall import recall, remember, with_round_trip
from context_manager.core.compaction.working_set import dropped_note, section_budget
from context_manager.core.counting.calibration import (
    Calibration,
    InputDigests,
    Ledger,
    Recall,
    choose_calibration,
)
from context_manager.core.counting.estimate import by_role, estimator_for_call, message_sizes, tools_tokens
from context_manager.core.explain import Explanation
from context_manager.core.passes.cap import cap_results
from context_manager.core.passes.drop_oldest import NoteMaker, drop_oldest
from context_manager.core.passes.emergency import emergency_reduce
from context_manager.core.passes.media import Capability, normalize_media
from context_manager.core.passes.prune import PruneParams, prune
from context_manager.core.passes.retention import apply_retention
from context_manager.core.passes.steps import step_tokens, stepped_amount
from context_manager.core.prefix import model_facing, prefix_report
from context_manager.core.preview import read_only
from context_manager.core.resolution import resolve_model
from context_manager.core.reuse import CallReuse
from context_manager.core.settings import WorkerConfig
from context_manager.ports import Estimator, SessionStore, TokenCounter, TokenizerSource
from context_manager.wire import errors
from context_manager.wire.decode import ModelInput
from context_manager.wire.ints import saturating_add
from context_manager.wire.messages import Message, resolve_inline_function_ids


@dataclass(frozen=True, slots=True)
class AssembleOptions:
    reserved_tokens: int | None = None
    tail_turns: int | None = None
    allow_compaction: bool | None = None
    allow_prune: bool | None = None
    protected_functions: tuple[str, ...] | None = None
    max_result_tokens: int | None = None
    request_overhead_tokens: int | None = None
    thinking_level: str | None = None
    lease_key: str | None = None
    previous_summary: str | None = None
    anchor_messages: int | None = None
    explain: bool = False
    # Answer as with ``allow_compaction: false`` and change nothing else (``core.preview``).
    preview_only: bool = False


@dataclass(frozen=True, slots=True)
class AssembleRequest:
    messages: list[Message]
    model: ModelInput
    system_prompt: str | None = None
    tools: list[dict[str, Any]] | None = None
    parts: dict[str, str] | None = None
    options: AssembleOptions = field(default_factory=AssembleOptions)


class AssembleDeps(Protocol):
    """What assemble needs from the call context (``handlers.context.HandlerContext`` fits)."""

    config: WorkerConfig
    resolver: Any
    summarizer: Any
    lease_store: Any
    clock: Any
    log: logging.Logger
    tokenizers: TokenizerSource | None
    session_store: SessionStore | None
    # The provider's own counter (``estimator: router``); None counts locally.
    token_counter: TokenCounter | None
    # compact_ahead_at: runs the summaries computed ahead of time (``core.compaction.ahead``).
    ahead_runner: Any

    @property
    def sent_ledger(self) -> Ledger | None:
        """What this process returned for the inputs it reduced (``count_calibration: usage``)."""
        ...


@dataclass(slots=True)
class _Context:
    """The working state of one call; ``total`` is the size of what would be returned now."""

    view: list[Message]
    sizes: list[int]
    view_to_orig: list[int]
    system_prompt: str
    prompt_tokens: int
    tools_tokens: int
    overhead_tokens: int
    # The pinned anchor ahead of ``view``: never changed, always returned first.
    anchor: list[Message] = field(default_factory=list)
    anchor_sizes: list[int] = field(default_factory=list)
    # ``summary_placement: message``: the summary as a message between the anchor and ``view``.
    summary_message: Message | None = None
    summary_size: int = 0
    anchor_to_orig: list[int] = field(default_factory=list)
    # The anchor's first ``restored`` messages came from the previous summary's anchor section
    # (``core.carried_anchor``), not from the request: no request index holds them.
    restored: int = 0
    # The model-facing messages as the request gave them (before any pass), for the ledger.
    original: list[Message] = field(default_factory=list)
    # resolve_inline_function_ids(view): cap and prune rewrite outputs, never calls or the
    # positions of inline results, so one resolution serves both passes.
    _function_ids: dict[tuple[int, int], str] | None = None
    # id(m) -> (m, result tokens) of message-level results measured by cap, reused by prune.
    result_tokens: dict[int, tuple[Message, int]] = field(default_factory=dict)
    # ``options.explain``: the changes made, else None (nothing gathered).
    explanation: Explanation | None = None

    def function_ids(self) -> dict[tuple[int, int], str]:
        if self._function_ids is None:
            self._function_ids = resolve_inline_function_ids(self.view)
        return self._function_ids

    def total(self) -> int:
        # Sums are unsigned 64-bit and saturate, as in the original.
        return saturating_add(sum(self.sizes), self.fixed_tokens())

    def fixed_tokens(self) -> int:
        """What no pass reduces: the anchor, the summary message, the system prompt, the tools
        and the overhead."""
        return saturating_add(sum(self.anchor_sizes), self.summary_size, self.prompt_tokens,
                              self.tools_tokens, self.overhead_tokens)

    def lead(self) -> list[Message]:
        """What precedes ``view`` in the answer: the anchor, then the summary message."""
        if self.summary_message is None:
            return self.anchor
        return [*self.anchor, self.summary_message]

    def lead_sizes(self) -> list[int]:
        if self.summary_message is None:
            return self.anchor_sizes
        return [*self.anchor_sizes, self.summary_size]

    def messages(self) -> list[Message]:
        lead = self.lead()
        return lead + self.view if lead else self.view


async def assemble(request: AssembleRequest, deps: AssembleDeps, reuse: CallReuse) -> dict[str, Any]:
    """Run the whole pipeline; returns the response record (keys in record order).

    ``reuse`` is what the request was decoded with (``core.intake``): the passes measure and
    rewrite through the same memo and as-is estimates. With ``summary_reuse`` and no
    ``previous_summary`` from the caller, a request that extends its history's remembered
    compaction runs as that round trip (``core.compaction.recall``). With ``options.preview_only``
    the call runs as with ``allow_compaction: false`` over read-only deps (``core.preview``):
    this is the one place a preview is told apart.
    """
    if request.options.preview_only:
        request = replace(request, options=replace(request.options, allow_compaction=False))
        deps = read_only(deps)
    store = deps.session_store
    options = request.options
    if not deps.config.summary_reuse or store is None or options.previous_summary is not None:
        return await _assemble(request, deps, reuse)
    anchor_requested = (
        options.anchor_messages if options.anchor_messages is not None else deps.config.anchor_messages
    )
    session = await recall(request.messages, options.lease_key, anchor_requested, store)
    effective = request if session.reused is None else with_round_trip(request, session)
    response = await _assemble(effective, deps, reuse)
    applied = response["applied"]
    await remember(request.messages, session, applied, store)
    if session.reused is not None:
        applied["summary_reused"] = True
        applied["reused_from_index"] = session.reused.head_len
    return response


async def _assemble(request: AssembleRequest, deps: AssembleDeps, reuse: CallReuse,
                    calibrate: bool = True) -> dict[str, Any]:
    """The pipeline; ``calibrate=False`` counts without a usage anchor (the ledger still records)."""
    config = deps.config
    options = request.options
    # A summary carrying the anchor: every pass sees its text only, the anchor is put back below.
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
    estimator = estimator_for_call(request.model.id, config, deps.tokenizers, request.model.provider)

    anchor_requested = (
        options.anchor_messages if options.anchor_messages is not None else config.anchor_messages
    )
    state = _initial_context(request, resolved.vision, estimator, reuse, anchor_requested,
                             config.summary_placement, carried.anchor if anchor_requested else [])
    if options.explain:
        state.explanation = Explanation()
    calibration, digests = _calibration(state, request, estimator, deps, reuse, usable)
    if not calibrate:
        calibration = None
    counter = deps.token_counter if config.estimator == "router" else None
    routed = None
    if counter is not None:
        # The router's exact count of the request as given anchors the whole request.
        routed = await _router_calibration(state, request, counter)
        if routed is not None:
            calibration, digests = routed, None
    # Every pass compares estimates with the budget in estimator units: with a calibration, the
    # largest estimate whose calibrated count fits (``Calibration.unscale``).
    budget = usable if calibration is None else (
        calibration.unscale(usable - state.overhead_tokens) + state.overhead_tokens)
    # A usage anchor may only help: whatever fits uncalibrated is never refused because of it.
    guarded = calibration is not None and routed is None
    if state.anchor and state.fixed_tokens() > budget:
        if guarded and state.fixed_tokens() <= usable:
            calibration, budget, guarded = None, usable, False
        else:
            # The anchor is the caller's promise: never cut, so a call it cannot fit fails at once.
            raise errors.overflow(_reported(state, state.fixed_tokens(), calibration), usable)
    initial_total = state.total()
    applied: dict[str, Any] = {
        "initial_token_count": initial_total,
        "pruned": False,
        "pruned_tokens": 0,
        "capped_parts": 0,
        "capped_tokens": 0,
        "compacted": False,
    }
    if anchor_requested:
        applied["anchor_tokens"] = sum(state.anchor_sizes)
    warnings: list[dict[str, Any]] = []
    if config.retention is not None:
        retained = apply_retention(state.view, state.sizes, config.retention, estimator, request.model.provider)
        state.view, state.sizes = retained.messages, retained.sizes
        warnings.extend(retained.warnings)
        if state.explanation is not None:
            state.explanation.retention(retained.changes, state.view_to_orig)
    _cap_pass(state, options, config, estimator, applied, deps.log, reuse)
    if options.allow_prune is not False:
        _prune_pass(state, options, config, estimator, applied, reuse, calibration)
    if _compaction_due(state.total(), budget, config) and options.allow_compaction is not False:
        # The summariser's budget is never below the uncalibrated one.
        outcome = await compaction_step(
            _compaction_request(state, request, budget, estimator, config,
                                max(budget, usable) if guarded else None), deps
        )
        if outcome is not None:
            _apply_compaction(state, outcome, request.system_prompt, estimator, applied,
                              config.summary_placement)
    _fit(state, budget, step_tokens(budget, config.reduce_to), estimator, applied, config,
         deps.log, warnings)

    initial_calibration = calibration
    if routed is not None and not _unchanged(state, request):
        # What is returned differs from what was counted: the second (and last) router call.
        recount = await _router_calibration(state, request, counter)
        if recount is not None:
            calibration = recount
            budget = calibration.unscale(usable - state.overhead_tokens) + state.overhead_tokens
            _fit(state, budget, step_tokens(budget, config.reduce_to), estimator, applied, config,
                 deps.log, warnings)
    if warnings:
        applied["warnings"] = warnings
    if state.total() > budget:
        error = errors.overflow(_reported(state, state.total(), calibration), usable)
        if not guarded:
            raise error
        if state.total() > usable:
            return await _uncalibrated(request, deps, reuse, error)
        # Over the calibrated budget but within the uncalibrated one: answered uncalibrated.
        calibration = initial_calibration = None
    # [hook: compact_ahead_at, the answer is final] maybe start the session's summary ahead of
    # time, off this call (``core.compaction.ahead.after_call``); inert while the key is null.
    if ahead.due(config, state.total(), budget, applied["compacted"]) and not options.preview_only:
        ahead.after_call(_compaction_request(state, request, budget, estimator, config,
                                             max(budget, usable) if guarded else None), deps, reuse.memo)
    if digests is not None:
        _remember_sent(state, request, digests, deps, initial_total - state.overhead_tokens, usable)
    if calibration is not None:
        _calibrate_applied(applied, calibration)
        if state.explanation is not None:
            state.explanation.calibrate(calibration)
        applied["initial_token_count"] = _reported(state, initial_total, initial_calibration)
    if state.explanation is not None:
        applied["actions"] = state.explanation.actions()
    if applied["compacted"]:
        # The next request may start at the tail: the summary carries the anchor to it.
        applied["summary"] = with_anchor(applied["summary"], state.anchor)
    if config.report_prefix:
        applied.update(_prefix_report(state, request, config))
    return {
        "system_prompt": state.system_prompt,
        "messages": state.messages(),
        "token_count": _reported(state, state.total(), calibration),
        "usable": usable,
        "effective_max_output_tokens": resolved.max_output_tokens,
        "model_resolved": resolved.provenance,
        "applied": applied,
        "breakdown": _breakdown(state, request.parts, estimator, calibration, routed is not None),
    }


async def _uncalibrated(request: AssembleRequest, deps: AssembleDeps, reuse: CallReuse,
                        error: errors.HandlerError) -> dict[str, Any]:
    """The call run again without its usage anchor, after the calibrated run ended over budget:
    its answer if that fits, else the calibrated overflow (the better count of the two)."""
    try:
        return await _assemble(request, deps, reuse, calibrate=False)
    except errors.HandlerError as exc:
        if exc.kind == errors.OVERFLOW:
            raise error from None
        raise


def _compaction_due(total: int, usable: int, config: WorkerConfig) -> bool:
    """Over budget, or (``eager_compaction_at``) past that share of it though still fitting."""
    if total > usable:
        return True
    eager = config.eager_compaction_at
    return eager is not None and total > floor(eager * usable)


def _prefix_report(state: _Context, request: AssembleRequest, config: WorkerConfig) -> dict[str, Any]:
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


async def _router_calibration(state: _Context, request: AssembleRequest, counter: Any) -> Calibration | None:
    """The router's count of the context as it stands, as a calibration of the whole of it."""
    counted = await counter.count(request.model.id, state.system_prompt, request.tools, state.messages())
    estimate = state.total() - state.overhead_tokens
    if counted is None or counted <= 0 or estimate <= 0:
        return None
    return Calibration(-1, counted, estimate)


def _unchanged(state: _Context, request: AssembleRequest) -> bool:
    """Whether the context returned is the model-facing request as given."""
    returned = state.messages()
    return (
        len(returned) == len(state.original)
        and all(a is b for a, b in zip(returned, state.original))
        and state.system_prompt == render_system_prompt(request.system_prompt,
                                                        request.options.previous_summary)
    )


def _calibration(
    state: _Context, request: AssembleRequest, estimator: Estimator, deps: AssembleDeps,
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


def _reported(state: _Context, total: int, calibration: Calibration | None) -> int:
    """A total in estimator units as the response reports it (overhead is never scaled)."""
    if calibration is None:
        return total
    return calibration.scale(total - state.overhead_tokens) + state.overhead_tokens


def _calibrate_applied(applied: dict[str, Any], calibration: Calibration) -> None:
    for key in ("pruned_tokens", "capped_tokens", "anchor_tokens",
                "tokens_before", "summarized_head_tokens"):
        if key in applied:
            applied[key] = calibration.amount(applied[key])


def _remember_sent(state: _Context, request: AssembleRequest, digests: InputDigests,
                   deps: AssembleDeps, input_estimate: int, usable: int) -> None:
    """A reduced context is not the request's prefix any more: remember what was sent, so the
    next call's anchor on this one is measured against it. An input over the usable budget
    that was sent as it is (its calibrated count fitted) is remembered too: without a record,
    a prefix over the budget is taken as reduced elsewhere and not anchored on."""
    ledger = deps.sent_ledger
    if ledger is None:
        return
    if input_estimate > usable or not _unchanged(state, request):
        ledger.remember(digests.whole(input_estimate), state.total() - state.overhead_tokens)


def _fit(
    state: _Context, budget: int, step: int, estimator: Estimator, applied: dict[str, Any],
    config: WorkerConfig, log: logging.Logger, warnings: list[dict[str, Any]],
) -> None:
    """Emergency reduction, then (``overflow_fallback: drop_oldest``) dropping the oldest units,
    while the context is over ``budget``; with a retention policy every dropped range is a warning."""
    if state.total() > budget:
        _emergency_pass(state, state.total() - budget, step, estimator, applied)
    if state.total() > budget and config.overflow_fallback == "drop_oldest":
        note = _note_maker(budget, estimator) if config.working_set else None
        dropped_ranges = _drop_oldest_pass(state, state.total() - budget, step, applied, log, note)
        if config.retention is not None:
            warnings.extend({"code": "history_dropped", "dropped": count, "start": start, "end": end}
                            for count, start, end in dropped_ranges)


def _initial_context(
    request: AssembleRequest, vision: Capability, estimator: Estimator, reuse: CallReuse,
    anchor_requested: int, placement: str, carried: list[Message],
) -> _Context:
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
    return _Context(
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


def _cap_pass(
    state: _Context,
    options: AssembleOptions,
    config: WorkerConfig,
    estimator: Estimator,
    applied: dict[str, Any],
    log: logging.Logger,
    reuse: CallReuse,
) -> None:
    threshold = (
        options.max_result_tokens
        if options.max_result_tokens is not None
        else config.max_result_tokens
    )
    if threshold == 0:
        return
    capped = cap_results(state.view, state.sizes, threshold, estimator, state.function_ids(),
                         state.result_tokens, reuse=reuse)
    if state.explanation is not None:
        state.explanation.cap(capped.changes, state.view_to_orig)
    state.view, state.sizes = capped.messages, capped.sizes
    applied["capped_parts"] = capped.stats.capped_parts
    applied["capped_tokens"] = capped.stats.capped_tokens
    if capped.stats.capped_parts:
        log.info(
            "assemble: capped %d oversized function result(s), %d tokens",
            capped.stats.capped_parts,
            capped.stats.capped_tokens,
        )


def _prune_pass(
    state: _Context,
    options: AssembleOptions,
    config: WorkerConfig,
    estimator: Estimator,
    applied: dict[str, Any],
    reuse: CallReuse,
    calibration: Calibration | None = None,
) -> None:
    # Assemble reads every prune threshold from configuration; only the protected list is per call.
    # Its token thresholds are in provider units under a calibration, like the budget.
    protect, min_free = config.protect_recent_tokens, config.min_free_tokens
    if calibration is not None:
        protect, min_free = calibration.estimate_of_amount(protect), calibration.estimate_of_amount(min_free)
    params = PruneParams(
        protect_recent_tokens=protect,
        decay_user_turns=config.decay_user_turns,
        protected_user_turns=config.protected_user_turns,
        min_free_tokens=min_free,
        max_output_chars=config.max_output_chars,
        protected_functions=options.protected_functions or (),
    )
    pruned = prune(state.view, params, estimator, state.sizes, state.function_ids(),
                   state.result_tokens, reuse=reuse)
    assert pruned.sizes is not None
    if state.explanation is not None:
        state.explanation.prune(pruned.replaced, state.view_to_orig)
    state.view, state.sizes = pruned.messages, pruned.sizes
    applied["pruned"] = pruned.stats.pruned_parts > 0
    applied["pruned_tokens"] = pruned.stats.pruned_tokens


def _compaction_request(
    state: _Context,
    request: AssembleRequest,
    usable: int,
    estimator: Estimator,
    config: WorkerConfig,
    summarizer_budget: int | None = None,
) -> CompactionRequest:
    options = request.options
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
        estimator=estimator,
        config=config,
        early_headroom=usable - state.total() if state.total() <= usable else None,
        summarizer_budget=summarizer_budget,
    )


def _emergency_pass(
    state: _Context, required: int, step: int, estimator: Estimator, applied: dict[str, Any]
) -> None:
    reduced = emergency_reduce(state.view, state.sizes, required, estimator)
    if step > 0 and _rewrites_earlier_history(state.view, reduced.messages):
        # Stable steps: the results in transcript order, up to a whole number of steps, so the
        # next calls replace the same ones until the next step is needed.
        reduced = emergency_reduce(state.view, state.sizes, stepped_amount(required, step),
                                   estimator, oldest_first=True)
    if state.explanation is not None:
        state.explanation.emergency(reduced.changes, state.view_to_orig)
    state.view, state.sizes = reduced.messages, reduced.sizes
    # Emergency work is reported with prune's: `pruned` is OR-ed and its freed total added.
    applied["pruned"] = applied["pruned"] or reduced.stats.pruned_parts > 0
    applied["pruned_tokens"] += reduced.stats.pruned_tokens


def _rewrites_earlier_history(before: list[Message], after: list[Message]) -> bool:
    """Does ``after`` change a message ahead of the newest assistant message? What follows it
    (that message's results) is new since the caller's previous call, so no cached prefix
    held it."""
    newest = next((i for i in range(len(before) - 1, -1, -1) if before[i]["role"] == "assistant"), 0)
    return any(old is not new for old, new in zip(before[:newest], after[:newest]))


def _note_maker(budget: int, estimator: Estimator) -> NoteMaker:
    """``working_set``: the note of a dropped range, its section within the share of the summary
    budget a summary's working set may take."""
    share = section_budget(summary_budget(budget))

    def make(dropped: list[Message]) -> tuple[Message, int] | None:
        note = dropped_note(dropped, None, share, estimator)
        return None if note is None else (note, estimator.message(note))

    return make


def _drop_oldest_pass(
    state: _Context, excess: int, step: int, applied: dict[str, Any], log: logging.Logger,
    note: NoteMaker | None = None,
) -> list[tuple[int, int, int]]:
    """Drop the oldest units; returns (model-facing messages dropped, start, end) per range."""
    dropped = drop_oldest(state.view, state.sizes, state.view_to_orig, excess, step, note)
    if not dropped.dropped_messages:
        return []
    if state.explanation is not None:
        kept = {orig for i, orig in enumerate(dropped.view_to_orig) if i != dropped.note_index}
        state.explanation.drop([(orig, size) for orig, size in zip(state.view_to_orig, state.sizes)
                                if orig not in kept], dropped.note_size)
    before = state.view_to_orig
    state.view, state.sizes = dropped.messages, dropped.sizes
    state.view_to_orig = dropped.view_to_orig
    state._function_ids = None
    applied["dropped_messages"] = dropped.dropped_messages
    applied["dropped_ranges"] = dropped.dropped_ranges
    if dropped.note_index is not None:
        applied["working_set_note_tokens"] = applied.get("working_set_note_tokens", 0) + dropped.note_size
    log.warning(
        "assemble: over budget after every pass; dropped the %d oldest message(s) %s",
        dropped.dropped_messages,
        dropped.dropped_ranges,
    )
    return [(sum(1 for orig in before if start <= orig < end), start, end)
            for start, end in dropped.dropped_ranges]


def _breakdown(
    state: _Context, parts: dict[str, str] | None, estimator: Estimator,
    calibration: Calibration | None = None, routed: bool = False,
) -> dict[str, Any]:
    roles = by_role(state.messages(), state.lead_sizes() + state.sizes)
    prompt_tokens, tools_count = state.prompt_tokens, state.tools_tokens
    if calibration is not None:
        # Apportioned so that the parts still add up to the calibrated token_count.
        names = list(roles)
        scaled = calibration.apportion([prompt_tokens, tools_count, *roles.values()])
        prompt_tokens, tools_count = scaled[0], scaled[1]
        roles = dict(zip(names, scaled[2:]))
    breakdown: dict[str, Any] = {
        "system_prompt_tokens": prompt_tokens,
        "tools_tokens": tools_count,
        "by_role": roles,
    }
    if parts is not None:
        breakdown["by_part"] = {
            name: estimator.text(text) if calibration is None else calibration.amount(estimator.text(text))
            for name, text in sorted(parts.items())
        }
    breakdown["estimator"] = "router" if routed else estimator.kind
    if calibration is not None and not routed:
        breakdown["calibration"] = calibration.report()
    return breakdown


def _apply_compaction(
    state: _Context,
    outcome: InlineCompaction,
    base_system_prompt: str | None,
    estimator: Estimator,
    applied: dict[str, Any],
    placement: str,
) -> None:
    head_len = outcome.head_len
    if state.explanation is not None:
        state.explanation.compact(state.view_to_orig[0], outcome.tokens_before,
                                  estimator.text(outcome.summary))
    if placement == "message":
        # The system prompt stays as the request renders it without a summary.
        following = state.view[head_len] if head_len < len(state.view) else None
        state.summary_message = summary_message(outcome.summary, following)
        state.summary_size = estimator.message(state.summary_message)
    else:
        state.system_prompt = render_system_prompt(base_system_prompt, outcome.summary)
        state.prompt_tokens = estimator.text(state.system_prompt)
    state.view = state.view[head_len:]
    state._function_ids = None
    state.sizes = state.sizes[head_len:]
    applied["compacted"] = True
    applied["summary"] = outcome.summary
    applied["tail_start_index"] = state.view_to_orig[outcome.tail_start_view]
    applied["tokens_before"] = outcome.tokens_before
    applied["summarized_head_tokens"] = outcome.tokens_before
    if outcome.summary_kind is not None:
        applied["summary_kind"] = outcome.summary_kind
    if outcome.retained_items is not None:
        applied["retained_items"] = outcome.retained_items
    state.view_to_orig = state.view_to_orig[head_len:]


async def compaction_step(request: CompactionRequest, deps: AssembleDeps) -> InlineCompaction | None:
    """Inline compaction; ``None`` means "not compacted this call" (also without a summariser)."""
    if request.config.compact_ahead_at is not None:
        # [hook: compact_ahead_at, compaction] a summary computed ahead of time, else the no-wait
        # path; the summariser is never called here (``core.compaction.ahead.compact_without_waiting``).
        return await ahead.compact_without_waiting(request, deps, deps.session_store)
    return await try_compact(request, deps)
