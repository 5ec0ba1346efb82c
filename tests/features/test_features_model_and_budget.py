"""Step definitions for features/model_and_budget.feature.

The scenarios run ``context::assemble`` through the real resolver chain: a scripted llm-router
behind the invoke seam, the router adapter, the model-budget cache on a manual clock.
"""

from __future__ import annotations

import json

import anyio
import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from context_manager.adapters.model_cache import CachingModelResolver
from context_manager.adapters.router_models import RouterModelResolver
from context_manager.api import call_async
from context_manager.ports import InvokeError, ManualClock
from tests.features.world import assemble_for, library_context, new_world

scenarios("model_and_budget.feature")


class ScriptedRouter:
    """llm-router as seen through the invoke seam: a catalogue of model records."""

    def __init__(self) -> None:
        self.records: dict[str, dict] = {}
        self.caps: dict[str, int] = {}
        self.failure: str | None = None
        self.has_budget_function = True
        self.budget_requests: list[dict] = []

    def knows(self, model_id: str, window: int, output: int) -> None:
        self.records[model_id] = {
            "id": model_id, "provider": "acme", "display_name": model_id.title(),
            "context_window": window, "max_output_tokens": output,
        }

    async def invoke(self, function_id: str, payload: dict, timeout_ms: int):
        assert timeout_ms == 5000
        if function_id == "router::models::budget" and not self.has_budget_function:
            raise InvokeError("function_not_found: router::models::budget")
        self.budget_requests.append(payload)
        if self.failure is not None:
            raise InvokeError(self.failure)
        record = self.records.get(payload["id"])
        if function_id == "router::models::budget":
            if record is None:
                return None
            cap = self.caps.get(payload["id"], record["max_output_tokens"])
            return {"model": record, "effective_max_output_tokens": cap}
        if function_id == "router::models::get":
            return {"model": record}
        raise InvokeError(f"function_not_found: {function_id}")


@pytest.fixture
def world():
    router = ScriptedRouter()
    clock = ManualClock()
    cache = CachingModelResolver(RouterModelResolver(router.invoke), clock)
    return new_world(router=router, resolver=cache, clock=clock, model_cache=cache)


def _limits(window: int, output: int, input_limit: str) -> dict:
    limits = {"context_window": window, "max_output_tokens": output}
    if input_limit != "none":
        limits["input_limit"] = int(input_limit)
    return limits


# --- given -------------------------------------------------------------------------------


@given(parsers.parse('the router caps the output of "{model_id}" at {cap:d} tokens'))
def router_caps(world, model_id, cap):
    world["router"].caps[model_id] = cap


@given(parsers.parse('model "{model_id}" declares a "{level}" thinking budget of {tokens:d} tokens'))
def thinking_budget(world, model_id, level, tokens):
    world["router"].records[model_id]["thinking_budgets"] = {level: tokens}


@given(parsers.parse('the router fails with "{text}"'))
def router_fails(world, text):
    world["router"].failure = text


@given("the router only offers router::models::get")
def router_without_budget(world):
    world["router"].has_budget_function = False


# --- when --------------------------------------------------------------------------------


@when(parsers.parse("the history is assembled with inline limits {window:d} / {output:d} and input limit {input_limit}"))
def assemble_inline(world, window, output, input_limit):
    assemble_for(world, {"id": "inline-model", "limits": _limits(window, output, input_limit)})


@when(parsers.parse('the history is assembled for model "{model_id}" with inline limits {window:d} / {output:d}'))
def assemble_named_inline(world, model_id, window, output):
    assemble_for(world, {"id": model_id, "limits": _limits(window, output, "none")})


@when(parsers.parse('the history is assembled for model "{model_id}" of provider "{provider}"'))
def assemble_with_provider(world, model_id, provider):
    assemble_for(world, {"id": model_id, "provider": provider})


@when(parsers.parse('the history is assembled for model "{model_id}" at {now:d} ms'))
def assemble_at(world, model_id, now):
    world["clock"].now = now
    assemble_for(world, {"id": model_id})


@when(parsers.parse('the router announces a catalogue change for provider "{provider}"'))
def catalogue_change(world, provider):
    got = anyio.run(call_async, "context::on-models-changed", {"provider": provider, "count": 3}, library_context(world))
    assert got == {"ok": True}


# --- then --------------------------------------------------------------------------------


def _response(world) -> dict:
    assert world["error"] is None, world["error"] and world["error"].message
    return world["response"]


@then(parsers.parse('the model is resolved "{provenance}"'))
def model_resolved(world, provenance):
    assert _response(world)["model_resolved"] == provenance


@then(parsers.parse("the effective output budget is {tokens:d}"))
def effective_output(world, tokens):
    assert _response(world)["effective_max_output_tokens"] == tokens


@then(parsers.re(r"the router was asked (?P<count>\d+) times?$"))
def router_asked(world, count):
    assert len(world["router"].budget_requests) == int(count)


@then(parsers.parse("the router was asked {count:d} time with {payload}"))
def router_asked_with(world, count, payload):
    assert world["router"].budget_requests == [json.loads(payload)] * count
