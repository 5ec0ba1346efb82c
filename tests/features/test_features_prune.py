import json

import anyio
import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from context_manager import CallError
from context_manager.api import call_async
from context_manager.config.parse import parse_config_value
from context_manager.handlers.context import HandlerContext

scenarios("prune.feature")


@pytest.fixture
def history():
    return []


@pytest.fixture
def world():
    return {"config": {}}


def _prune(world, payload):
    ctx = HandlerContext(config=parse_config_value(world["config"]))
    try:
        world["response"] = anyio.run(call_async, "context::prune", payload, ctx)
    except CallError as exc:
        world["error"] = exc


@given(parsers.parse('a user turn "{text}" at {ts:d}'))
def user_turn(history, text, ts):
    history.append({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})


@given(parsers.parse('a result of {size:d} "{char}" characters from call "{call_id}" to "{function_id}" at {ts:d}'))
def function_result(history, size, char, call_id, function_id, ts):
    history.append({"role": "function_result", "function_call_id": call_id, "function_id": function_id,
                    "content": [{"type": "text", "text": char * size}], "timestamp": ts})


@given(parsers.parse("the worker configuration {config}"))
def worker_configuration(world, config):
    world["config"] = json.loads(config)


@when(parsers.parse("the history is pruned with options {options}"))
def prune_history(world, history, options):
    world["options"] = json.loads(options)
    _prune(world, {"messages": history, "options": world["options"]})


@when("the returned history is pruned again with the same options")
def prune_again(world):
    _prune(world, {"messages": world["response"]["messages"], "options": world["options"]})


@when("a prune request without messages is sent")
def prune_without_messages(world):
    _prune(world, {"options": None})


@then(parsers.parse("the stats are {tokens:d} tokens, {parts:d} parts, {scanned:d} scanned"))
def stats(world, tokens, parts, scanned):
    response = world["response"]
    assert (response["pruned_tokens"], response["pruned_parts"], response["scanned_parts"]) == (
        tokens, parts, scanned)


@then(parsers.parse('message {index:d} reads "{text}"'))
def message_reads(world, index, text):
    assert world["response"]["messages"][index]["content"] == [{"type": "text", "text": text}]


@then(parsers.parse("message {index:d} still holds {size:d} characters"))
def message_holds(world, index, size):
    [block] = world["response"]["messages"][index]["content"]
    assert len(block["text"]) == size


@then(parsers.parse("the response has {count:d} messages"))
def message_count(world, count):
    assert len(world["response"]["messages"]) == count


@then(parsers.parse('the call fails with "{message}"'))
def fails(world, message):
    assert world["error"].code == "invocation_failed"
    assert world["error"].message == message
