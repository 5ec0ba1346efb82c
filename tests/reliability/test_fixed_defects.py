"""Defects the malformed-input corpus found, pinned with their exact outcomes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from context_manager import CallError, call
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
