import json

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from tests.features.world import call_function, new_world

scenarios("prune.feature")


@pytest.fixture
def world():
    return new_world()


@given(parsers.parse('a result of {size:d} "{char}" characters from call "{call_id}" to "{function_id}" at {ts:d}'))
def function_result(world, size, char, call_id, function_id, ts):
    world["request"]["messages"].append({"role": "function_result", "function_call_id": call_id,
                                         "function_id": function_id,
                                         "content": [{"type": "text", "text": char * size}], "timestamp": ts})


@when(parsers.parse("the history is pruned with options {options}"))
def prune_history(world, options):
    world["options"] = json.loads(options)
    call_function(world, "context::prune", {"messages": world["request"]["messages"], "options": world["options"]})


@when("the returned history is pruned again with the same options")
def prune_again(world):
    call_function(world, "context::prune", {"messages": world["response"]["messages"], "options": world["options"]})


@when("a prune request without messages is sent")
def prune_without_messages(world):
    call_function(world, "context::prune", {"options": None})


@then(parsers.parse("the stats are {tokens:d} tokens, {parts:d} parts, {scanned:d} scanned"))
def stats(world, tokens, parts, scanned):
    response = world["response"]
    assert (response["pruned_tokens"], response["pruned_parts"], response["scanned_parts"]) == (
        tokens, parts, scanned)


@then(parsers.parse("message {index:d} still holds {size:d} characters"))
def message_holds(world, index, size):
    [block] = world["response"]["messages"][index]["content"]
    assert len(block["text"]) == size
