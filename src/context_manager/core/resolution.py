"""Model resolution (spec 01 §7.2, §8.1): inline limits, then the router, then the fallback.

The result carries the limits budget math needs, the vision capability media handling needs,
and the provenance reported as ``model_resolved``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from context_manager.ports import ModelBudget, ModelResolver, ResolverError
from context_manager.wire.errors import model_unresolved

if TYPE_CHECKING:
    from context_manager.core.settings import WorkerConfig
    from context_manager.wire.decode import ModelInput

Vision = Literal["vision", "text_only", "unknown"]
Provenance = Literal["inline", "router", "fallback"]

FALLBACK_CONTEXT_WINDOW = 8192
FALLBACK_MAX_OUTPUT_TOKENS = 1024

# Reason text used when no router can be reached at all (standalone calls have no engine).
NO_ROUTER_TEXT = "no connection to llm-router"


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    context_window: int
    max_output_tokens: int
    input_limit: int | None
    thinking_budgets: Mapping[str, int] | None
    vision: Vision
    provenance: Provenance


def inline_model(limits) -> ResolvedModel:
    """Caller-supplied limits: no thinking budgets, vision unknown (images kept)."""
    return ResolvedModel(
        context_window=limits.context_window,
        max_output_tokens=limits.max_output_tokens,
        input_limit=limits.input_limit,
        thinking_budgets=None,
        vision="unknown",
        provenance="inline",
    )


def router_model(budget: ModelBudget) -> ResolvedModel:
    """A catalog record: the output cap is the lower of the router's effective cap and the record's.

    A record that does not positively declare vision is text-only (01 §7.2, §10 item 6).
    """
    model = budget.model
    budgets = model.thinking_budgets
    return ResolvedModel(
        context_window=model.context_window,
        max_output_tokens=min(budget.effective_max_output_tokens, model.max_output_tokens),
        input_limit=model.input_limit,
        thinking_budgets=None if budgets is None else MappingProxyType(dict(budgets)),
        vision="vision" if model.supports_vision is True else "text_only",
        provenance="router",
    )


def fallback_model() -> ResolvedModel:
    return ResolvedModel(
        context_window=FALLBACK_CONTEXT_WINDOW,
        max_output_tokens=FALLBACK_MAX_OUTPUT_TOKENS,
        input_limit=None,
        thinking_budgets=None,
        vision="unknown",
        provenance="fallback",
    )


async def resolve_model(
    model_input: ModelInput,
    resolver: ModelResolver | None,
    config: WorkerConfig,
    log: logging.Logger,
) -> ResolvedModel:
    """Resolve limits in the order of 01 §8.1.

    An unknown model and an absent or failing router look the same to the caller: the fallback
    model when ``allow_fallback_limits`` is on, else ``context/model_unresolved``.
    """
    if model_input.limits is not None:
        return inline_model(model_input.limits)

    if resolver is None:
        reason = f"router unavailable: {NO_ROUTER_TEXT}"
    else:
        try:
            budget = await resolver.get_model_budget(model_input.provider, model_input.id)
        except ResolverError as exc:
            reason = f"router unavailable: {exc}"
        else:
            if budget is not None:
                return router_model(budget)
            reason = f"model {model_input.id} is not in the router catalog"

    if config.allow_fallback_limits:
        log.warning(
            "using fallback limits %d/%d for model %s: %s",
            FALLBACK_CONTEXT_WINDOW,
            FALLBACK_MAX_OUTPUT_TOKENS,
            model_input.id,
            reason,
        )
        return fallback_model()
    raise model_unresolved(reason)
