"""The router summariser: `router::chat` streaming through an engine channel (spec 03 §3.7)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from context_manager.adapters.router_summarizer import RouterSummarizer, binary_lines, fold_frames
from context_manager.engine.client import Backoff, EngineClient, invoke_callable, worker_metadata
from context_manager.ports import (
    InvokeError,
    SummarizerConversation,
    SummarizerEmpty,
    SummarizeRequest,
    SummarizerFailed,
    SummarizerUnavailable,
)
from testengine import FakeRouter, TestEngine, assistant, stream_for
from testengine.fake_router import RouterCallError

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REQUEST = SummarizeRequest(
    system_prompt="Summarise the conversation.",
    user_prompt="Please summarise the test run.",
    model="test-model",
    provider="fake",
)
NOW = 1767225600000


@pytest.fixture
def router() -> FakeRouter:
    return FakeRouter()


@pytest.fixture
def engine(router: FakeRouter) -> Any:
    engine = TestEngine(router=router).start()
    yield engine
    engine.stop()


@asynccontextmanager
async def summarizer(engine: TestEngine, timeout_ms: int = 5000, drain_ms: int = 2000) -> AsyncIterator[RouterSummarizer]:
    client = EngineClient(engine.url, worker_metadata("summariser-test", "0.1.0"), backoff=Backoff(50, 2.0, 400, 0.0))
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.run)
        await client.wait_connected()
        try:
            yield RouterSummarizer(
                invoke_callable(client), engine.url, lambda: timeout_ms, now_ms=lambda: NOW, drain_ms=drain_ms
            )
        finally:
            await client.close()


def ok(model: str = "test-model") -> dict[str, Any]:
    return {"ok": True, "provider": "fake", "model": model, "stop_reason": "end"}


def script(frames: list[str | bytes], result: Any) -> Any:
    async def run(data: Any) -> Any:
        return frames, result

    return run


async def test_summary_streams_through_the_channel(engine: TestEngine, router: FakeRouter) -> None:
    with anyio.fail_after(10):
        async with summarizer(engine) as s:
            assert await s.summarize(REQUEST) == "Summary: all tests pass."
    [call] = router.chat_calls
    writer = call.pop("writer_ref")
    assert writer["direction"] == "write" and set(writer) == {"channel_id", "access_key", "direction"}
    assert call == {
        "model": "test-model",
        "provider": "fake",
        "system_prompt": "Summarise the conversation.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Please summarise the test run."}], "timestamp": NOW}
        ],
        "tools": [],
    }
    created = [data for fid, data in engine.calls if fid == "engine::channels::create"]
    assert created == [{"buffer_size": None}]


async def test_a_request_in_conversation_form_sends_that_conversation_then_the_instructions(
        engine: TestEngine, router: FakeRouter) -> None:
    head = ({"role": "user", "content": [{"type": "text", "text": "fix the parser"}], "timestamp": 1},
            {"role": "assistant", "content": [{"type": "text", "text": "reading it"}], "stop_reason": "end",
             "model": "test-model", "provider": "fake", "timestamp": 2})
    tool = {"name": "read_file", "description": "Read a file", "parameters": {"type": "object"}}
    request = SummarizeRequest(
        "Summarise the conversation.", "Please summarise the test run.", "test-model", "fake",
        conversation=SummarizerConversation("You are a coder.", head, (tool,), "Summarise the above."))
    with anyio.fail_after(10):
        async with summarizer(engine) as s:
            assert await s.summarize(request) == "Summary: all tests pass."
    [call] = router.chat_calls
    call.pop("writer_ref")
    # The rendered form is not sent: the router gets the conversation as the model read it.
    assert call == {
        "model": "test-model",
        "provider": "fake",
        "system_prompt": "You are a coder.",
        "messages": [*head, {"role": "user", "content": [{"type": "text", "text": "Summarise the above."}],
                             "timestamp": NOW}],
        "tools": [tool],
    }


async def test_provider_is_left_out_when_unknown(engine: TestEngine, router: FakeRouter) -> None:
    with anyio.fail_after(10):
        async with summarizer(engine) as s:
            await s.summarize(SummarizeRequest("sys", "user", "m1"))
    assert "provider" not in router.chat_calls[0]
    assert router.chat_calls[0]["model"] == "m1"


async def test_frames_written_after_the_reply_are_drained(engine: TestEngine, router: FakeRouter) -> None:
    router.write_after_reply_s = 0.3
    with anyio.fail_after(10):
        async with summarizer(engine) as s:
            assert await s.summarize(REQUEST) == "Summary: all tests pass."


async def test_drain_stops_at_the_grace_period_keeping_text_frames(engine: TestEngine, router: FakeRouter) -> None:
    router.hold_open_s = 5
    router.chat_script = script([*stream_for("abcdef")[:3], b'{"type":"text_delta","delta":"binary"}\n'], ok())
    with anyio.fail_after(10):
        async with summarizer(engine, drain_ms=300) as s:
            started = anyio.current_time()
            # The binary bytes are dropped because the stream never ended in time.
            assert await s.summarize(REQUEST) == "abcdef"
            assert anyio.current_time() - started < 2


async def test_router_absent_is_unavailable(engine: TestEngine) -> None:
    engine.router = None
    with anyio.fail_after(10):
        async with summarizer(engine, drain_ms=200) as s:
            with pytest.raises(SummarizerUnavailable) as info:
                await s.summarize(REQUEST)
    assert str(info.value) == (
        "summariser unavailable: remote error (function_not_found): "
        "Function router::chat not found in namespace default."
    )


async def test_router_error_is_a_failure(engine: TestEngine, router: FakeRouter) -> None:
    async def refuse(data: Any) -> Any:
        raise RouterCallError("router/no_provider_for_model", "no provider serves m")

    router.chat_script = refuse
    with anyio.fail_after(10):
        async with summarizer(engine, drain_ms=200) as s:
            with pytest.raises(SummarizerFailed) as info:
                await s.summarize(REQUEST)
    assert info.value.detail == "remote error (router/no_provider_for_model): no provider serves m"


async def test_ok_false_carries_the_error_json(engine: TestEngine, router: FakeRouter) -> None:
    router.chat_script = script(
        [json.dumps({"type": "error", "error": assistant("boom")})],
        {"ok": False, "provider": "fake", "model": "m", "error": {"code": "x", "message": "y"}},
    )
    with anyio.fail_after(10):
        async with summarizer(engine) as s:
            with pytest.raises(SummarizerFailed) as info:
                await s.summarize(REQUEST)
    assert str(info.value) == 'summariser failed: {"code":"x","message":"y"}'


async def test_ok_false_without_error(engine: TestEngine, router: FakeRouter) -> None:
    router.chat_script = script([json.dumps({"type": "done", "message": assistant("x")})], {"ok": False})
    with anyio.fail_after(10):
        async with summarizer(engine) as s:
            with pytest.raises(SummarizerFailed) as info:
                await s.summarize(REQUEST)
    assert info.value.detail == "unknown router error"


async def test_stream_error_frame_fails_even_after_done(engine: TestEngine, router: FakeRouter) -> None:
    router.chat_script = script(
        [
            json.dumps({"type": "done", "message": assistant("fine")}),
            json.dumps({"type": "error", "error": assistant("rate limited")}),
        ],
        ok(),
    )
    with anyio.fail_after(10):
        async with summarizer(engine) as s:
            with pytest.raises(SummarizerFailed) as info:
                await s.summarize(REQUEST)
    assert info.value.detail == "summariser stream error: rate limited"


async def test_text_and_binary_frames_are_both_read(engine: TestEngine, router: FakeRouter) -> None:
    router.chat_script = script(
        [
            json.dumps({"type": "text_delta", "delta": "Hel"}),
            b'{"type":"text_delta","delta":"lo, "}\r\n{"type":"text_del',
            b'ta","delta":"world"}\n',
        ],
        ok(),
    )
    with anyio.fail_after(10):
        async with summarizer(engine) as s:
            assert await s.summarize(REQUEST) == "Hello, world"


async def test_empty_stream_is_empty(engine: TestEngine, router: FakeRouter) -> None:
    router.chat_script = script([json.dumps({"type": "ping"})], ok())
    with anyio.fail_after(10):
        async with summarizer(engine) as s:
            with pytest.raises(SummarizerEmpty):
                await s.summarize(REQUEST)


async def test_client_timeout_is_read_at_each_call(engine: TestEngine, router: FakeRouter) -> None:
    router.chat_delay_s = 0.5
    timeouts = iter([100, 3000])
    with anyio.fail_after(10):
        async with summarizer(engine, drain_ms=200) as s:
            s._timeout_ms = lambda: next(timeouts)
            with pytest.raises(SummarizerFailed) as info:
                await s.summarize(REQUEST)
            assert info.value.detail == "remote error (TIMEOUT): invocation timed out after 100ms"
            assert await s.summarize(REQUEST) == "Summary: all tests pass."


async def test_channel_creation_failure_is_unavailable() -> None:
    async def invoke(function_id: str, payload: Any, timeout_ms: int) -> Any:
        assert (function_id, payload, timeout_ms) == ("engine::channels::create", {"buffer_size": None}, 30000)
        raise InvokeError("remote error (channel_send_failed): closed")

    s = RouterSummarizer(invoke, "ws://127.0.0.1:1", lambda: 1000)
    with anyio.fail_after(5):
        with pytest.raises(SummarizerUnavailable) as info:
            await s.summarize(REQUEST)
    assert info.value.detail == "create_channel failed: remote error (channel_send_failed): closed"


# ---------------------------------------------------------------- folding


def test_fold_follows_the_worked_example() -> None:
    assert fold_frames(stream_for("Summary: all tests pass.")) == "Summary: all tests pass."


def test_fold_prefers_done_text_and_joins_text_blocks() -> None:
    message = {"content": [{"type": "text", "text": "a"}, {"type": "thinking", "text": "x"}, {"type": "text", "text": "b"}]}
    frames = [
        json.dumps({"type": "text_delta", "delta": "ignored"}),
        "not json",
        json.dumps(["no"]),
        json.dumps({"type": 5}),
        json.dumps({"type": "done", "message": {"content": []}}),
        json.dumps({"type": "done", "message": message}),
    ]
    assert fold_frames(frames) == "a\nb"


def test_fold_uses_deltas_when_done_is_empty() -> None:
    frames = [
        json.dumps({"type": "text_delta", "delta": "x"}),
        json.dumps({"type": "text_delta", "delta": 3}),
        json.dumps({"type": "text_delta", "delta": "y"}),
        json.dumps({"type": "done", "message": {"content": [{"type": "text", "text": ""}]}}),
    ]
    assert fold_frames(frames) == "xy"


def test_fold_stop_error() -> None:
    with pytest.raises(SummarizerFailed) as info:
        fold_frames([json.dumps({"type": "stop", "stop_reason": "error", "error_message": "quota"})])
    assert info.value.detail == "summariser stream error: quota"
    with pytest.raises(SummarizerFailed) as info:
        fold_frames([json.dumps({"type": "stop", "stop_reason": "error"})])
    assert info.value.detail == "summariser stream error: unknown provider error"
    assert fold_frames([json.dumps({"type": "stop", "stop_reason": "end"})]) == ""


def test_binary_lines_split_on_newline_only() -> None:
    assert binary_lines(b"") == []
    assert binary_lines(b"a\r\nb\n") == ["a", "b"]
    assert binary_lines(b"a\n\nb") == ["a", "", "b"]
    assert binary_lines("x\u2028y\n".encode()) == ["x\u2028y"]
    assert binary_lines(b"\xffz") == ["\ufffdz"]
