"""Model limits from llm-router (spec 01 §8.2): ``router::models::budget``, with a fallback to
``router::models::get`` for routers too old to offer ``budget``.

Results: a :class:`ModelBudget`, ``None`` for a model the router does not know, or
:class:`ResolverError` for an absent, failing or garbled router (never cached upstream).
"""

from __future__ import annotations

from typing import Any

from context_manager.adapters.invoke import is_unroutable
from context_manager.ports import Invoke, InvokeError, ModelBudget, ResolverError, RouterModel
from context_manager.wire.decode import (
    THINKING_LEVELS,
    FieldSpec,
    boolean,
    decode_struct,
    invalid_type,
    string,
    u64,
    variant_name,
)
from context_manager.wire.errors import DecodeError

BUDGET_FUNCTION = "router::models::budget"
GET_FUNCTION = "router::models::get"
TIMEOUT_MS = 5000


def decode_thinking_budgets(value: Any) -> dict[str, int]:
    """Level name -> tokens; one key outside the five level names makes the record unusable."""
    if type(value) is not dict:
        raise invalid_type(value, "a map")
    budgets: dict[str, int] = {}
    for level in sorted(value):
        budgets[variant_name(level, THINKING_LEVELS)] = u64(value[level])
    return budgets


_MODEL_FIELDS = {
    "id": FieldSpec(string, required=True),
    # The record's provider defaults to "" when absent, but an explicit null is a type error.
    "provider": FieldSpec(string, default="", null_is_absent=False),
    "context_window": FieldSpec(u64, required=True),
    "max_output_tokens": FieldSpec(u64, required=True),
    "input_limit": FieldSpec(u64),
    "thinking_budgets": FieldSpec(decode_thinking_budgets),
    "supports_vision": FieldSpec(boolean),
}

_BUDGET_FIELDS = {
    "model": FieldSpec(lambda v: v, required=True, null_is_absent=False),
    "effective_max_output_tokens": FieldSpec(u64, required=True),
}


def decode_router_model(value: Any) -> RouterModel:
    """Decode a catalog ``Model`` record (01 §3.7); members this worker does not read are ignored."""
    f = decode_struct(value, "Model", _MODEL_FIELDS)
    return RouterModel(
        id=f["id"],
        context_window=f["context_window"],
        max_output_tokens=f["max_output_tokens"],
        provider=f["provider"],
        input_limit=f["input_limit"],
        thinking_budgets=f["thinking_budgets"],
        supports_vision=f["supports_vision"],
    )


def decode_budget_reply(value: Any) -> ModelBudget | None:
    """``null`` -> unknown; ``{"model", "effective_max_output_tokens"}`` -> a budget."""
    if value is None:
        return None
    f = decode_struct(value, "ModelBudget", _BUDGET_FIELDS)
    model = decode_router_model(f["model"])
    return ModelBudget(model=model, effective_max_output_tokens=f["effective_max_output_tokens"])


def decode_get_reply(value: Any) -> ModelBudget | None:
    """The ``router::models::get`` shape ``{"model": Model | null} | null``.

    The output cap of an old router is the catalog's own value.
    """
    if value is None:
        return None
    if type(value) is not dict or "model" not in value:
        raise ResolverError(f"{GET_FUNCTION} response has no `model` field")
    if value["model"] is None:
        return None
    try:
        model = decode_router_model(value["model"])
    except DecodeError as exc:
        raise ResolverError(f"{GET_FUNCTION} returned an unparseable model: {exc.detail}") from None
    return ModelBudget(model=model, effective_max_output_tokens=model.max_output_tokens)


class RouterModelResolver:
    """Implements the ``ModelResolver`` port over an injected ``invoke`` callable."""

    def __init__(self, invoke: Invoke, timeout_ms: int = TIMEOUT_MS) -> None:
        self._invoke = invoke
        self._timeout_ms = timeout_ms

    async def get_model_budget(self, provider: str | None, model_id: str) -> ModelBudget | None:
        payload: dict[str, Any] = {"id": model_id}
        if provider is not None:
            payload["provider"] = provider
        try:
            reply = await self._invoke(BUDGET_FUNCTION, payload, self._timeout_ms)
        except InvokeError as exc:
            if is_unroutable(str(exc)):
                return await self._get_compat(payload)
            raise ResolverError(str(exc)) from None
        try:
            return decode_budget_reply(reply)
        except DecodeError as exc:
            raise ResolverError(f"{BUDGET_FUNCTION} returned an unparseable budget: {exc.detail}") from None

    async def _get_compat(self, payload: dict[str, Any]) -> ModelBudget | None:
        try:
            reply = await self._invoke(GET_FUNCTION, payload, self._timeout_ms)
        except InvokeError as exc:
            raise ResolverError(str(exc)) from None
        return decode_get_reply(reply)
