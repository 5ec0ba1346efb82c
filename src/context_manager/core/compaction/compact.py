"""``context::compact``: summarise the head of a history, keep a recent tail verbatim (03 §4).

The answer is a status: ``ok`` (with the summary), ``busy`` (the history's lease is held or the
lease store failed), ``empty`` (nothing to summarise) or ``overflow`` (the summariser is
unavailable or failed). Nothing is stored: the caller persists the summary. A
``previous_summary`` carrying a pinned anchor (``core.carried_anchor``) is updated from its text
only, and the new summary carries the same anchor on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from context_manager.core.budget import default_reserved, preserve_recent, usable_budget
from context_manager.core.carried_anchor import split_summary, with_anchor
from context_manager.core.compaction import lease
from context_manager.core.compaction.produce import produce_summary
from context_manager.core.compaction.selection import select
from context_manager.core.compaction.summarizer_model import cost_report, summarizer_target
from context_manager.core.counting.estimate import estimator_for_call
from context_manager.core.resolution import resolve_model
from context_manager.core.settings import WorkerConfig
from context_manager.ports import (
    Clock,
    Estimator,
    LeaseStore,
    ModelResolver,
    SummarizeError,
    Summarizer,
    TokenizerSource,
)
from context_manager.wire.decode import ModelInput

BUSY = {"status": "busy"}
EMPTY = {"status": "empty"}
OVERFLOW = {"status": "overflow"}


@dataclass(frozen=True, slots=True)
class CompactOptions:
    tail_turns: int | None = None
    previous_summary: str | None = None
    preserve_recent_tokens: int | None = None
    lease_key: str | None = None
    instructions: str | None = None


class CompactDeps(Protocol):
    """What the function needs from its call context (``HandlerContext`` fits)."""

    config: WorkerConfig
    resolver: ModelResolver | None
    summarizer: Summarizer | None
    lease_store: LeaseStore | None
    clock: Clock
    log: logging.Logger
    tokenizers: TokenizerSource | None


async def compact(
    messages: Sequence[dict[str, Any]],
    model: ModelInput,
    options: CompactOptions,
    deps: CompactDeps,
) -> dict[str, Any]:
    """The handler steps of 03 §4.3 after decoding; the response in record order.

    Without a lease store (``deps.lease_store is None``, in-process use with no coordination)
    the summarisation runs unguarded.
    """
    if not messages:
        return dict(EMPTY)
    config = deps.config
    resolved = await resolve_model(model, deps.resolver, config, deps.log)
    reserved = default_reserved(resolved.context_window, config)
    input_budget = usable_budget(resolved, reserved, None)
    budget = preserve_recent(input_budget, options.preserve_recent_tokens)
    tail_turns = options.tail_turns if options.tail_turns is not None else config.tail_turns
    key = options.lease_key if options.lease_key is not None else lease.default_lease_key(messages)

    store = deps.lease_store  # one snapshot for acquire and release
    nonce: str | None = None
    if store is not None:
        nonce = await lease.acquire(store, deps.clock, key, lease.ttl_ms(config.lease_ttl_secs))
        if nonce is None:
            return dict(BUSY)
    try:
        return await _summarise(messages, model, options, deps, input_budget, budget, tail_turns)
    finally:
        if store is not None and nonce is not None:
            await lease.release(store, key, nonce)


async def _summarise(
    messages: Sequence[dict[str, Any]],
    model: ModelInput,
    options: CompactOptions,
    deps: CompactDeps,
    input_budget: int,
    budget: int,
    tail_turns: int,
) -> dict[str, Any]:
    estimator: Estimator = estimator_for_call(model.id, deps.config, deps.tokenizers, model.provider)
    sizes = [estimator.message(m) for m in messages]
    selection = select(messages, sizes, budget, tail_turns,
                       user_less_compaction=deps.config.user_less_compaction)
    head_len = selection.head_len
    if head_len == 0:
        return dict(EMPTY)
    tokens_before = sum(sizes[:head_len])
    carried = split_summary(options.previous_summary)
    target = None
    if deps.summarizer is not None:
        target = await summarizer_target(model, deps.config, deps.resolver, deps.log)
    try:
        produced = await produce_summary(
            deps.summarizer,
            model,
            messages[:head_len],
            input_budget,
            previous_summary=carried.text,
            instructions=options.instructions,
            estimator=estimator,
            config=deps.config,
            log=deps.log,
            target=target,
        )
    except SummarizeError as exc:
        if exc.kind == "empty":
            deps.log.warning("compaction produced no summary: %s", exc)
            return dict(EMPTY)
        if exc.kind == "unavailable":
            deps.log.error("compaction unavailable (error_kind=permanent): %s", exc)
        else:
            deps.log.error("compaction failed: %s", exc)
        return dict(OVERFLOW)
    summary = produced.text
    tokens_after = estimator.text(summary) + sum(sizes[head_len:])
    response: dict[str, Any] = {
        "status": "ok",
        "summary": with_anchor(summary, carried.anchor),
        "tail_start_index": selection.tail_start_index,
        "tokens_before": tokens_before,
        "tokens_after": tokens_after,
        "used_prior_summary": options.previous_summary is not None,
    }
    if produced.kind is not None:
        response["summary_kind"] = produced.kind
    if produced.retained_items is not None:
        response["retained_items"] = produced.retained_items
    cost = cost_report(target)
    if cost is not None:
        response["summarizer"] = cost
    return response
