import json

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from context_manager import CallError, call
from context_manager.wire.codec import dumps_wire

scenarios("count_tokens.feature")


@pytest.fixture
def request_body():
    return {"messages": []}


@pytest.fixture
def outcome():
    return {}


@given(parsers.parse('a user message "{text}" at {ts:d}'))
def user_message(request_body, text, ts):
    request_body["messages"].append({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})


@given(parsers.parse('an assistant reply "{text}" at {ts:d}'))
def assistant_reply(request_body, text, ts):
    request_body["messages"].append({"role": "assistant", "content": [{"type": "text", "text": text}],
                                     "stop_reason": "end", "model": "test-model", "provider": "test",
                                     "timestamp": ts})


@given(parsers.parse('a result "{text}" of call "{call_id}" to "{function_id}" with empty details at {ts:d}'))
def function_result(request_body, text, call_id, function_id, ts):
    request_body["messages"].append({"role": "function_result", "function_call_id": call_id,
                                     "function_id": function_id, "content": [{"type": "text", "text": text}],
                                     "details": {}, "is_error": False, "timestamp": ts})


@given(parsers.parse('a custom "{custom_type}" message "{text}" at {ts:d}'))
def custom_message(request_body, custom_type, text, ts):
    request_body["messages"].append({"role": "custom", "custom_type": custom_type,
                                     "content": [{"type": "text", "text": text}], "timestamp": ts})


@given(parsers.parse("a user message with a PNG image of {size:d} base64 characters at {ts:d}"))
def image_message(request_body, size, ts):
    request_body["messages"] = [{"role": "user", "timestamp": ts,
                                 "content": [{"type": "image", "mime": "image/png", "data": "A" * size}]}]


@given(parsers.parse('the part "{name}" holds {size:d} characters'))
def part(request_body, name, size):
    request_body.setdefault("parts", {})[name] = "x" * size


@given("the request has no messages member")
def no_messages(request_body):
    del request_body["messages"]


@when(parsers.parse('the history is counted for model "{model_id}"'))
def count(request_body, outcome, model_id):
    outcome.clear()
    try:
        outcome["response"] = call("context::count-tokens", {**request_body, "model": {"id": model_id}})
    except CallError as exc:
        outcome["error"] = exc


@then(parsers.parse("the wire response is {expected}"))
def wire_response(outcome, expected):
    assert dumps_wire(outcome["response"]) == expected.encode()


@then(parsers.parse("the total is {tokens:d} tokens"))
def total(outcome, tokens):
    assert outcome["response"]["tokens"] == tokens


@then(parsers.parse("the parts are reported as {expected}"))
def parts(outcome, expected):
    assert outcome["response"]["by_part"] == json.loads(expected)


@then(parsers.parse('the call fails with "{message}"'))
def fails(outcome, message):
    assert outcome["error"].code == "invocation_failed"
    assert outcome["error"].message == message
