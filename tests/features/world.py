"""The world a Gherkin scenario builds and checks: one dict per scenario, the same keys in every
feature, so that a step reads the same in each of them and is defined once (conftest.py).

- ``request``: the request body the message steps build (``messages`` first);
  ``messages``: the history of the features that build a whole one at a time;
- ``config``: the worker configuration as given (JSON); ``options``, ``model``, ``summary``,
  ``system_prompt``: what the next call sends, None when not sent;
- ``router``: the catalogue the scenario declares its models in (``knows``); ``resolver``,
  ``model_cache``, ``clock``, ``summarizer``, ``store``: the ports the calls run with;
- ``replying_model``: the model and provider the assistant replies name;
- ``response``, ``error``: the outcome of the last call (a ``CallError``, as a caller sees it).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import anyio
from compaction_support import FakeSummarizer

from context_manager.api import call_async
from context_manager.config.parse import parse_config_value
from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.handlers.context import HandlerContext
from context_manager.ports import ModelBudget, RouterModel, SystemClock
from context_manager.wire.errors import CallError, ContextManagerError, error_envelope


def unescape(text: str) -> str:
    return text.replace("\\n", "\n")


class Catalog:
    """A router catalogue holding the models a scenario declares (none declares vision)."""

    def __init__(self) -> None:
        self.models: dict[str, ModelBudget] = {}

    def knows(self, model_id: str, window: int, output: int) -> None:
        self.models[model_id] = ModelBudget(RouterModel(model_id, window, output), output)

    async def get_model_budget(self, provider: str, model_id: str) -> ModelBudget | None:
        return self.models.get(model_id)


def new_world(**given: Any) -> dict[str, Any]:
    """A scenario's world: every key at its default, then ``given``."""
    world: dict[str, Any] = {
        "request": {"messages": []},
        "messages": [],
        "config": {},
        "options": None,
        "model": None,
        "summary": None,
        "system_prompt": None,
        "router": None,
        "resolver": None,
        "model_cache": None,
        "clock": SystemClock(),
        "summarizer": FakeSummarizer(),
        "store": None,
        "replying_model": {"model": "test-model", "provider": "test"},
        "response": None,
        "error": None,
    }
    world.update(given)
    return world


def library_context(world: dict[str, Any]) -> HandlerContext:
    """The context of a library call: the configuration parsed strictly, the scenario's ports."""
    return HandlerContext(config=parse_config_value(world["config"]), resolver=world["resolver"],
                          clock=world["clock"], model_cache=world["model_cache"])


def call_function(world: dict[str, Any], function_id: str, payload: Any) -> None:
    """Call ``function_id`` as a library caller does."""
    world["response"], world["error"] = None, None
    try:
        world["response"] = anyio.run(call_async, function_id, payload, library_context(world))
    except CallError as exc:
        world["error"] = exc


def assemble_for(world: dict[str, Any], model: dict[str, Any]) -> None:
    """``context::assemble`` of the request for ``model``, with the options when given."""
    payload = {**world["request"], "model": model}
    if world["options"] is not None:
        payload["options"] = world["options"]
    call_function(world, "context::assemble", payload)


def run_handler(world: dict[str, Any], handler: Any, payload: Any) -> None:
    """Run one handler on ``payload`` with the scenario's ports; a failure is kept as the error
    envelope a caller receives."""
    ctx = HandlerContext(config=replace(DEFAULT_CONFIG, **world["config"]), resolver=world["resolver"],
                         summarizer=world["summarizer"], lease_store=world["store"], clock=world["clock"])
    world["response"], world["error"] = None, None
    try:
        world["response"] = asyncio.run(handler.handle(payload, ctx))
    except ContextManagerError as exc:
        world["error"] = CallError(*error_envelope(exc))
