"""Model resolution (spec 01 §7.2, §8.1) and the outcomes table W25, plus W20/W21 via the router."""

from __future__ import annotations

import asyncio
import logging

import pytest

from context_manager.core.budget import default_reserved, usable_budget
from context_manager.core.resolution import ResolvedModel, resolve_model
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.ports import ModelBudget, ResolverError, RouterModel
from context_manager.wire.decode import ModelInput, ModelLimits, decode_model_input
from context_manager.wire.errors import HandlerError

LOG = logging.getLogger("test.resolution")
NO_FALLBACK = WorkerConfig(allow_fallback_limits=False)


class FakeResolver:
    """Answers from a table; records every query."""

    def __init__(self, answers=None, error: str | None = None) -> None:
        self.answers = answers or {}
        self.error = error
        self.calls: list[tuple[str | None, str]] = []

    async def get_model_budget(self, provider, model_id):
        self.calls.append((provider, model_id))
        if self.error is not None:
            raise ResolverError(self.error)
        return self.answers.get(model_id)


def budget(cw, out, effective=None, **extra) -> ModelBudget:
    record = RouterModel(id="m", context_window=cw, max_output_tokens=out, **extra)
    return ModelBudget(record, out if effective is None else effective)


def resolve(model_input, resolver, config=DEFAULT_CONFIG) -> ResolvedModel:
    return asyncio.run(resolve_model(model_input, resolver, config, LOG))


def usable(resolved: ResolvedModel, level=None) -> int:
    return usable_budget(resolved, default_reserved(resolved.context_window, DEFAULT_CONFIG), level)


# --- W25 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [DEFAULT_CONFIG, NO_FALLBACK])
def test_w25_inline_limits_never_ask_the_router(config):
    resolver = FakeResolver({"small": budget(32000, 16000)})
    got = resolve(ModelInput("small", "p", ModelLimits(10000, 1000)), resolver, config)
    assert got == ResolvedModel(10000, 1000, None, None, "unknown", "inline")
    assert resolver.calls == []


@pytest.mark.parametrize("config", [DEFAULT_CONFIG, NO_FALLBACK])
def test_w25_router_known_model(config):
    resolver = FakeResolver({"small": budget(32000, 16000)})
    got = resolve(ModelInput("small"), resolver, config)
    assert got.provenance == "router"
    assert usable(got) == 12800
    assert resolver.calls == [(None, "small")]


def test_w25_unknown_model_falls_back(caplog):
    with caplog.at_level(logging.WARNING, logger="test.resolution"):
        got = resolve(ModelInput("ghost-model"), FakeResolver())
    assert got == ResolvedModel(8192, 1024, None, None, "unknown", "fallback")
    assert usable(got) == 6349
    assert "ghost-model" in caplog.text
    assert "not in the router catalog" in caplog.text


def test_w25_router_error_falls_back(caplog):
    with caplog.at_level(logging.WARNING, logger="test.resolution"):
        got = resolve(ModelInput("m1"), FakeResolver(error="invocation timed out"))
    assert got.provenance == "fallback"
    assert "m1" in caplog.text and "router unavailable: invocation timed out" in caplog.text


def test_w25_router_absent_falls_back():
    assert resolve(ModelInput("m1"), None).provenance == "fallback"


def test_w25_unknown_model_without_fallback():
    with pytest.raises(HandlerError) as err:
        resolve(ModelInput("ghost-model"), FakeResolver(), NO_FALLBACK)
    assert err.value.wire_message == (
        "handler error: context/model_unresolved: could not resolve model limits "
        "(model ghost-model is not in the router catalog)"
    )


def test_w25_router_error_without_fallback():
    with pytest.raises(HandlerError) as err:
        resolve(ModelInput("m1"), FakeResolver(error="E"), NO_FALLBACK)
    assert err.value.text == (
        "context/model_unresolved: could not resolve model limits (router unavailable: E)"
    )


def test_router_absent_without_fallback_names_router_unavailable():
    with pytest.raises(HandlerError) as err:
        resolve(ModelInput("m1"), None, NO_FALLBACK)
    assert err.value.text.startswith(
        "context/model_unresolved: could not resolve model limits (router unavailable: "
    )


# --- router records ----------------------------------------------------------------------


def test_w21_effective_output_cap_is_the_minimum():
    record = budget(272000, 128000, 32000, supports_vision=False)
    got = resolve(ModelInput("gpt"), FakeResolver({"gpt": record}))
    assert got.max_output_tokens == 32000
    assert got.vision == "text_only"
    assert usable(got) == 220000
    wide = resolve(ModelInput("gpt"), FakeResolver({"gpt": budget(272000, 128000, 200000)}))
    assert wide.max_output_tokens == 128000


def test_w20_thinking_budgets_come_from_the_router():
    record = budget(100000, 10000, thinking_budgets={"high": 16000})
    got = resolve(ModelInput("think"), FakeResolver({"think": record}))
    assert dict(got.thinking_budgets) == {"high": 16000}
    assert usable(got, "high") == 64000
    assert usable(got, "low") == 80000
    assert usable(got, None) == 80000


def test_w20_inline_ignores_thinking_level():
    got = resolve(decode_model_input({"id": "x", "limits": {"context_window": 10000, "max_output_tokens": 1000}}), None)
    assert usable(got, "xhigh") == 8000


@pytest.mark.parametrize("flag,vision", [(True, "vision"), (False, "text_only"), (None, "text_only")])
def test_router_vision_capability(flag, vision):
    got = resolve(ModelInput("v"), FakeResolver({"v": budget(1000, 10, supports_vision=flag)}))
    assert got.vision == vision


def test_router_input_limit_passes_through():
    got = resolve(ModelInput("v"), FakeResolver({"v": budget(1000, 10, input_limit=700)}))
    assert got.input_limit == 700


def test_provider_is_passed_as_given():
    resolver = FakeResolver({"m": budget(1000, 10)})
    resolve(ModelInput("m", ""), resolver)
    resolve(ModelInput("m", "openai"), resolver)
    assert resolver.calls == [("", "m"), ("openai", "m")]


def test_allow_fallback_is_read_from_the_config_passed():
    with pytest.raises(HandlerError):
        resolve(ModelInput("x"), FakeResolver(), WorkerConfig(allow_fallback_limits=False))
    assert resolve(ModelInput("x"), FakeResolver(), WorkerConfig()).provenance == "fallback"
