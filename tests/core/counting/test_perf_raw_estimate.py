"""Counting parsed messages without decoding them gives the decoder's estimate exactly."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.counting.raw_estimate import (
    ARGUMENTS_NULL,
    DETAILS_NULL,
    IS_ERROR_FALSE,
    floats_match,
    heuristic_tokens,
)
from context_manager.core.reuse import NO_REUSE
from context_manager.handlers.context import HandlerContext
from context_manager.handlers.count_tokens import count_tokens
from context_manager.wire import decode as t
from context_manager.wire.codec import dumps_wire
from context_manager.wire.errors import DecodeError

IMAGE = {"type": "image", "mime": "image/png", "data": "aGVsbG8=\\/" * 40}
COUNTED = [
    {"role": "user", "content": [{"type": "text", "text": "h\u00e9llo \"q\" \\ \n\u2028"}], "timestamp": -5},
    {"role": "user", "content": [IMAGE, {"type": "text", "text": "see"}], "timestamp": 1},
    {"role": "user", "content": [{"type": "function_result", "function_call_id": "c", "is_error": True,
                                  "content": [{**IMAGE, "attachment_id": "a"}, {"type": "text", "text": "t"}]}],
     "timestamp": 1},
    {"role": "user", "content": [{"type": "file", "attachment_id": "a", "name": "n", "mime": "m", "size": 7}],
     "timestamp": 2},
    {"role": "assistant", "content": [{"type": "thinking", "text": "x"},
                                      {"type": "thinking", "text": "y", "signature": "s"},
                                      {"type": "function_call", "id": "c", "function_id": "f"},
                                      {"type": "function_call", "id": "d", "function_id": "g",
                                       "arguments": {"z": [1, 2.5, 1e-7, 1e16, -0.0, None], "a": {"y": 1, "b": "\u00fc"}}}],
     "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": 3},
    {"role": "assistant", "content": [], "stop_reason": "end", "model": "m", "provider": "p",
     "usage": {"output": 3, "input": 2, "reasoning": 0, "cost_usd": 1e-9}, "timestamp": 4},
    {"role": "function_result", "function_call_id": "c", "function_id": "f", "content": [], "timestamp": 5},
    {"role": "function_result", "function_call_id": "c", "function_id": "f", "content": [],
     "details": {"status": "denied", "why": "no"}, "is_error": False, "timestamp": 5},
    {"role": "function_result", "function_call_id": "c", "function_id": "f", "content": [],
     "details": {"b": [1, {"c": 2}], "a": "x"}, "timestamp": 5},
    {"role": "function_result", "function_call_id": "c", "function_id": "f", "content": [],
     "details": None, "is_error": True, "timestamp": 5},
    {"role": "custom", "custom_type": "note", "content": [], "display": "d", "details": {"k": 1}, "timestamp": 6},
    {"role": "custom", "custom_type": "note", "content": [], "timestamp": 6},
]
# Valid messages whose canonical form differs in length from their raw form in ways the
# constants do not cover: decoded instead.
DECODED = [
    {"role": "assistant", "content": [], "stop_reason": "end", "model": "m", "provider": "p",
     "usage": {"input": 2, "cost_usd": 1}, "timestamp": 4},
    {"role": "assistant", "content": [], "stop_reason": "end", "model": "m", "provider": "p",
     "usage": None, "timestamp": 4},
    {"role": "assistant", "content": [], "stop_reason": "end", "model": "m", "provider": "p",
     "warnings": ["w"], "timestamp": 4},
    {"role": "user", "content": [{"type": "thinking", "text": "x", "signature": None}], "timestamp": 1},
    {"role": "user", "content": [{"type": "text", "text": "x", "extra": 1}], "timestamp": 1},
    {"role": "user", "content": [], "timestamp": 1, "extra": 1},
    {"role": "custom", "custom_type": "note", "content": [], "display": None, "timestamp": 6},
    {"role": "custom", "custom_type": "note", "content": [], "details": None, "timestamp": 6},
]
INVALID = [
    {"role": "user", "content": [{"type": "text", "text": 1}], "timestamp": 1},
    {"role": "user", "content": [], "timestamp": 1.0},
    {"role": "user", "content": [], "timestamp": 1 << 63},
    {"role": "assistant", "content": [], "stop_reason": "done", "model": "m", "provider": "p", "timestamp": 4},
    {"role": "assistant", "content": [], "stop_reason": "end", "model": "m", "provider": "p",
     "usage": {"input": -1}, "timestamp": 4},
    {"role": "function_result", "function_call_id": "c", "function_id": "f", "content": [],
     "is_error": None, "timestamp": 5},
    {"role": "user", "content": [{"type": "file", "attachment_id": "a", "name": "n", "mime": "m", "size": -1}],
     "timestamp": 2},
    {"role": "robot", "content": [], "timestamp": 1},
]


def test_orjson_writes_every_probed_float_as_the_reference_does() -> None:
    assert floats_match() is True


def test_the_default_member_constants_are_the_bytes_decoding_adds() -> None:
    assert (DETAILS_NULL, IS_ERROR_FALSE, ARGUMENTS_NULL) == (15, 17, 17)


@pytest.mark.parametrize("raw", COUNTED, ids=range(len(COUNTED)))
def test_a_plain_message_is_counted_exactly_as_its_decoded_form(raw: dict[str, Any]) -> None:
    parsed = orjson.loads(orjson.dumps(raw))
    assert heuristic_tokens(parsed) == HEURISTIC.message(t.decode_message(parsed))


@pytest.mark.parametrize("raw", DECODED + INVALID, ids=range(len(DECODED) + len(INVALID)))
def test_anything_unusual_is_left_to_the_decoder(raw: dict[str, Any]) -> None:
    assert heuristic_tokens(orjson.loads(orjson.dumps(raw))) is None


def request(messages: list[Any]) -> dict[str, Any]:
    return {"messages": messages, "model": {"id": "m"}, "system_prompt": "sys",
            "tools": [{"name": "f", "description": "d", "parameters": {"type": "object"}}],
            "parts": {"a": "bb"}}


def answer(payload: Any, json_payload: bool) -> bytes | str:
    ctx = HandlerContext(payload_from_json=json_payload)
    try:
        return dumps_wire(count_tokens(payload, ctx, NO_REUSE))  # no memo: each answer from scratch
    except DecodeError as exc:
        return str(exc)


def test_count_tokens_answers_the_same_with_and_without_the_raw_path() -> None:
    messages = COUNTED + DECODED
    payload = orjson.loads(orjson.dumps(request(messages)))
    assert answer(payload, True) == answer(payload, False)
    assert isinstance(answer(payload, True), bytes)


@pytest.mark.parametrize("bad", INVALID, ids=range(len(INVALID)))
def test_an_invalid_message_fails_with_the_decoder_error(bad: dict[str, Any]) -> None:
    payload = orjson.loads(orjson.dumps(request([*COUNTED[:3], bad, *COUNTED[3:]])))
    got = answer(payload, True)
    assert isinstance(got, str) and got == answer(payload, False)


def test_an_invalid_member_beside_the_messages_fails_with_the_decoder_error() -> None:
    payload = orjson.loads(orjson.dumps({**request(COUNTED), "model": {"id": 3}}))
    assert answer(payload, True) == answer(payload, False) == (
        "invalid type: integer `3`, expected a string")
    both = orjson.loads(orjson.dumps({**request([INVALID[0]]), "model": {"id": 3}}))
    assert answer(both, True) == answer(both, False)


def test_the_counted_enums_are_the_decoders_enums():
    from context_manager.core.counting import raw_estimate

    assert raw_estimate._STOP_REASON_SET == frozenset(t.STOP_REASONS)
    assert raw_estimate._USAGE_INT_SET == frozenset(t.USAGE_LAYOUT) - {"cost_usd"}
