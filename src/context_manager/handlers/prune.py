"""`context::prune`: replace eligible old function outputs with placeholders (spec 02 §8).

The whole list is processed as given: custom messages stay, and there is no media
normalization, no cap, no emergency reduction and no budget. Each knob is the option when
present and non-null, else the worker configuration (``protected_functions``: else none).
"""

from __future__ import annotations

from typing import Any

from context_manager.core.counting.estimate import estimator_for_call
from context_manager.core.explain import Explanation
from context_manager.core.intake import Intake
from context_manager.core.passes.prune import PruneParams, prune
from context_manager.core.reuse import CallReuse
from context_manager.handlers.context import HandlerContext, call_reuse
from context_manager.wire import decode as t
from context_manager.wire.errors import invalid_request

FUNCTION_ID = "context::prune"


def function_ids(value: Any) -> tuple[str, ...]:
    return tuple(t.sequence(t.string)(value))


_OPTIONS = {
    "protect_recent_tokens": t.FieldSpec(t.u64),
    "decay_user_turns": t.FieldSpec(t.usize),
    "protected_user_turns": t.FieldSpec(t.usize),
    "min_free_tokens": t.FieldSpec(t.u64),
    "max_output_chars": t.FieldSpec(t.usize),
    "protected_functions": t.FieldSpec(function_ids),
    "explain": t.FieldSpec(t.boolean),
}


def decode_options(value: Any) -> dict[str, Any]:
    return t.decode_struct(value, "PruneOptions", _OPTIONS)


_REQUEST = {
    "messages": t.FieldSpec(t.decode_messages),
    "model": t.FieldSpec(t.decode_model_input),
    "options": t.FieldSpec(decode_options),
}


def _option(options: dict[str, Any] | None, name: str, fallback: Any) -> Any:
    if options is None or options[name] is None:
        return fallback
    return options[name]


def prune_params(options: dict[str, Any] | None, ctx: HandlerContext) -> PruneParams:
    config = ctx.config
    return PruneParams(
        protect_recent_tokens=_option(options, "protect_recent_tokens", config.protect_recent_tokens),
        decay_user_turns=_option(options, "decay_user_turns", config.decay_user_turns),
        protected_user_turns=_option(options, "protected_user_turns", config.protected_user_turns),
        min_free_tokens=_option(options, "min_free_tokens", config.min_free_tokens),
        max_output_chars=_option(options, "max_output_chars", config.max_output_chars),
        protected_functions=_option(options, "protected_functions", ()),
    )


def prune_request(payload: Any, ctx: HandlerContext, reuse: CallReuse) -> dict[str, Any]:
    intake = Intake(reuse)
    request = t.decode_struct(payload, "PruneRequest", {**_REQUEST, "messages": t.FieldSpec(intake.messages)})
    messages = request["messages"]
    if messages is None:
        raise invalid_request()
    model = request["model"]
    estimator = estimator_for_call(model.id if model is not None else "", ctx.config, ctx.tokenizers,
                                    model.provider if model is not None else None)
    result = prune(messages, prune_params(request["options"], ctx), estimator, reuse=intake.reuse)
    response: dict[str, Any] = {
        "messages": result.messages,
        "pruned_tokens": result.stats.pruned_tokens,
        "pruned_parts": result.stats.pruned_parts,
        "scanned_parts": result.stats.scanned_parts,
    }
    if request["options"] is not None and request["options"]["explain"]:
        explanation = Explanation()
        explanation.prune(result.replaced)
        response["actions"] = explanation.actions()
    return response


async def handle(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    return prune_request(payload, ctx, call_reuse(ctx))
