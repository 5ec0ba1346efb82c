"""Interop with the official Python client (PyPI `iii-sdk`): it serves a fake `router::chat`
and calls the worker's functions through the test engine."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from iii import InitOptions, InvocationError, register_worker

from testengine import TestEngine, WorkerProcess, stream_for

pytestmark = pytest.mark.slow  # each test starts the worker as a process

HELLO = [{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}]
INLINE = {"id": "m1", "limits": {"context_window": 1000, "max_output_tokens": 100}}


@pytest.fixture
def worker(engine: TestEngine, tmp_path: Path) -> Iterator[WorkerProcess]:
    process = WorkerProcess(engine.url, env={"III_COMPOSE_DIR": str(tmp_path)}, cwd=tmp_path)
    try:
        engine.wait_for_functions({"context::assemble", "context::compact"}, timeout=20)
        yield process
    finally:
        process.kill()


@pytest.fixture
def sdk(engine: TestEngine) -> Iterator[Any]:
    client = register_worker(
        engine.url,
        InitOptions(
            worker_name="fake-llm-router",
            otel={"enabled": False},
            enable_metrics_reporting=False,
            invocation_timeout_ms=20_000,
        ),
    )
    try:
        yield client
    finally:
        client.shutdown()


def register_chat(sdk: Any, engine: TestEngine, seen: list[Any]) -> None:
    async def chat(data: Any) -> Any:
        writer = data["writer_ref"]  # hydrated into a ChannelWriter by the SDK
        seen.append({k: v for k, v in data.items() if k != "writer_ref"})
        for frame in stream_for("Summary from the SDK router.", data["model"]):
            await writer.send_message_async(frame)
        await writer.close_async()
        return {"ok": True, "provider": "fake", "model": data["model"], "stop_reason": "end"}

    sdk.register_function("router::chat", chat)
    engine.wait_for_functions({"router::chat"}, timeout=10)


def test_sdk_calls_assemble_and_gets_domain_errors(engine: TestEngine, worker: WorkerProcess, sdk: Any) -> None:
    result = sdk.trigger({"function_id": "context::assemble", "payload": {"messages": HELLO, "model": INLINE}, "timeout_ms": 10_000})
    assert (result["token_count"], result["usable"], result["model_resolved"]) == (17, 800, "inline")
    with pytest.raises(InvocationError) as info:
        sdk.trigger({"function_id": "context::assemble", "payload": {"model": INLINE}, "timeout_ms": 10_000})
    assert info.value.code == "invocation_failed"
    assert info.value.message == "handler error: context/invalid_request: messages is required"


def test_sdk_router_streams_a_compaction_summary(engine: TestEngine, worker: WorkerProcess, sdk: Any) -> None:
    seen: list[Any] = []
    register_chat(sdk, engine, seen)
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "first question " * 40}], "timestamp": 1},
        {"role": "assistant", "content": [{"type": "text", "text": "first answer " * 40}], "stop_reason": "end", "model": "m", "provider": "p", "timestamp": 2},
        {"role": "user", "content": [{"type": "text", "text": "second question"}], "timestamp": 3},
    ]
    result = sdk.trigger(
        {
            "function_id": "context::compact",
            "payload": {
                "messages": messages,
                "model": {"id": "test-model", "limits": {"context_window": 100000, "max_output_tokens": 1000}},
                "options": {"tail_turns": 1, "preserve_recent_tokens": 10},
            },
            "timeout_ms": 20_000,
        }
    )
    assert result["status"] == "ok"
    assert result["summary"] == "Summary from the SDK router."
    assert result["tail_start_index"] == 2
    [call] = seen
    assert call["model"] == "test-model" and call["tools"] == []
    assert "provider" not in call
    assert json.dumps(call["messages"][0]["content"][0]["type"]) == '"text"'
