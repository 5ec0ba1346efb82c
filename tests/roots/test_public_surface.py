"""The package root exports what `call()` and `acall()` take and raise, and nothing else."""

from __future__ import annotations

import json

import pytest

import context_manager
from context_manager import DEFAULT_CONFIG, CallError, ConfigError, WorkerConfig, call


def test_the_root_exports_exactly_the_call_surface():
    assert sorted(context_manager.__all__) == sorted([
        "DEFAULT_CONFIG", "AsyncSummarizer", "CallError", "ConfigError", "Error", "SyncSummarizer",
        "UnknownFunction", "WorkerConfig", "__version__", "acall", "call",
    ])
    for name in context_manager.__all__:
        assert hasattr(context_manager, name), name


def test_call_takes_the_exported_config_record():
    payload = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 1}],
               "model": {"id": "m", "limits": {"context_window": 1000, "max_output_tokens": 100}}}
    record = WorkerConfig(tail_turns=3)
    assert record.tail_turns == 3 and DEFAULT_CONFIG.tail_turns == 2
    answer = call("context::count-tokens", payload, config=record)
    assert json.loads(json.dumps(answer)) == {
        "tokens": 18,
        "by_role": {"user": 18, "assistant": 0, "function_result": 0, "custom": 0},
        "estimator": "heuristic",
    }


def test_a_config_that_does_not_validate_raises_the_exported_config_error():
    with pytest.raises(ConfigError):
        call("context::count-tokens", {}, config={"tail_turns": "three"})
    assert issubclass(ConfigError, ValueError)
    assert issubclass(CallError, Exception)
