"""Compaction inside ``context::assemble`` (spec 03 §5.2–§5.3).

``context::assemble`` calls :func:`try_compact` once its view is still over budget after the cap
and prune passes (or past ``eager_compaction_at`` of it) and compaction is allowed. Any reason not
to compact (busy lease, nothing to summarise, whole-head selection, failed or empty summariser
without ``summarizer_fallback: extractive``, an early compaction that does not pay) is ``None``:
assemble then falls through to emergency reduction and, if that is not enough,
``context/overflow``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from context_manager.core.budget import eager_tail_budget, preserve_recent
from context_manager.core.compaction import lease
from context_manager.core.compaction.carry_cost import (
    early_compaction_saves,
    growth_per_round,
    summarizer_call_tokens,
)
from context_manager.core.compaction.conversation import ConversationContext
from context_manager.core.compaction.produce import produce_summary
from context_manager.core.compaction.selection import select, stepped_head
from context_manager.core.compaction.summarizer_model import SummarizerTarget, cost_report, summarizer_target
from context_manager.core.passes.steps import step_tokens
from context_manager.core.settings import WorkerConfig
from context_manager.ports import Clock, Estimator, LeaseStore, ModelResolver, SummarizeError, Summarizer
from context_manager.wire.decode import ModelInput
from context_manager.wire.messages import Message


@dataclass(frozen=True, slots=True)
class CompactionRequest:
    """What assemble hands over once its view is still over budget after cap and prune.

    * ``view``: model-facing messages after media normalisation, cap and prune (canonical dicts,
      no customs);
    * ``sizes``: ``sizes[i]`` is the estimate of ``view[i]``;
    * ``view_to_orig``: ``view_to_orig[i]`` is the request index of ``view[i]``;
    * ``request_messages``: the decoded request list as received, customs included, images not
      normalised (what the default lease key hashes, so ``context::compact`` contends on the
      same claim);
    * ``lease_key``: ``options.lease_key`` verbatim, ``None`` for the default key;
    * ``base_system_prompt``: the request's ``system_prompt`` as given (``None`` when absent);
    * ``previous_summary``: ``options.previous_summary``, the anchor of chunk 0;
    * ``system_prompt``: the currently rendered system prompt (base trimmed + previous summary);
    * ``usable``: the call's usable budget (summariser input budget, base of the tail budget);
    * ``tail_turns``: ``options.tail_turns`` if given, else ``config.tail_turns``;
    * ``model``: the request's ``ModelInput`` (the summary runs on the same model);
    * ``estimator``: the estimator of this call (the summariser's requests are counted with it);
    * ``config``: this call's configuration snapshot;
    * ``early_headroom``: ``None`` when the context is over budget; otherwise it still fits by
      this many tokens and compaction runs early because it passed ``eager_compaction_at``
      (see :func:`_early_compaction_pays`);
    * ``summarizer_budget``: the summariser's input budget when it differs from ``usable`` (a
      usage calibration never gives the summariser less than the uncalibrated budget); ``None``:
      ``usable``.
    * ``chunk_budget``: the budget of each summariser request when it differs from the above (a
      history ceiling leaves the summariser the window's; ``summarizer_model`` its own model's);
      ``None``: the summariser's input budget.
    * ``tail_budget``: the tail a compaction over budget keeps when its caller chose it
      (compaction ahead of time's no-wait path keeps the eager tail); ``None``: the full-window tail.
    * ``history_ceiling``: ``max_history_tokens`` when it is below the window's usable budget
      (``usable`` is then the ceiling): an early compaction pays by the cache reads it saves
      (``core.compaction.carry_cost``); ``None``: no ceiling decides this call.
    * ``summarized``: a summariser writes the summary (under a history ceiling an early
      compaction is then also weighed against that call, ``carry_cost.summarizer_call_tokens``);
      ``False``: the extractive fallback does.
    * ``conversation``: with ``summarizer_request: conversation``, what precedes the head in the
      context as this call would return it (``core.compaction.conversation``); ``None``: rendered.
    """

    view: list[Message]
    sizes: list[int]
    view_to_orig: list[int]
    request_messages: list[Message]
    lease_key: str | None
    base_system_prompt: str | None
    previous_summary: str | None
    system_prompt: str
    usable: int
    tail_turns: int
    model: ModelInput
    estimator: Estimator
    config: WorkerConfig
    early_headroom: int | None = None
    summarizer_budget: int | None = None
    chunk_budget: int | None = None
    tail_budget: int | None = None
    history_ceiling: int | None = None
    summarized: bool = False
    conversation: ConversationContext | None = None


class InlineCompactionDeps(Protocol):
    """The call context (``handlers.context.HandlerContext`` fits)."""

    summarizer: Summarizer | None
    lease_store: LeaseStore | None
    clock: Clock
    log: logging.Logger
    # ``summarizer_model`` is resolved through it, as the session's model is.
    resolver: ModelResolver | None


@dataclass(frozen=True, slots=True)
class InlineCompaction:
    """A summary of ``view[:head_len]``; the verbatim tail starts at view index ``tail_start_view``.

    ``0 < head_len < len(view)`` and ``tail_start_view == head_len``; ``tokens_before`` is
    ``sum(sizes[:head_len])``. Assemble re-renders its prompt with ``summary``, drops the head
    from its view and maps ``tail_start_view`` through ``view_to_orig``.
    """

    summary: str
    head_len: int
    tail_start_view: int
    tokens_before: int
    # ``applied.summary_kind`` / ``applied.retained_items``; None when their option is off.
    summary_kind: str | None = None
    retained_items: int | None = None
    # ``applied.summarizer`` (``summarizer_model`` set and the summariser called); else None.
    summarizer: dict[str, Any] | None = None


async def try_compact(
    request: CompactionRequest, deps: InlineCompactionDeps
) -> InlineCompaction | None:
    """Summarise the head of assemble's view under the history's lease (03 §5.3).

    The lease is taken before selection and released whatever happens, also when selection
    then finds nothing to summarise; a busy lease skips compaction without calling the
    summariser.
    """
    if deps.summarizer is None and request.config.summarizer_fallback == "none":
        return None
    early_head: int | None = None
    if request.early_headroom is not None:
        # Decided from the request alone, so a call that would not compact early takes no
        # lease: an eager setting costs a warm turn no lease round trip.
        early_head = _early_head(request, request.early_headroom)
        if early_head is None:
            return None
    key = request.lease_key
    if key is None:
        key = lease.default_lease_key(request.request_messages)
    store = deps.lease_store  # one snapshot for acquire and release
    nonce: str | None = None
    if store is not None:
        nonce = await lease.acquire(
            store, deps.clock, key, lease.ttl_ms(request.config.lease_ttl_secs)
        )
        if nonce is None:
            deps.log.debug("compaction skipped: lease %s is held", key)
            return None
    try:
        target = None
        if deps.summarizer is not None:
            target = await summarizer_target(request.model, request.config, deps.resolver, deps.log)
        return await _compact_view(request, deps.summarizer, deps.log, early_head, target)
    finally:
        if store is not None and nonce is not None:
            await lease.release(store, key, nonce)


def _tail_budget(request: CompactionRequest) -> int:
    eager_at = request.config.eager_compaction_at
    if request.early_headroom is not None and eager_at is not None:
        return eager_tail_budget(request.usable, eager_at)
    if request.tail_budget is not None:
        return request.tail_budget
    return preserve_recent(request.usable, None)


def _head_len(request: CompactionRequest, budget: int) -> int:
    """The tail selection under ``budget``, its head moved onto the ``reduce_to`` grid."""
    selection = select(request.view, request.sizes, budget, request.tail_turns,
                       user_less_compaction=request.config.user_less_compaction)
    return stepped_head(request.view, request.sizes, selection.head_len,
                        step_tokens(request.usable, request.config.reduce_to))


def head_before_tail(request: CompactionRequest, tail_budget: int) -> int:
    """The head a compaction keeping a tail of ``tail_budget`` tokens would summarise (0: none)."""
    return _head_len(request, tail_budget)


def early_compaction_due(request: CompactionRequest) -> bool:
    """Would this call, which still fits, compact early now (``_early_compaction_pays``)?"""
    headroom = request.early_headroom
    return headroom is not None and _early_head(request, headroom) is not None


def _early_head(request: CompactionRequest, headroom: int) -> int | None:
    """The head an early compaction would summarise; ``None`` when there is none or it does not pay."""
    head_len = _head_len(request, _tail_budget(request))
    if head_len == 0 or head_len >= len(request.view):
        return None
    return head_len if _early_compaction_pays(request, head_len, headroom) else None


def _early_compaction_pays(request: CompactionRequest, head_len: int, headroom: int) -> bool:
    """Does compacting ``head_len`` now leave the next compaction no nearer than waiting would?

    Waiting for the full window, ``headroom`` tokens later, would remove the head a full-window
    selection of this view chooses. Compacting now must remove at least that plus twice the
    headroom: once because it runs ``headroom`` sooner, once because the next early compaction
    may run as much before the full window again. Otherwise the early compaction would only add
    a prefix rewrite, and the call returns the context as it is.

    Under a history ceiling the rewrite is not what an early compaction is weighed against: the
    head's cache reads until the compaction that must come are (``carry_cost``), once the
    request holds two rounds to measure its growth by.
    """
    if request.history_ceiling is not None:
        growth = growth_per_round(request.view, request.sizes)
        if growth is not None:
            call = (summarizer_call_tokens(request.estimator, request.usable, request.config.compaction_instructions)
                    if request.summarized else 0)
            return early_compaction_saves(request.sizes, head_len, headroom, request.usable, growth, call)
    full_head = _head_len(request, preserve_recent(request.usable, None))
    removed_now = sum(request.sizes[:head_len])
    removed_later = sum(request.sizes[:full_head])
    return removed_now >= removed_later + 2 * headroom


async def _compact_view(
    request: CompactionRequest, summarizer: Summarizer | None, log: logging.Logger,
    early_head: int | None,
    target: SummarizerTarget | None = None,
) -> InlineCompaction | None:
    """Summarise the head: ``early_head`` when an early compaction chose it, else the selection's."""
    view = request.view
    head_len = _head_len(request, _tail_budget(request)) if early_head is None else early_head
    if head_len == 0 or head_len >= len(view):
        return None  # nothing to summarise, or everything would be (assemble keeps a tail)
    tokens_before = sum(request.sizes[:head_len])
    try:
        produced = await produce_summary(
            summarizer,
            request.model,
            view[:head_len],
            request.usable if request.summarizer_budget is None else request.summarizer_budget,
            previous_summary=request.previous_summary,
            instructions=None,
            estimator=request.estimator,
            config=request.config,
            log=log,
            chunk_budget=request.chunk_budget,
            target=target,
            conversation=request.conversation,
        )
    except SummarizeError as exc:
        log.warning("compaction skipped: %s", exc)
        return None
    return InlineCompaction(produced.text, head_len, head_len, tokens_before,
                            produced.kind, produced.retained_items, cost_report(target))
