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


# --- members of an enum type given something else than a name (spec 01 §3.1) -----------------
#
# The original reads `stop_reason`, `error_kind`, `thinking_level` and `execution_mode` as enums
# of plain variants from a JSON value: a string, or an object of one member whose key names the
# variant and whose value is null (inside a message, whose members are buffered first, an empty
# object too). Message tags (`role`, a block's `type`) are names only.

# JSON kind -> the words the decoder uses for it
NOT_A_NAME = [
    (5, "invalid type: integer `5`, expected string or map"),
    (-5, "invalid type: integer `-5`, expected string or map"),
    (18446744073709551615, "invalid type: integer `18446744073709551615`, expected string or map"),
    (1.5, "invalid type: floating point `1.5`, expected string or map"),
    (5.0, "invalid type: floating point `5.0`, expected string or map"),
    (True, "invalid type: boolean `true`, expected string or map"),
    (False, "invalid type: boolean `false`, expected string or map"),
    ([], "invalid type: sequence, expected string or map"),
    (["end"], "invalid type: sequence, expected string or map"),
    ({}, "invalid value: map, expected map with a single key"),
    ({"a": None, "b": None}, "invalid value: map, expected map with a single key"),
]


def _enum_field(field: str, value):
    """A request (function id, payload) putting ``value`` in the enum-typed ``field``."""
    if field == "stop_reason":
        return "context::count-tokens", {"model": MODEL, "messages": [{**ASSISTANT, "stop_reason": value}]}
    if field == "error_kind":
        return "context::count-tokens", {"model": MODEL, "messages": [{**ASSISTANT, "error_kind": value}]}
    if field == "execution_mode":
        return "context::count-tokens", {"model": MODEL, "messages": [],
                                          "tools": [{"name": "n", "description": "d", "execution_mode": value}]}
    assert field == "thinking_level"
    return "context::assemble", {"model": INLINE, "messages": [], "options": {"thinking_level": value}}


INLINE = {"id": "m1", "limits": {"context_window": 8000, "max_output_tokens": 100}}
ENUM_FIELDS = {
    "stop_reason": ("end", "`end`, `length`, `function_call`, `aborted`, `error`"),
    "error_kind": ("transient", "`auth_expired`, `rate_limited`, `context_overflow`, `transient`, `permanent`"),
    "execution_mode": ("parallel", None),
    "thinking_level": ("high", "`minimal`, `low`, `medium`, `high`, `xhigh`"),
}
BUFFERED = {"stop_reason", "error_kind"}  # members of a message


def call_error(function_id: str, payload) -> str:
    with pytest.raises(CallError) as info:
        call(function_id, payload)
    assert info.value.code == "invocation_failed"
    return info.value.message


@pytest.mark.parametrize("field", list(ENUM_FIELDS))
@pytest.mark.parametrize("value, text", NOT_A_NAME)
def test_an_enum_member_given_neither_a_string_nor_a_one_member_object(field, value, text):
    assert call_error(*_enum_field(field, value)) == f"serialization error: {text}"


def test_null_is_refused_where_the_enum_member_is_required():
    assert call_error(*_enum_field("stop_reason", None)) == (
        "serialization error: invalid type: null, expected string or map")


@pytest.mark.parametrize("field", ["error_kind", "execution_mode", "thinking_level"])
def test_null_is_absent_where_the_enum_member_is_optional(field):
    call(*_enum_field(field, None))


@pytest.mark.parametrize("field", list(ENUM_FIELDS))
def test_a_one_member_object_names_the_variant_by_its_key(field):
    name, _ = ENUM_FIELDS[field]
    assert call(*_enum_field(field, {name: None})) == call(*_enum_field(field, name))
    expected = ENUM_FIELDS[field][1]
    words = f"one of {expected}" if expected else "`parallel` or `sequential`"
    assert call_error(*_enum_field(field, {"other": None})) == (
        f"serialization error: unknown variant `other`, expected {words}")


@pytest.mark.parametrize("field", list(ENUM_FIELDS))
@pytest.mark.parametrize("unit, kind", [(5, "integer `5`"), (-1, "integer `-1`"), (0.5, "floating point `0.5`"),
                                        (False, "boolean `false`"), ("", 'string ""'), ([], "sequence"),
                                        ({"x": None}, "map")])
def test_the_one_member_must_hold_nothing(field, unit, kind):
    name, _ = ENUM_FIELDS[field]
    assert call_error(*_enum_field(field, {name: unit})) == f"serialization error: invalid type: {kind}, expected unit"


@pytest.mark.parametrize("field", list(ENUM_FIELDS))
def test_an_empty_object_holds_nothing_only_inside_a_message(field):
    name, _ = ENUM_FIELDS[field]
    if field in BUFFERED:
        assert call(*_enum_field(field, {name: {}})) == call(*_enum_field(field, name))
    else:
        assert call_error(*_enum_field(field, {name: {}})) == (
            "serialization error: invalid type: map, expected unit")


def test_an_object_naming_the_stop_reason_is_answered_as_the_string():
    # the returned history carries the variant's name, as the original writes it back
    as_object = call("context::assemble", {"model": INLINE, "messages": [{**ASSISTANT, "stop_reason": {"length": None}}]})
    assert as_object["messages"] == [{**ASSISTANT, "stop_reason": "length"}]


@pytest.mark.parametrize("value, unexpected", [(5, "integer `5`"), (-5, "integer `-5`"), (1.5, "floating point `1.5`"),
                                               (True, "boolean `true`"), (None, "null"), ([], "sequence"),
                                               ({"user": None}, "map")])
def test_message_and_block_tags_are_names_only(value, unexpected):
    text = f"serialization error: invalid type: {unexpected}, expected variant identifier"
    assert error_of(with_message(role=value)) == text
    assert error_of(with_message(content=[{"type": value, "text": "x"}])) == text
