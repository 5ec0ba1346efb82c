"""Decoding failures and their texts (spec 01 §4.4), through context::count-tokens."""

import pytest

from context_manager import CallError, call

HELLO = {"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 1}
MODEL = {"id": "m1"}


def error_of(payload) -> str:
    with pytest.raises(CallError) as info:
        call("context::count-tokens", payload)
    assert info.value.code == "invocation_failed"
    return info.value.message


def with_message(**changes):
    return {"model": MODEL, "messages": [{**HELLO, **changes}]}


ASSISTANT = {"role": "assistant", "content": [], "stop_reason": "end", "model": "m", "provider": "p", "timestamp": 2}
RESULT = {"role": "function_result", "function_call_id": "c", "function_id": "f", "content": [], "timestamp": 3}


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"messages": []}, "serialization error: missing field `model`"),
        ({}, "serialization error: missing field `model`"),
        ({"messages": [], "model": None}, "serialization error: invalid type: null, expected struct ModelInput"),
        ({"messages": [], "model": {}}, "serialization error: missing field `id`"),
        ({"messages": [], "model": {"id": "m", "limits": {"context_window": 1}}},
         "serialization error: missing field `max_output_tokens`"),
        ({"messages": [], "model": {"id": "m", "limits": {"context_window": -5, "max_output_tokens": 1}}},
         "serialization error: invalid value: integer `-5`, expected u64"),
        ({"messages": {}, "model": MODEL}, "serialization error: invalid type: map, expected a sequence"),
        ({"messages": [{"role": "wizard", "content": [], "timestamp": 1}]},
         "serialization error: unknown variant `wizard`, expected one of `user`, `assistant`, `function_result`, `custom`"),
        ({"messages": [{"content": [], "timestamp": 1}], "model": MODEL}, "serialization error: missing field `role`"),
        (with_message(content=[{"type": "video"}]),
         "serialization error: unknown variant `video`, expected one of `text`, `image`, `file`, `thinking`, `function_call`, `function_result`"),
        (with_message(content=[{"text": "x"}]), "serialization error: missing field `type`"),
        (with_message(content=[{"type": "text"}]), "serialization error: missing field `text`"),
        ({"model": MODEL, "messages": [{**ASSISTANT, "stop_reason": "done"}]},
         "serialization error: unknown variant `done`, expected one of `end`, `length`, `function_call`, `aborted`, `error`"),
        (with_message(timestamp=1.0), "serialization error: invalid type: floating point `1.0`, expected i64"),
        (with_message(timestamp=9223372036854775808),
         "serialization error: invalid value: integer `9223372036854775808`, expected i64"),
        (with_message(timestamp=True), "serialization error: invalid type: boolean `true`, expected i64"),
        (with_message(timestamp="1"), 'serialization error: invalid type: string "1", expected i64'),
        ({"model": MODEL, "messages": [{"role": "user", "content": []}]}, "serialization error: missing field `timestamp`"),
        ({"model": MODEL, "messages": [{**RESULT, "is_error": None}]},
         "serialization error: invalid type: null, expected a boolean"),
        ({"model": MODEL, "messages": [{**ASSISTANT, "usage": {"input": -1}}]},
         "serialization error: invalid value: integer `-1`, expected u64"),
        ({"model": MODEL, "messages": [], "tools": [{"name": "x"}]}, "serialization error: missing field `description`"),
        ({"model": MODEL, "messages": [], "parts": {"a": 1}}, "serialization error: invalid type: integer `1`, expected a string"),
        ({"model": MODEL, "messages": [], "system_prompt": 5}, "serialization error: invalid type: integer `5`, expected a string"),
        ({"model": {"id": "m1"}}, "handler error: context/invalid_request: messages is required"),
        ({"model": {"id": "m1"}, "messages": None}, "handler error: context/invalid_request: messages is required"),
    ],
)
def test_decoder_texts(payload, message):
    assert error_of(payload) == message


def test_first_failure_in_sorted_key_order_wins():
    # `content` sorts before `timestamp`: the block error is reported, not the timestamp.
    payload = with_message(content=[{"type": "video"}], timestamp="x")
    assert "unknown variant `video`" in error_of(payload)
    # present members are checked before missing ones
    assert error_of({"model": MODEL, "messages": [{"role": "user", "timestamp": "x"}]}) == (
        'serialization error: invalid type: string "x", expected i64'
    )


def test_one_bad_message_rejects_the_whole_request():
    payload = {"model": MODEL, "messages": [HELLO, HELLO, {**HELLO, "timestamp": -1.5}]}
    assert error_of(payload).startswith("serialization error: invalid type: floating point")


def test_nulls_of_optional_members_are_tolerated():
    payload = {"model": {"id": "m", "provider": None, "limits": None}, "messages": [HELLO],
               "system_prompt": None, "tools": None, "parts": None, "_caller_worker_id": "w"}
    assert call("context::count-tokens", payload)["tokens"] == 18


def test_a_two_value_enum_is_worded_with_or():
    payload = {"model": MODEL, "messages": [], "tools": [{"name": "x", "description": "", "execution_mode": "any"}]}
    assert error_of(payload) == (
        "serialization error: unknown variant `any`, expected `parallel` or `sequential`"
    )
