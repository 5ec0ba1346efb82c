"""The router model adapter (spec 01 §8.2): payloads, replies, compatibility path, errors."""

from __future__ import annotations

import asyncio

import pytest

from context_manager.adapters.invoke import is_unroutable
from context_manager.adapters.router_models import (
    BUDGET_FUNCTION,
    GET_FUNCTION,
    TIMEOUT_MS,
    RouterModelResolver,
    decode_router_model,
)
from context_manager.ports import InvokeError, ModelBudget, ResolverError, RouterModel
from context_manager.wire.errors import DecodeError

RECORD = {
    "id": "gpt-5",
    "provider": "openai",
    "display_name": "GPT-5",
    "context_window": 272000,
    "max_output_tokens": 128000,
    "supports_vision": False,
    "supports_tools": True,
    "pricing": {"input": 1.25},
}


class FakeInvoke:
    """Scripted replies per function id: a value, or an InvokeError to raise."""

    def __init__(self, **replies) -> None:
        self.replies = {k.replace("__", "::"): v for k, v in replies.items()}
        self.calls: list[tuple[str, dict, int]] = []

    async def __call__(self, function_id, payload, timeout_ms):
        self.calls.append((function_id, payload, timeout_ms))
        reply = self.replies[function_id]
        if isinstance(reply, InvokeError):
            raise reply
        return reply


def budget_invoke(reply):
    return FakeInvoke(**{"router__models__budget": reply})


def run(invoke, provider=None, model_id="gpt-5"):
    return asyncio.run(RouterModelResolver(invoke).get_model_budget(provider, model_id))


def test_budget_payload_without_provider():
    invoke = budget_invoke(None)
    run(invoke)
    assert invoke.calls == [(BUDGET_FUNCTION, {"id": "gpt-5"}, 5000)]
    assert TIMEOUT_MS == 5000


def test_budget_payload_with_provider_including_empty():
    invoke = budget_invoke(None)
    run(invoke, "openai")
    run(invoke, "")
    assert [c[1] for c in invoke.calls] == [{"id": "gpt-5", "provider": "openai"}, {"id": "gpt-5", "provider": ""}]


def test_null_reply_is_unknown():
    assert run(budget_invoke(None)) is None


def test_w21_budget_reply_decodes():
    got = run(budget_invoke({"model": RECORD, "effective_max_output_tokens": 32000}))
    assert got == ModelBudget(
        RouterModel(id="gpt-5", context_window=272000, max_output_tokens=128000, provider="openai",
                    supports_vision=False),
        32000,
    )


def test_budget_reply_missing_member_is_an_error():
    with pytest.raises(ResolverError, match="effective_max_output_tokens"):
        run(budget_invoke({"model": RECORD}))
    with pytest.raises(ResolverError, match="model"):
        run(budget_invoke({"effective_max_output_tokens": 1}))
    with pytest.raises(ResolverError):
        run(budget_invoke({"model": None, "effective_max_output_tokens": 1}))
    with pytest.raises(ResolverError):
        run(budget_invoke("nonsense"))


def test_budget_reply_with_bad_thinking_level_is_an_error():
    record = dict(RECORD, thinking_budgets={"high": 1, "max": 9})
    with pytest.raises(ResolverError) as err:
        run(budget_invoke({"model": record, "effective_max_output_tokens": 1}))
    assert "unknown variant `max`, expected one of `minimal`, `low`, `medium`, `high`, `xhigh`" in str(err.value)


def test_other_invocation_failures_are_errors_without_fallback():
    invoke = budget_invoke(InvokeError("invocation timed out"))
    with pytest.raises(ResolverError) as err:
        run(invoke)
    assert str(err.value) == "invocation timed out"
    assert len(invoke.calls) == 1


@pytest.mark.parametrize("text", [
    "remote error (function_not_found): Function router::models::budget not found",
    "Function Not Found",
    "No function registered",
])
def test_unroutable_budget_falls_back_to_models_get(text):
    invoke = FakeInvoke(router__models__budget=InvokeError(text), router__models__get={"model": RECORD})
    got = run(invoke, "openai")
    assert got.effective_max_output_tokens == 128000
    assert got.model.id == "gpt-5"
    assert invoke.calls[1] == (GET_FUNCTION, {"id": "gpt-5", "provider": "openai"}, 5000)


def compat(reply):
    return FakeInvoke(router__models__budget=InvokeError("function_not_found"), router__models__get=reply)


def test_compat_unknown_replies():
    assert run(compat(None)) is None
    assert run(compat({"model": None})) is None


def test_compat_reply_without_model_member():
    with pytest.raises(ResolverError) as err:
        run(compat({"models": []}))
    assert str(err.value) == "router::models::get response has no `model` field"


def test_compat_unparseable_model():
    with pytest.raises(ResolverError) as err:
        run(compat({"model": {"id": "x", "context_window": 1}}))
    assert str(err.value) == "router::models::get returned an unparseable model: missing field `max_output_tokens`"


def test_compat_failure_is_an_error_with_its_text():
    invoke = FakeInvoke(router__models__budget=InvokeError("function_not_found"),
                        router__models__get=InvokeError("function_not_found: router::models::get"))
    with pytest.raises(ResolverError) as err:
        run(invoke)
    assert str(err.value) == "function_not_found: router::models::get"


def test_is_unroutable():
    assert is_unroutable("FUNCTION_NOT_FOUND")
    assert is_unroutable("x not found y")
    assert is_unroutable("there is No Function here")
    assert not is_unroutable("invocation timed out")
    assert not is_unroutable("remote error (ADAPTER_ERROR): boom")


# --- the Model record (01 §3.7) ------------------------------------------------------------


def test_model_record_defaults_and_ignored_members():
    got = decode_router_model({"id": "m", "context_window": 10, "max_output_tokens": 5, "extra": [1]})
    assert got == RouterModel(id="m", context_window=10, max_output_tokens=5, provider="",
                              input_limit=None, thinking_budgets=None, supports_vision=None)


def test_model_record_all_members():
    got = decode_router_model({
        "id": "m", "provider": "p", "context_window": 10, "max_output_tokens": 5, "input_limit": 7,
        "thinking_budgets": {"xhigh": 4, "minimal": 1}, "supports_vision": True,
    })
    assert got.thinking_budgets == {"minimal": 1, "xhigh": 4}
    assert (got.input_limit, got.supports_vision, got.provider) == (7, True, "p")


def test_model_record_nullable_optionals():
    got = decode_router_model({"id": "m", "context_window": 10, "max_output_tokens": 5, "input_limit": None,
                               "thinking_budgets": None, "supports_vision": None})
    assert (got.input_limit, got.thinking_budgets, got.supports_vision) == (None, None, None)


@pytest.mark.parametrize("record,detail", [
    ({"context_window": 1, "max_output_tokens": 1}, "missing field `id`"),
    ({"id": "m", "context_window": -1, "max_output_tokens": 1}, "invalid value: integer `-1`, expected u64"),
    ({"id": "m", "context_window": 1, "max_output_tokens": 1, "thinking_budgets": {"max": 9}},
     "unknown variant `max`, expected one of `minimal`, `low`, `medium`, `high`, `xhigh`"),
    ({"id": "m", "context_window": 1, "max_output_tokens": 1, "thinking_budgets": {"low": -1}},
     "invalid value: integer `-1`, expected u64"),
    ({"id": "m", "context_window": 1, "max_output_tokens": 1, "provider": None},
     "invalid type: null, expected a string"),
    ({"id": "m", "context_window": 1, "max_output_tokens": 1, "supports_vision": "yes"},
     'invalid type: string "yes", expected a boolean'),
])
def test_model_record_rejections(record, detail):
    with pytest.raises(DecodeError) as err:
        decode_router_model(record)
    assert err.value.detail == detail
