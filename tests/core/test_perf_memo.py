"""The cross-call message memo: reuse is invisible (same bytes, same errors) and bounded."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from context_manager import api
from context_manager.core.intake import Intake
from context_manager.core.memo import MessageMemo, remembered
from context_manager.core.reuse import decoding_policy
from context_manager.handlers.context import HandlerContext
from context_manager.handlers.registry import FUNCTIONS
from context_manager.wire import decode as t
from context_manager.wire.codec import dumps, dumps_wire
from context_manager.wire.errors import CallError, DecodeError

USER = {"role": "user", "content": [{"type": "text", "text": "hello there"}], "timestamp": 1}
ASSISTANT = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "text": "plan", "signature": "sig"},
        {"type": "function_call", "id": "c1", "function_id": "fs::read",
         "arguments": {"path": "a.py", "limit": 200, "deep": {"b": 1.5, "a": True}}},
    ],
    "stop_reason": "function_call",
    "usage": {"input": 10, "output": 3, "cost_usd": 0.25},
    "model": "m",
    "provider": "p",
    "timestamp": 2,
}
RESULT = {"role": "function_result", "function_call_id": "c1", "function_id": "fs::read",
          "content": [{"type": "text", "text": "x = 1\n" * 50}], "timestamp": 3}


def parsed(value: Any) -> Any:
    """A fresh parse, as every request is: equal content, new objects."""
    return orjson.loads(orjson.dumps(value))


def decode_three_times(memo: MessageMemo, raws: list[Any]) -> list[list[dict[str, Any]]]:
    return [memo.decode_all(parsed(raws), t.decode_message) for _ in range(3)]


def test_a_history_is_remembered_on_its_second_call_and_served_from_the_third() -> None:
    memo = MessageMemo()
    first, second, third = decode_three_times(memo, [USER, ASSISTANT, RESULT])
    assert [dumps(m) for m in third] == [dumps(t.decode_message(m)) for m in (USER, ASSISTANT, RESULT)]
    assert all(a is not b for a, b in zip(first, second))  # seen once: nothing kept
    assert all(a is b for a, b in zip(second, third))  # kept on the second, served on the third
    assert len(memo) == 3
    assert (memo.hits, memo.misses) == (3, 3)  # the first call does not even look


def test_a_history_never_met_before_keeps_nothing_and_turns_the_memo_off_for_its_call() -> None:
    memo = MessageMemo()
    intake = Intake(decoding_policy(memo, payload_from_json=False, heuristic_counts=True))
    intake.messages(parsed([USER, ASSISTANT]))
    assert intake.reuse.memo is None
    assert len(memo) == 0
    intake = Intake(decoding_policy(memo, payload_from_json=False, heuristic_counts=True))
    intake.messages(parsed([USER, RESULT]))  # same first message: known
    assert intake.reuse.memo is memo
    assert len(memo) == 2


@pytest.mark.parametrize("path, value", [
    (("content", 1, "arguments", "limit"), 200.0),   # 200 == 200.0
    (("content", 1, "arguments", "deep", "a"), 1),   # True == 1
    (("usage", "input"), 10.0),                      # u64 given as a float: an error
    (("timestamp",), 2.0),                            # i64 given as a float: an error
])
def test_numbers_equal_in_value_but_not_in_type_are_never_served(path: tuple[Any, ...], value: Any) -> None:
    memo = MessageMemo()
    decode_three_times(memo, [ASSISTANT])
    changed = parsed(ASSISTANT)
    target = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    assert changed == ASSISTANT  # `==` alone cannot tell them apart
    try:
        expected: Any = dumps(t.decode_message(parsed(changed)))
    except DecodeError as exc:
        expected = str(exc)
    try:
        got: Any = dumps(memo.decode_all([changed], t.decode_message)[0])
    except DecodeError as exc:
        got = str(exc)
    assert got == expected
    assert got != dumps(t.decode_message(ASSISTANT))


def test_defaults_absent_or_null_in_the_raw_message_are_matched_exactly() -> None:
    memo = MessageMemo()
    with_nulls = {**ASSISTANT, "content": [{"type": "thinking", "text": "plan", "signature": None},
                                           {"type": "function_call", "id": "c2", "function_id": "f"}],
                  "warnings": None}
    decoded = decode_three_times(memo, [RESULT, with_nulls])
    assert decoded[1][0] is decoded[2][0] and decoded[1][1] is decoded[2][1]
    assert dumps(decoded[2][0]) == dumps(t.decode_message(RESULT))
    assert dumps(decoded[2][1]) == dumps(t.decode_message(with_nulls))
    # The explicit default spelled out is another raw shape: decoded afresh, same bytes.
    spelled = {**RESULT, "details": None, "is_error": False}
    again = memo.decode_all([parsed(spelled)], t.decode_message)[0]
    assert dumps(again) == dumps(t.decode_message(RESULT))


def test_an_invalid_message_with_a_known_key_raises_the_decoder_error() -> None:
    memo = MessageMemo()
    decode_three_times(memo, [RESULT])
    broken = {**RESULT, "is_error": None}  # null is refused for is_error
    with pytest.raises(DecodeError) as caught:
        memo.decode_all([parsed(broken)], t.decode_message)
    with pytest.raises(DecodeError) as expected:
        t.decode_message(broken)
    assert str(caught.value) == str(expected.value)


def test_unknown_members_and_unhashable_keys_fall_back_to_decoding() -> None:
    memo = MessageMemo()
    extra = {**USER, "note": "dropped by decoding"}
    decoded = decode_three_times(memo, [extra])
    assert dumps(decoded[2][0]) == dumps(t.decode_message(USER))
    odd = {**USER, "timestamp": [1]}
    with pytest.raises(DecodeError):
        memo.decode_all([odd], t.decode_message)


def test_memory_is_bounded_by_bytes_and_the_least_recently_used_goes_first() -> None:
    memo = MessageMemo(max_bytes=4000)
    messages = [{**USER, "content": [{"type": "text", "text": "t" * 1000}], "timestamp": i} for i in range(10)]
    for _ in range(2):
        memo.decode_all(parsed(messages), t.decode_message)
    assert memo.size_bytes <= 4000
    assert 0 < len(memo) < 10
    kept = {entry.message["timestamp"] for entry in memo._lru.values()}
    assert kept == set(range(10 - len(memo), 10))  # the newest survive
    memo.clear()
    assert (len(memo), memo.size_bytes) == (0, 0)


def test_derived_values_are_computed_once_per_entry_and_only_for_remembered_dicts() -> None:
    memo = MessageMemo()
    message = decode_three_times(memo, [USER])[2][0]
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return 42

    assert remembered(memo, message, "k", compute) == 42
    assert remembered(memo, message, "k", compute) == 42
    assert len(calls) == 1
    assert remembered(memo, dict(message), "k", compute) == 42  # an equal dict is not the entry
    assert remembered(None, message, "k", compute) == 42
    assert len(calls) == 3


def run(function_id: str, payload: Any, memo: MessageMemo | None) -> bytes:
    ctx = HandlerContext(memo=memo)
    return dumps_wire(asyncio.run(FUNCTIONS[function_id](payload, ctx)))


def history() -> dict[str, Any]:
    from bench.kit import workloads

    return workloads.w1().payload


@pytest.mark.parametrize("function_id", ["context::assemble", "context::count-tokens", "context::prune"])
def test_responses_with_a_warm_memo_are_byte_identical_to_responses_without(function_id: str) -> None:
    payload = history()
    memo = MessageMemo()
    without = run(function_id, parsed(payload), None)
    assert [run(function_id, parsed(payload), memo) for _ in range(3)] == [without] * 3
    assert memo.hits > 0 or function_id == "context::count-tokens"  # counting reads raw messages


def test_library_calls_never_share_dicts_with_later_calls() -> None:
    payload = {"messages": [USER, ASSISTANT, RESULT],
               "model": {"id": "m", "limits": {"context_window": 100000, "max_output_tokens": 1000}}}
    first = [api.call("context::assemble", parsed(payload)) for _ in range(3)]
    first[2]["messages"][0]["content"][0]["text"] = "changed by the caller"
    again = api.call("context::assemble", parsed(payload))
    assert again == first[0]
    assert again["messages"][0] is not first[1]["messages"][0]


# --- values Python's `==` confuses and JSON does not ----------------------------------------------

TWINS = [(0, 0.0), (0.0, -0.0), (-0.0, 0), (1, 1.0), (1, True), (0, False), (1.0, True),
         (2**53, 2.0**53), (-7, -7.0), (0.0, False)]


def with_value(where: str, value: Any) -> dict[str, Any]:
    """A payload carrying ``value`` at one place a number can sit in a history or a tools list."""
    call = {"type": "function_call", "id": "c1", "function_id": "f", "arguments": {"x": "v"}}
    assistant = {**ASSISTANT, "content": [call], "usage": {"input": 10}}
    result = {**RESULT, "details": None, "is_error": False}  # canonical: used as it is when parsed
    if where == "arguments":
        call["arguments"] = {"x": value}
    elif where == "array":
        call["arguments"] = {"x": ["a", 1, value]}
    elif where == "nested":
        call["arguments"] = {"x": {"y": [{"z": value}], "w": 1.5}}
    elif where == "bare":
        call["arguments"] = value
    elif where == "details":
        result["details"] = {"exit": [value]}
    elif where == "cost":
        assistant["usage"] = {"input": 10, "cost_usd": value}
    return {"messages": [USER, assistant, result],
            "model": {"id": "m", "limits": {"context_window": 100000, "max_output_tokens": 100}}}


def answer(payload: dict[str, Any], memo: MessageMemo | None, from_json: bool) -> bytes:
    ctx = HandlerContext(memo=memo, payload_from_json=from_json)
    try:
        return dumps_wire(asyncio.run(api.call_async("context::assemble", parsed(payload), ctx)))
    except CallError as exc:
        return f"{exc.code}: {exc.message}".encode()


def same_cost(a: Any, b: Any) -> bool:
    """Does ``cost_usd`` decode both alike? Any number is written back as a float."""
    return type(a) is not bool and type(b) is not bool and repr(float(a)) == repr(float(b))


PAIRS = TWINS + [(b, a) for a, b in TWINS]
CASES = [(first, then, where) for first, then in PAIRS
         for where in ("arguments", "array", "nested", "bare", "details", "cost")
         if where != "cost" or not same_cost(first, then)]


@pytest.mark.parametrize("from_json", [True, False], ids=["parsed", "values"])
@pytest.mark.parametrize("first, then, where", CASES)
def test_a_value_equal_in_python_but_not_in_json_is_never_served_for_its_twin(first: Any, then: Any, where: str,
                                                                              from_json: bool) -> None:
    memo = MessageMemo()
    for _ in range(2):  # seen, then remembered
        answer(with_value(where, first), memo, from_json)
    served = answer(with_value(where, then), memo, from_json)
    assert served == answer(with_value(where, then), None, from_json)
    # The pair really is written apart (or refused apart), so the check above can fail.
    assert served != answer(with_value(where, first), None, from_json)


def tools(value: Any) -> list[dict[str, Any]]:
    return [{"name": "t", "description": "d", "parameters": {"default": [value]}}]


@pytest.mark.parametrize("first, then", PAIRS)
def test_a_tools_list_is_shared_only_with_the_same_json_text(first: Any, then: Any) -> None:
    memo = MessageMemo()
    kept = memo.decode_value("tools", parsed(tools(first)), t.decode_tools)
    served = memo.decode_value("tools", parsed(tools(then)), t.decode_tools)
    assert served is not kept
    assert dumps(served) == dumps(t.decode_tools(tools(then))) != dumps(kept)


def test_library_calls_decode_afresh_so_a_nan_is_refused_after_equal_calls() -> None:
    # orjson writes NaN as null, so a memo keyed by JSON text could not tell them apart; library
    # calls (the one way to pass a NaN) run without a memo.
    tools = [{"name": "t", "description": "d", "parameters": {"default": None}}]
    payload = {"messages": [USER], "tools": tools,
               "model": {"id": "m", "limits": {"context_window": 100000, "max_output_tokens": 100}}}
    for _ in range(3):
        api.call("context::assemble", parsed(payload))
    nan_tools = [{**tools[0], "parameters": {"default": float("nan")}}]
    with pytest.raises(CallError) as caught:
        api.call("context::assemble", {**payload, "tools": nan_tools})
    assert (caught.value.code, caught.value.message) == (
        "invocation_failed", "serialization error: number out of range")
