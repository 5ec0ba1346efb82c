"""`context::count-tokens`: estimate a request without changing it (spec 01 §6)."""

from __future__ import annotations

from typing import Any

from context_manager.core import types as t
from context_manager.core.errors import invalid_request
from context_manager.core.estimate import by_role, estimator_for_model
from context_manager.handlers.context import HandlerContext

FUNCTION_ID = "context::count-tokens"

_REQUEST = {
    "messages": t.FieldSpec(t.decode_messages),
    "model": t.FieldSpec(t.decode_model_input, required=True),
    "system_prompt": t.FieldSpec(t.string),
    "tools": t.FieldSpec(t.decode_tools),
    "parts": t.FieldSpec(t.string_map),
}


def count_tokens(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    request = t.decode_struct(payload, "CountTokensInput", _REQUEST)
    messages = request["messages"]
    if messages is None:
        raise invalid_request()
    est = estimator_for_model(request["model"].id, ctx.config)
    sizes = [est.message(m) for m in messages]
    tokens = sum(sizes)
    if request["system_prompt"] is not None:
        tokens += est.text(request["system_prompt"])
    response: dict[str, Any] = {"tokens": 0, "by_role": by_role(messages, sizes)}
    if request["tools"] is not None:
        tools_tokens = sum(est.function(f) for f in request["tools"])
        tokens += tools_tokens
        response["tools_tokens"] = tools_tokens
    if request["parts"] is not None:
        response["by_part"] = {name: est.text(text) for name, text in request["parts"].items()}
    response["tokens"] = tokens
    response["estimator"] = est.kind
    return response


async def handle(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    return count_tokens(payload, ctx)
