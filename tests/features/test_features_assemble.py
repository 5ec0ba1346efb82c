import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from context_manager.wire.codec import dumps_wire
from tests.features.world import Catalog, assemble_for, new_world

scenarios("assemble.feature")


@pytest.fixture
def world():
    catalog = Catalog()
    return new_world(router=catalog, resolver=catalog, replying_model={"model": "m", "provider": "p"})


def _append(world, message):
    world["request"]["messages"].append(message)


@given(parsers.parse('a call "{call_id}" to "{function_id}" at {ts:d}'))
def function_call(world, call_id, function_id, ts):
    _append(world, {"role": "assistant", "stop_reason": "function_call", "model": "m", "provider": "p",
                    "content": [{"type": "function_call", "id": call_id, "function_id": function_id,
                                 "arguments": {}}], "timestamp": ts})


@given(parsers.parse('a result of {size:d} "{char}" characters for call "{call_id}" from "{function_id}" at {ts:d}'))
def function_result(world, size, char, call_id, function_id, ts):
    _append(world, {"role": "function_result", "function_call_id": call_id, "function_id": function_id,
                    "content": [{"type": "text", "text": char * size}], "timestamp": ts})


@when(parsers.parse("the history is assembled for an inline model of {window:d} tokens with {output:d} output tokens"))
def assemble_inline(world, window, output):
    assemble_for(world, {"id": "m", "limits": {"context_window": window, "max_output_tokens": output}})


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


@then(parsers.parse("the custom tokens are {tokens:d}"))
def custom_tokens(world, tokens):
    assert world["response"]["breakdown"]["by_role"]["custom"] == tokens
