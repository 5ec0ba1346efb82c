import json

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from context_manager import CallError, call
from tests.features.world import new_world

scenarios("count_tokens.feature")


@pytest.fixture
def world():
    return new_world()


@given(parsers.parse('a user message "{text}" at {ts:d}'))
def user_message(world, text, ts):
    world["request"]["messages"].append({"role": "user", "content": [{"type": "text", "text": text}],
                                         "timestamp": ts})


@given(parsers.parse('a result "{text}" of call "{call_id}" to "{function_id}" with empty details at {ts:d}'))
def function_result(world, text, call_id, function_id, ts):
    world["request"]["messages"].append({"role": "function_result", "function_call_id": call_id,
                                         "function_id": function_id, "content": [{"type": "text", "text": text}],
                                         "details": {}, "is_error": False, "timestamp": ts})


@given(parsers.parse("the image grows to {size:d} base64 characters"))
def image_grows(world, size):
    [message] = world["request"]["messages"]
    [block] = message["content"]
    block["data"] = "A" * size


@given(parsers.parse('the part "{name}" holds {size:d} characters'))
def part(world, name, size):
    world["request"].setdefault("parts", {})[name] = "x" * size


@when(parsers.parse('the history is counted for model "{model_id}"'))
def count(world, model_id):
    world["response"], world["error"] = None, None
    try:
        world["response"] = call("context::count-tokens", {**world["request"], "model": {"id": model_id}})
    except CallError as exc:
        world["error"] = exc


@then(parsers.parse("the total is {tokens:d} tokens"))
def total(world, tokens):
    assert world["response"]["tokens"] == tokens


@then(parsers.parse("the parts are reported as {expected}"))
def parts(world, expected):
    assert world["response"]["by_part"] == json.loads(expected)
