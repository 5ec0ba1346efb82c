"""Reproductions of defects found by the reliability work, in code owned elsewhere.

Every test here FAILS today and passes once its defect is fixed. The file is deliberately not
named ``test_*.py``: the committed suite stays green while the reproductions stay runnable:

    python -m pytest tests/reliability/known_bugs.py

When a defect is fixed, move its test into the suite and drop its ids from
``corpus.KNOWN_BUG_CASES``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from context_manager import CallError, call
from context_manager.core.codec import dumps_wire, loads

from .corpus import ERROR_PREFIXES

INLINE = {"id": "m", "limits": {"context_window": 4000, "max_output_tokens": 400}}


def deep_arguments_body(depth: int) -> bytes:
    deep = b'{"a":' * depth + b"1" + b"}" * depth
    return (b'{"messages":[{"role":"assistant","content":[{"type":"function_call","id":"c",'
            b'"function_id":"f","arguments":' + deep + b'}],"stop_reason":"end","model":"m",'
            b'"provider":"p","timestamp":1}],"model":{"id":"m"}}')


def clean(function_id: str, payload: object) -> str | None:
    """``None`` when the call answers (with a response that can be sent) or fails cleanly;
    else what went wrong."""
    try:
        response = call(function_id, payload)
    except CallError as exc:
        return None if exc.message.startswith(ERROR_PREFIXES) else exc.message
    try:
        dumps_wire(response)
    except Exception as exc:  # an answer no caller could receive
        return f"response cannot be written: {exc}"
    return None


# ------------------------------------------------------------- 1. nesting between 254 and 1,000

@pytest.mark.parametrize("function_id", ["context::count-tokens", "context::prune",
                                         "context::assemble", "context::compact"])
@pytest.mark.parametrize("depth", [300, 600, 900])
def test_bug_free_form_nesting_under_the_1000_level_limit_is_an_internal_error(
        function_id: str, depth: int) -> None:
    """Decision: JSON deeper than 1,000 levels is a serialization error; shallower is accepted.
    Today ~254+ levels fail in ``orjson.dumps`` (its own recursion limit) and ~500+ in the
    recursive free-form canonicalisation, both as ``internal error: ...``."""
    assert clean(function_id, loads(deep_arguments_body(depth))) is None


def test_bug_command_line_prints_a_traceback_for_deep_arguments(tmp_path: Path) -> None:
    """`call context::prune` decodes 300-level arguments, then ``dumps_wire`` of the response
    raises outside the CLI's error handling: a raw traceback on stderr, not one JSON line."""
    source = tmp_path / "deep.json"
    source.write_bytes(deep_arguments_body(300))
    done = subprocess.run([sys.executable, "-m", "context_manager", "call", "context::prune",
                           "--input", str(source)], capture_output=True, timeout=60,
                          env={**os.environ, "LOG_LEVEL": "error"})
    assert b"Traceback" not in done.stderr
    envelope = json.loads(done.stderr.decode().splitlines()[-1])
    assert envelope["message"].startswith(ERROR_PREFIXES)


# ------------------------------------------------------------- 2. library values

def test_bug_library_value_nested_5000_deep_is_an_internal_error() -> None:
    value: object = 1
    for _ in range(5000):
        value = {"a": value}
    message = {"role": "assistant", "content": [{"type": "function_call", "id": "c",
                                                 "function_id": "f", "arguments": value}],
               "stop_reason": "end", "model": "m", "provider": "p", "timestamp": 1}
    assert clean("context::count-tokens", {"messages": [message], "model": INLINE}) is None


@pytest.mark.parametrize("function_id", ["context::count-tokens", "context::prune"])
def test_bug_library_lone_surrogate_is_not_a_serialization_error(function_id: str) -> None:
    """Decision: lone surrogates are a serialization error. Through ``call`` with a Python
    value, count-tokens fails with ``internal error: str is not valid UTF-8`` and prune answers,
    echoing the surrogate (its response cannot be written as JSON)."""
    payload = {"messages": [{"role": "user", "content": [{"type": "text", "text": "a\ud800b"}],
                             "timestamp": 1}], "model": INLINE}
    with pytest.raises(CallError) as caught:
        call(function_id, payload)
    assert caught.value.message.startswith("serialization error: ")


# ------------------------------------------------------------- 3. saturation of the total

def test_bug_overflow_total_is_not_saturated_at_u64_max() -> None:
    """Spec 01 §5.2 / 02 §1: sums are unsigned 64-bit and saturate. With
    ``request_overhead_tokens = 2^64-1`` the overflow error reports 18446744073709551752."""
    payload = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}],
                             "timestamp": 1}], "model": INLINE,
               "options": {"request_overhead_tokens": 2**64 - 1}}
    with pytest.raises(CallError) as caught:
        call("context::assemble", payload)
    assert caught.value.message == ("handler error: context/overflow: assembled context requires "
                                    "18446744073709551615 tokens but usable budget is 3200")


# ------------------------------------------------------------- 4. tracebacks over the bus

def test_bug_engine_caller_receives_a_python_traceback(tmp_path: Path) -> None:
    """Any unexpected exception in a handler (here the deep-nesting defect) is answered with
    an error body carrying ``stacktrace``: the worker's Python traceback, source paths
    included, reaches the calling worker. The prune case also shows the raw orjson text
    (``Recursion limit reached``) without the ``internal error:`` prefix."""
    from .engine_support import invoke_raw, worker_on_engine

    body = deep_arguments_body(300).decode()
    with worker_on_engine(tmp_path) as (engine, process):
        for function_id in ("context::count-tokens", "context::prune"):
            reply = invoke_raw(engine, function_id, body)
            assert "stacktrace" not in reply.get("error", {}), function_id
