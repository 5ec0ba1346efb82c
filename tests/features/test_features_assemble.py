import json

import anyio
import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from context_manager import CallError
from context_manager.api import call_async
from context_manager.config.parse import parse_config_value
from context_manager.handlers.context import HandlerContext
from context_manager.ports import ModelBudget, RouterModel
from context_manager.wire.codec import dumps_wire

scenarios("assemble.feature")


class CatalogRouter:
    """A router catalogue holding the models a scenario declares (none declares vision)."""

    def __init__(self):
        self.models = {}

    async def get_model_budget(self, provider, model_id):
        model = self.models.get(model_id)
        if model is None:
            return None
        return ModelBudget(model=model, effective_max_output_tokens=model.max_output_tokens)


@pytest.fixture
def world():
    return {"config": {}, "options": None, "router": CatalogRouter(),
            "request": {"messages": []}}


def _append(world, message):
    world["request"]["messages"].append(message)


@given(parsers.parse('a user turn "{text}" at {ts:d}'))
def user_turn(world, text, ts):
    _append(world, {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})


@given(parsers.parse('an assistant reply "{text}" at {ts:d}'))
def assistant_reply(world, text, ts):
    _append(world, {"role": "assistant", "content": [{"type": "text", "text": text}],
                    "stop_reason": "end", "model": "m", "provider": "p", "timestamp": ts})


@given(parsers.parse('a call "{call_id}" to "{function_id}" at {ts:d}'))
def function_call(world, call_id, function_id, ts):
    _append(world, {"role": "assistant", "stop_reason": "function_call", "model": "m", "provider": "p",
                    "content": [{"type": "function_call", "id": call_id, "function_id": function_id,
                                 "arguments": {}}], "timestamp": ts})


@given(parsers.parse('a result of {size:d} "{char}" characters for call "{call_id}" from "{function_id}" at {ts:d}'))
def function_result(world, size, char, call_id, function_id, ts):
    _append(world, {"role": "function_result", "function_call_id": call_id, "function_id": function_id,
                    "content": [{"type": "text", "text": char * size}], "timestamp": ts})


@given(parsers.parse("a user message with a PNG image of {size:d} base64 characters at {ts:d}"))
def image_message(world, size, ts):
    _append(world, {"role": "user", "timestamp": ts,
                    "content": [{"type": "image", "mime": "image/png", "data": "A" * size}]})


@given(parsers.parse('a custom "{custom_type}" message "{text}" at {ts:d}'))
def custom_message(world, custom_type, text, ts):
    _append(world, {"role": "custom", "custom_type": custom_type,
                    "content": [{"type": "text", "text": text}], "timestamp": ts})


@given(parsers.parse('the router knows model "{model_id}" with a {window:d} token window and {output:d} output tokens'))
def router_model(world, model_id, window, output):
    world["router"].models[model_id] = RouterModel(id=model_id, context_window=window,
                                                   max_output_tokens=output)


@given(parsers.parse("the worker configuration {config}"))
def worker_configuration(world, config):
    world["config"] = json.loads(config)


@given(parsers.parse("the options {options}"))
def options(world, options):
    world["options"] = json.loads(options)


@given("the request has no messages member")
def no_messages(world):
    del world["request"]["messages"]


def _assemble(world, model):
    ctx = HandlerContext(config=parse_config_value(world["config"]), resolver=world["router"])
    payload = {**world["request"], "model": model, "options": world["options"]}
    try:
        world["response"] = anyio.run(call_async, "context::assemble", payload, ctx)
    except CallError as exc:
        world["error"] = exc


@when(parsers.parse('the history is assembled for model "{model_id}"'))
def assemble_router(world, model_id):
    _assemble(world, {"id": model_id})


@when(parsers.parse("the history is assembled for an inline model of {window:d} tokens with {output:d} output tokens"))
def assemble_inline(world, window, output):
    _assemble(world, {"id": "m", "limits": {"context_window": window, "max_output_tokens": output}})


@then(parsers.parse("the usable budget is {usable:d}"))
def usable_budget(world, usable):
    assert world["response"]["usable"] == usable


@then(parsers.parse("the token count is {tokens:d}"))
def token_count(world, tokens):
    assert world["response"]["token_count"] == tokens


@then(parsers.parse("applied is {expected}"))
def applied(world, expected):
    assert dumps_wire(world["response"]["applied"]) == expected.encode()


@then("the returned messages equal the request messages")
def unchanged(world):
    returned = world["response"]["messages"]
    assert [m["content"] for m in returned] == [m["content"] for m in world["request"]["messages"]]


@then(parsers.parse('message {index:d} is a function_result_reference with sha256 "{digest}"'))
def reference(world, index, digest):
    details = world["response"]["messages"][index]["details"]["context_reference"]
    assert details["kind"] == "function_result_reference"
    assert details["sha256"] == digest


@then(parsers.parse('message {index:d} contains "{text}"'))
def contains(world, index, text):
    assert text in world["response"]["messages"][index]["content"][0]["text"]


@then(parsers.parse('message {index:d} reads "{text}"'))
def reads(world, index, text):
    assert world["response"]["messages"][index]["content"] == [{"type": "text", "text": text}]


@then(parsers.parse("the response has {count:d} messages"))
def message_count(world, count):
    assert len(world["response"]["messages"]) == count


@then(parsers.parse("the custom tokens are {tokens:d}"))
def custom_tokens(world, tokens):
    assert world["response"]["breakdown"]["by_role"]["custom"] == tokens


@then(parsers.parse('the call fails with "{message}"'))
def fails(world, message):
    assert world["error"].code == "invocation_failed"
    assert world["error"].message == message
