"""The record schema and everything derived from it: the decoder's field tables, the fast paths'
member sets, the raw estimator's counts and constants, the memo's tables, the layouts."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from context_manager.core import memo
from context_manager.core.counting import raw_estimate
from context_manager.core.counting.raw_estimate import heuristic_tokens
from context_manager.wire import decode, schema
from context_manager.wire.codec import dumps
from context_manager.wire.errors import DecodeError
from context_manager.wire.schema import defaulted, nullable, omitted, required


def fields_of(spec: Any) -> list[tuple[str, bool, Any, bool]]:
    return [(name, f.required, f.default, f.null_is_absent) for name, f in spec.fields.items()]


def test_the_function_result_message_table() -> None:
    spec = decode._MESSAGE_SPECS["function_result"]
    assert fields_of(spec) == [
        ("function_call_id", True, None, True),
        ("function_id", True, None, True),
        ("content", True, None, True),
        ("details", False, None, True),
        ("is_error", False, False, False),
        ("timestamp", True, None, True),
    ]
    assert spec.fields["content"].decoder is decode.decode_blocks
    assert spec.fields["timestamp"].decoder is decode.i64
    assert spec.omitted == ()


def test_the_assistant_and_custom_message_tables() -> None:
    assistant = decode._MESSAGE_SPECS["assistant"]
    assert [(name, f.required) for name, f in assistant.fields.items()] == [
        ("content", True), ("stop_reason", True), ("native_stop_reason", False), ("error_message", False),
        ("error_kind", False), ("warnings", False), ("usage", False), ("model", True), ("provider", True),
        ("timestamp", True)]
    assert assistant.fields["usage"].decoder is decode.decode_usage
    assert assistant.omitted == ("native_stop_reason", "error_message", "error_kind", "warnings", "usage")
    assert decode._MESSAGE_SPECS["custom"].omitted == ("display", "details")
    assert decode._MESSAGE_SPECS["user"].omitted == ()


def test_the_image_and_call_block_tables() -> None:
    image = decode._BLOCK_SPECS["image"]
    assert fields_of(image) == [("mime", True, None, True), ("data", True, None, True),
                                ("attachment_id", False, None, True)]
    assert image.omitted == ("attachment_id",)
    call = decode._BLOCK_SPECS["function_call"]
    assert fields_of(call) == [("id", True, None, True), ("function_id", True, None, True),
                               ("arguments", False, None, True)]
    assert call.fields["arguments"].decoder is decode.free_form
    assert call.omitted == ()  # a missing `arguments` is written as null
    assert decode._BLOCK_SPECS["function_result"].omitted == ("is_error",)
    assert list(decode._USAGE_SPEC.fields) == ["input", "output", "cache_read", "cache_write", "reasoning",
                                               "cost_usd"]
    assert decode._USAGE_SPEC.fields["cost_usd"].decoder is decode.f64
    assert decode._USAGE_SPEC.omitted == tuple(decode._USAGE_SPEC.fields)


def test_the_tags_and_layouts() -> None:
    assert decode.ROLES == ("user", "assistant", "function_result", "custom")
    assert decode.BLOCK_TYPES == ("text", "image", "file", "thinking", "function_call", "function_result")
    assert decode.STOP_REASONS == ("end", "length", "function_call", "aborted", "error")
    assert schema.MESSAGE_LAYOUTS["custom"] == ("role", "custom_type", "content", "display", "details",
                                                "timestamp")
    assert schema.BLOCK_LAYOUTS["thinking"] == ("type", "text", "signature")
    assert schema.USAGE_LAYOUT == ("input", "output", "cache_read", "cache_write", "reasoning", "cost_usd")


def test_the_decoder_fast_paths_are_all_on() -> None:
    assert decode._FAST_BLOCKS_ON is True
    assert decode._FAST_ROLES == {"user", "assistant", "function_result"}
    assert decode._ASSISTANT_LEFT_TO_GENERIC == ("native_stop_reason", "error_message", "error_kind", "warnings")
    assert decode._USAGE_INTEGERS == ("input", "output", "cache_read", "cache_write", "reasoning")
    assert decode._FAST_USAGE is True


def test_the_raw_estimator_counts_and_sets() -> None:
    counts = {name: getattr(raw_estimate, name) for name in (
        "_USER_N", "_ASSISTANT_N", "_ASSISTANT_USAGE_N", "_FUNCTION_RESULT_N", "_CUSTOM_N", "_TEXT_N",
        "_CALL_N", "_CALL_ARGUMENTS_N", "_THINKING_N", "_THINKING_SIGNED_N", "_IMAGE_N", "_IMAGE_ATTACHED_N",
        "_FILE_N", "_RESULT_N", "_RESULT_FLAGGED_N")}
    assert counts == {
        "_USER_N": 3, "_ASSISTANT_N": 6, "_ASSISTANT_USAGE_N": 7, "_FUNCTION_RESULT_N": 5, "_CUSTOM_N": 4,
        "_TEXT_N": 2, "_CALL_N": 3, "_CALL_ARGUMENTS_N": 4, "_THINKING_N": 2, "_THINKING_SIGNED_N": 3,
        "_IMAGE_N": 3, "_IMAGE_ATTACHED_N": 4, "_FILE_N": 5, "_RESULT_N": 3, "_RESULT_FLAGGED_N": 4}
    assert raw_estimate._STOP_REASON_SET == {"end", "length", "function_call", "aborted", "error"}
    assert raw_estimate._USAGE_INT_SET == {"input", "output", "cache_read", "cache_write", "reasoning"}
    assert raw_estimate._USAGE_FLOAT_SET == {"cost_usd"}


def test_the_memo_tables_are_per_kind() -> None:
    assert {role: tuple(shape) for role, shape in memo.MESSAGE_SHAPES.items()} == {
        "user": (set(), {}, {"content"}),
        "assistant": ({"native_stop_reason", "error_message", "error_kind", "warnings", "usage"}, {}, {"content"}),
        "function_result": (set(), {"details": None, "is_error": False}, {"content"}),
        "custom": ({"display", "details"}, {}, {"content"}),
    }
    assert {kind: tuple(shape) for kind, shape in memo.BLOCK_SHAPES.items()} == {
        "text": (set(), {}, set()),
        "image": ({"attachment_id"}, {}, set()),
        "file": (set(), {}, set()),
        "thinking": ({"signature"}, {}, set()),
        "function_call": (set(), {"arguments": None}, set()),
        "function_result": ({"is_error"}, {}, {"content"}),  # absent stays absent: no default here
    }
    assert type(memo.MESSAGE_SHAPES["function_result"].defaults["is_error"]) is bool


def test_every_name_a_fast_path_tests_is_a_member_of_its_record() -> None:
    lists = [(schema.BLOCKS, schema.DECODE_FAST_BLOCKS), (schema.MESSAGES, schema.DECODE_FAST_MESSAGES),
             (schema.MESSAGES, {"assistant": schema.DECODE_FAST_ASSISTANT}),
             (schema.MESSAGES, schema.RAW_CHECKED_MESSAGES), (schema.BLOCKS, schema.RAW_CHECKED_BLOCKS)]
    for records, known in lists:
        for kind, names in known.items():
            assert set(names) <= set(schema.names(records[kind])), kind
    # The raw estimator checks every member of every record but the assistant's omitted strings,
    # which its member count refuses.
    assert {kind: schema.unknown(schema.MESSAGES[kind], names)
            for kind, names in schema.RAW_CHECKED_MESSAGES.items()} == {
        "user": (), "assistant": ("native_stop_reason", "error_message", "error_kind", "warnings"),
        "function_result": (), "custom": ()}
    assert all(schema.knows_all(schema.BLOCKS[kind], names) for kind, names in schema.RAW_CHECKED_BLOCKS.items())


# --- how a record the fast paths do not know is treated ------------------------------------

LABELLED = (required("text", schema.STRING), omitted("label", schema.STRING))


def test_a_fast_path_steps_aside_for_a_member_it_does_not_know() -> None:
    text = schema.BLOCKS["text"]
    assert schema.knows_all(text, ("text",)) is True
    assert schema.knows_all(LABELLED, ("text",)) is False
    assert schema.knows_all_but_omitted(LABELLED, ("text",)) is True
    assert schema.knows_all_but_omitted((*LABELLED, nullable("note", schema.STRING)), ("text",)) is False
    assert schema.knows_all_but_omitted((*LABELLED, required("note", schema.STRING)), ("text",)) is False
    assert schema.knows_all_but_omitted(text, ("text", "gone")) is False
    assert schema.unknown((*LABELLED, defaulted("flag", schema.BOOLEAN, True)), ("text",)) == ("label", "flag")


def test_the_raw_estimator_counts_a_record_only_while_it_knows_its_filled_members() -> None:
    assert raw_estimate._count(LABELLED, ("text",)) == 2  # a present `label` fails the count
    for extra in (required("note", schema.STRING), nullable("note", schema.STRING),
                  defaulted("note", schema.BOOLEAN, False)):
        assert raw_estimate._count((*LABELLED, extra), ("text",)) == raw_estimate._NO_RECORD_HAS
    assert raw_estimate._count(LABELLED, ("text", "label"), usable=False) == raw_estimate._NO_RECORD_HAS
    assert raw_estimate._NO_RECORD_HAS + 2 < 0  # below any count plus the optional members it adds


def test_the_default_lengths_follow_the_defaults() -> None:
    record = (defaulted("is_error", schema.BOOLEAN, True), nullable("details", schema.FREE_FORM))
    assert raw_estimate._filled_length(record, "is_error") == len(b',"is_error":true') == 16
    assert raw_estimate._filled_length(record, "details") == len(b',"details":null') == 15


def test_a_member_filled_with_two_defaults_is_refused() -> None:
    same = [(nullable("x", schema.STRING),), (nullable("x", schema.FREE_FORM), omitted("y", schema.STRING))]
    assert schema.filled_defaults(same) == {"x": None}
    with pytest.raises(ValueError, match="member 'x' is filled with two different defaults"):
        schema.filled_defaults([(nullable("x", schema.STRING),), (defaulted("x", schema.BOOLEAN, False),)])


MESSAGES = [
    {"role": "user", "content": [{"type": "text", "text": "hi", "extra": 1},
                                 {"type": "thinking", "text": "t", "signature": None},
                                 {"type": "function_call", "id": "c", "function_id": "f",
                                  "arguments": {"b": 1, "a": 2}},
                                 {"type": "image", "mime": "m", "data": "d", "attachment_id": None}],
     "timestamp": 1},
    {"role": "assistant", "content": [], "stop_reason": "end", "warnings": None,
     "usage": {"input": 1, "cost_usd": 2}, "model": "m", "provider": "p", "timestamp": 2},
    {"role": "function_result", "function_call_id": "c", "function_id": "f", "content": [], "timestamp": 3},
    {"role": "custom", "custom_type": "x", "content": [], "display": None, "details": {"k": 1}, "timestamp": 4},
]
DECODED = (
    b'[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"thinking","text":"t"},'
    b'{"type":"function_call","id":"c","function_id":"f","arguments":{"a":2,"b":1}},'
    b'{"type":"image","mime":"m","data":"d"}],"timestamp":1},'
    b'{"role":"assistant","content":[],"stop_reason":"end","usage":{"input":1,"cost_usd":2.0},'
    b'"model":"m","provider":"p","timestamp":2},'
    b'{"role":"function_result","function_call_id":"c","function_id":"f","content":[],"details":null,'
    b'"is_error":false,"timestamp":3},'
    b'{"role":"custom","custom_type":"x","content":[],"details":{"k":1},"timestamp":4}]'
)


def test_with_every_decoder_fast_path_off_the_general_path_decodes_the_same(monkeypatch) -> None:
    assert dumps([decode.decode_message(m) for m in MESSAGES]) == DECODED
    monkeypatch.setattr(decode, "_FAST_BLOCKS_ON", False)
    monkeypatch.setattr(decode, "_FAST_ROLES", frozenset())
    monkeypatch.setattr(decode, "_FAST_USAGE", False)
    monkeypatch.setattr(decode, "_fast_message", None)  # not called any more
    assert dumps([decode.decode_message(m) for m in MESSAGES]) == DECODED
    with pytest.raises(DecodeError, match="invalid type: integer `1`, expected a string"):
        decode.decode_blocks([{"type": "text", "text": 1}])


def test_a_usage_fast_path_switched_off_leaves_assistant_messages_to_the_general_path(monkeypatch) -> None:
    message = {"role": "assistant", "content": [], "stop_reason": "end", "usage": {"input": 1},
               "model": "m", "provider": "p", "timestamp": 2}
    assert decode._fast_message("assistant", message) == message
    monkeypatch.setattr(decode, "_FAST_USAGE", False)
    assert decode._fast_message("assistant", message) is None
    assert decode.decode_message(message) == message


PLAIN = [
    ("_USER_N", {"role": "user", "content": [], "timestamp": 1}),
    ("_CUSTOM_N", {"role": "custom", "custom_type": "x", "content": [], "timestamp": 1}),
    ("_FUNCTION_RESULT_N", {"role": "function_result", "function_call_id": "c", "function_id": "f",
                            "content": [], "details": None, "is_error": False, "timestamp": 1}),
    ("_ASSISTANT_N", {"role": "assistant", "content": [], "stop_reason": "end", "model": "m",
                      "provider": "p", "timestamp": 1}),
    ("_TEXT_N", {"role": "user", "content": [{"type": "text", "text": "x"}], "timestamp": 1}),
    ("_FILE_N", {"role": "user", "content": [{"type": "file", "attachment_id": "a", "name": "n", "mime": "m",
                                              "size": 1}], "timestamp": 1}),
]


@pytest.mark.parametrize(("count", "raw"), PLAIN, ids=[count for count, _ in PLAIN])
def test_a_record_given_no_count_is_left_to_the_decoder(monkeypatch, count: str, raw: dict[str, Any]) -> None:
    parsed = orjson.loads(orjson.dumps(raw))
    assert heuristic_tokens(parsed) is not None
    monkeypatch.setattr(raw_estimate, count, raw_estimate._NO_RECORD_HAS)
    assert heuristic_tokens(parsed) is None
