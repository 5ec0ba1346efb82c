"""Internal functions with valid and junk payloads (spec 01 §8.4, 04 §2.10, §6.5)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from context_manager.adapters.model_cache import CachingModelResolver
from context_manager.handlers.context import HandlerContext
from context_manager.handlers.internal import (
    handle_on_config_change,
    handle_on_models_changed,
    handle_ui_content,
)
from context_manager.ports import ManualClock, ModelBudget, RouterModel
from context_manager.wire.errors import DecodeError

KNOWN = ModelBudget(RouterModel(id="m", context_window=1000, max_output_tokens=100), 100)


class Router:
    def __init__(self) -> None:
        self.calls = 0

    async def get_model_budget(self, provider, model_id):
        self.calls += 1
        return KNOWN


def run(handler, payload, ctx):
    return asyncio.run(handler(payload, ctx))


@pytest.fixture
def cached():
    router = Router()
    cache = CachingModelResolver(router, ManualClock())
    for provider in ("p", "q", None):
        asyncio.run(cache.get_model_budget(provider, "m"))
    return router, cache


@pytest.mark.parametrize("payload", [
    {}, {"provider": "p"}, {"provider": "other", "count": 3}, {"provider": None}, {"count": "x", "extra": [1]},
])
def test_models_changed_flushes_everything(cached, payload):
    router, cache = cached
    assert len(cache) == 3
    assert run(handle_on_models_changed, payload, HandlerContext(model_cache=cache)) == {"ok": True}
    assert len(cache) == 0
    asyncio.run(cache.get_model_budget("p", "m"))
    assert router.calls == 4  # W26: the next call queries the router


@pytest.mark.parametrize("payload,detail", [
    ({"provider": 1}, "invalid type: integer `1`, expected a string"),
    (None, "invalid type: null, expected struct OnModelsChangedEvent"),
    ("p", 'invalid type: string "p", expected struct OnModelsChangedEvent'),
    ([], "invalid type: sequence, expected struct OnModelsChangedEvent"),
])
def test_models_changed_junk_flushes_nothing(cached, payload, detail):
    _router, cache = cached
    with pytest.raises(DecodeError) as err:
        run(handle_on_models_changed, payload, HandlerContext(model_cache=cache))
    assert err.value.wire_message == f"serialization error: {detail}"
    assert len(cache) == 3


def test_models_changed_without_a_cache():
    assert run(handle_on_models_changed, {}, HandlerContext()) == {"ok": True}


def test_config_change_runs_the_async_hook_and_ignores_the_payload():
    seen = []

    async def reload():
        seen.append("reloaded")

    ctx = HandlerContext(on_config_change=reload)
    for payload in ({}, {"id": "context-manager"}, {"id": None}, {"id": "someone-else", "value": {"x": 1}}):
        assert run(handle_on_config_change, payload, ctx) == {"ok": True}
    assert seen == ["reloaded"] * 4


def test_config_change_runs_a_sync_hook():
    seen = []
    ctx = HandlerContext(on_config_change=lambda: seen.append(1))
    assert run(handle_on_config_change, {}, ctx) == {"ok": True}
    assert seen == [1]


def test_config_change_answers_ok_even_when_the_reload_fails(caplog):
    async def reload():
        raise RuntimeError("configuration::get failed after 3 attempts: timeout")

    ctx = HandlerContext(on_config_change=reload, log=logging.getLogger("test.internal"))
    with caplog.at_level(logging.ERROR, logger="test.internal"):
        assert run(handle_on_config_change, {}, ctx) == {"ok": True}
    assert "failed after 3 attempts" in caplog.text


@pytest.mark.parametrize("payload,detail", [
    ({"id": 5}, "invalid type: integer `5`, expected a string"),
    (5, "invalid type: integer `5`, expected struct OnConfigChangeEvent"),
    (None, "invalid type: null, expected struct OnConfigChangeEvent"),
])
def test_config_change_junk_does_not_reload(payload, detail):
    seen = []
    ctx = HandlerContext(on_config_change=lambda: seen.append(1))
    with pytest.raises(DecodeError) as err:
        run(handle_on_config_change, payload, ctx)
    assert err.value.detail == detail
    assert seen == []


def test_config_change_without_a_hook():
    assert run(handle_on_config_change, {}, HandlerContext()) == {"ok": True}


def test_ui_content_handler():
    got = run(handle_ui_content, {"path": "context-manager/styles.css"}, HandlerContext())
    assert got["content_type"] == "text/css; charset=utf-8"
    assert '[data-iii-ui="context-manager"]' in got["content"]
