"""Defects found by the malformed-input corpus and by hand, pinned with their exact outcomes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from context_manager import CallError, call
from context_manager.api import run_handler
from context_manager.core.memo import MessageMemo
from context_manager.handlers.context import HandlerContext
from context_manager.wire.codec import dumps_wire, loads

INLINE = {"id": "m", "limits": {"context_window": 4000, "max_output_tokens": 400}}
PUBLIC = ("context::count-tokens", "context::prune", "context::assemble", "context::compact")


def deep(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def deep_message(depth: int) -> str:
    return ('{"role":"assistant","content":[{"type":"function_call","id":"c","function_id":"f",'
            f'"arguments":{deep(depth)}}}],"stop_reason":"end","model":"m","provider":"p","timestamp":1}}')


def deep_body(depth: int) -> bytes:
    return f'{{"messages":[{deep_message(depth)}],"model":{json.dumps(INLINE)}}}'.encode()


@pytest.mark.parametrize("depth", [254, 300, 600, 1000])
def test_free_form_values_nested_up_to_1000_levels_are_counted_and_returned(depth):
    counted = call("context::count-tokens", loads(deep_body(depth)))
    assert counted["tokens"] == len(deep_message(depth)) // 4
    pruned = call("context::prune", loads(deep_body(depth)))
    # Returned as plain nested dicts, exactly as sent (deeper than orjson or json.dumps write).
    arguments = pruned["messages"][0]["content"][0]["arguments"]
    for _ in range(depth):
        assert type(arguments) is dict and list(arguments) == ["a"]
        arguments = arguments["a"]
    assert type(arguments) is int and arguments == 1
    assert dumps_wire({**pruned, "messages": []}) == (
        b'{"messages":[],"pruned_parts":0,"pruned_tokens":0,"scanned_parts":0}')


@pytest.mark.parametrize("function_id", PUBLIC)
def test_free_form_values_nested_deeper_than_1000_levels_are_a_serialization_error(function_id):
    with pytest.raises(CallError) as caught:
        call(function_id, loads(deep_body(1001)))
    assert caught.value.message == (
        "serialization error: recursion limit exceeded: nested deeper than 1000 levels")


def test_a_python_value_nested_5000_deep_is_a_serialization_error():
    value: object = 1
    for _ in range(5000):
        value = {"a": value}
    message = {"role": "assistant", "content": [{"type": "function_call", "id": "c",
                                                 "function_id": "f", "arguments": value}],
               "stop_reason": "end", "model": "m", "provider": "p", "timestamp": 1}
    with pytest.raises(CallError) as caught:
        call("context::count-tokens", {"messages": [message], "model": INLINE})
    assert caught.value.message == (
        "serialization error: recursion limit exceeded: nested deeper than 1000 levels")


def test_the_command_answers_deep_arguments_on_stdout(tmp_path: Path):
    source = tmp_path / "deep.json"
    source.write_bytes(deep_body(300))
    done = subprocess.run([sys.executable, "-m", "context_manager", "call", "context::prune",
                           "--input", str(source)], capture_output=True, timeout=60,
                          env={**os.environ, "LOG_LEVEL": "error"})
    assert done.returncode == 0
    assert done.stderr == b""
    assert f'"arguments":{deep(300)}'.encode() in done.stdout


@pytest.mark.parametrize("function_id", PUBLIC)
def test_a_lone_surrogate_from_a_python_caller_is_a_serialization_error(function_id):
    payload = {"messages": [{"role": "user", "content": [{"type": "text", "text": "a\ud800b"}],
                             "timestamp": 1}], "model": INLINE}
    with pytest.raises(CallError) as caught:
        call(function_id, payload)
    assert caught.value.code == "invocation_failed"
    assert caught.value.message == "serialization error: str is not valid UTF-8: surrogates not allowed"


def test_the_assembled_total_saturates_at_the_largest_64_bit_count():
    payload = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}],
                             "timestamp": 1}], "model": INLINE,
               "options": {"request_overhead_tokens": 2**64 - 1}}
    with pytest.raises(CallError) as caught:
        call("context::assemble", payload)
    assert caught.value.message == ("handler error: context/overflow: assembled context requires "
                                    "18446744073709551615 tokens but usable budget is 3200")


# --- the cross-call message memo -----------------------------------------------------------------


def worker_turns(payloads: list[dict], memo: MessageMemo | None) -> list[bytes]:
    """``context::prune`` answers to ``payloads`` sent in turn to one worker: each request parsed
    from its JSON text, as the worker does, with ``memo`` carried from call to call."""
    answers = []
    for payload in payloads:
        ctx = HandlerContext(memo=memo, payload_from_json=True)
        answers.append(dumps_wire(run_handler("context::prune", loads(orjson.dumps(payload)), ctx)))
    return answers


def calling(arguments: object) -> dict:
    return {"messages": [{"role": "assistant", "stop_reason": "function_call", "model": "m", "provider": "p",
                          "timestamp": 3, "content": [{"type": "function_call", "id": "c1", "function_id": "f",
                                                       "arguments": arguments}]}]}


def detailing(details: object) -> dict:
    return {"messages": [{"role": "function_result", "function_call_id": "c1", "function_id": "f", "timestamp": 3,
                          "content": [{"type": "text", "text": "t"}], "details": details, "is_error": False}]}


def costing(cost: float) -> dict:
    return {"messages": [{"role": "assistant", "stop_reason": "end", "model": "m", "provider": "p", "timestamp": 3,
                          "usage": {"input": 1, "cost_usd": cost}, "content": [{"type": "text", "text": "t"}]}]}


PRUNED_NOTHING = b',"pruned_parts":0,"pruned_tokens":0,"scanned_parts":0}'


def called(arguments: bytes) -> bytes:
    return (b'{"messages":[{"content":[{"arguments":' + arguments + b',"function_id":"f","id":"c1",'
            b'"type":"function_call"}],"model":"m","provider":"p","role":"assistant",'
            b'"stop_reason":"function_call","timestamp":3}]' + PRUNED_NOTHING)


def detailed(details: bytes) -> bytes:
    return (b'{"messages":[{"content":[{"text":"t","type":"text"}],"details":' + details
            + b',"function_call_id":"c1","function_id":"f","is_error":false,"role":"function_result","timestamp":3}]'
            + PRUNED_NOTHING)


def cost(text: bytes) -> bytes:
    return (b'{"messages":[{"content":[{"text":"t","type":"text"}],"model":"m","provider":"p",'
            b'"role":"assistant","stop_reason":"end","timestamp":3,"usage":{"cost_usd":' + text
            + b',"input":1}}]' + PRUNED_NOTHING)


@pytest.mark.parametrize("remembered, sent, expected", [
    (calling({"x": -0.0}), calling({"x": 0.0}), called(b'{"x":0.0}')),
    (calling({"x": 0.0}), calling({"x": -0.0}), called(b'{"x":-0.0}')),
    (calling({"a": [1, -0.0]}), calling({"a": [1, 0.0]}), called(b'{"a":[1,0.0]}')),
    (calling({"a": {"b": [{"c": 0.0}]}}), calling({"a": {"b": [{"c": -0.0}]}}), called(b'{"a":{"b":[{"c":-0.0}]}}')),
    (calling([-0.0]), calling([0.0]), called(b"[0.0]")),
    (detailing({"exit": -0.0}), detailing({"exit": 0.0}), detailed(b'{"exit":0.0}')),
    (detailing([0.0]), detailing([-0.0]), detailed(b"[-0.0]")),
    (costing(-0.0), costing(0.0), cost(b"0.0")),
    (costing(0.0), costing(-0.0), cost(b"-0.0")),
])
def test_a_remembered_zero_never_answers_for_the_zero_of_the_other_sign(remembered, sent, expected):
    # Seen, remembered, then the same message with the other zero: `-0.0 == 0.0` in Python,
    # but not in JSON.
    assert worker_turns([remembered, remembered, sent], MessageMemo())[2] == expected
    assert worker_turns([sent], None) == [expected]


def inline_result(**flag: bool) -> dict:
    return {"messages": [{"role": "user", "timestamp": 1, "content": [
        {"type": "function_result", "function_call_id": "c1", "content": [{"type": "text", "text": "ok"}], **flag}]}]}


def inline_answer(flag: bytes) -> bytes:
    return (b'{"messages":[{"content":[{"content":[{"text":"ok","type":"text"}],"function_call_id":"c1",'
            + flag + b'"type":"function_result"}],"role":"user","timestamp":1}]' + PRUNED_NOTHING)


@pytest.mark.parametrize("remembered, sent, expected", [
    # Left out, an inline result's `is_error` stays out: only a function_result message fills it in.
    (inline_result(is_error=False), inline_result(), inline_answer(b"")),
    (inline_result(), inline_result(is_error=False), inline_answer(b'"is_error":false,')),
    (inline_result(is_error=True), inline_result(), inline_answer(b"")),
])
def test_a_remembered_inline_result_answers_only_for_its_own_spelling_of_is_error(remembered, sent, expected):
    assert worker_turns([remembered, remembered, sent], MessageMemo())[2] == expected
    assert worker_turns([sent], None) == [expected]
