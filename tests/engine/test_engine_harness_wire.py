"""Frame text of the test engine: orjson, with the standard library for what orjson refuses."""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest

from context_manager.engine.client import Backoff, EngineClient, worker_metadata
from testengine import CallFailed, TestEngine
from testengine.wire import decode, encode


def test_encode_is_compact_utf8() -> None:
    assert encode({"a": [1, 2.5, "\u00e9"], "b": None}) == '{"a":[1,2.5,"\u00e9"],"b":null}'.encode()


def test_encode_falls_back_for_what_orjson_refuses() -> None:
    assert encode({"n": 2**70}) == b'{"n": 1180591620717411303424}'
    assert encode({1: "x"}) == b'{"1": "x"}'


def test_encode_writes_non_finite_floats_as_null_like_the_engine() -> None:
    assert encode([math.nan, math.inf]) == b"[null,null]"


def test_decode_falls_back_for_hand_written_frames() -> None:
    assert decode(b'{"type":"x","n":1}') == {"type": "x", "n": 1}
    assert decode('{"n": 18446744073709551616}') == {"n": 18446744073709551616}
    assert math.isnan(decode(b"[NaN]")[0])
    assert decode('"\\ud800"') == "\ud800"
    with pytest.raises(ValueError):
        decode(b"{nope")
    with pytest.raises(ValueError):
        decode(b'"\xff"')


async def test_calls_from_the_engine_loop_and_recorded_results(anyio_backend: str) -> None:
    engine = TestEngine().start()
    client = EngineClient(engine.url, worker_metadata("toy", "0.1.0"), backoff=Backoff(initial_ms=10))

    async def echo(data: Any) -> Any:
        return {"echo": data}

    async def refuse(data: Any) -> Any:
        raise ValueError("no")

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.run)
            with anyio.fail_after(10):
                await client.wait_connected()
                await client.register_function("toy::echo", echo)
                await client.register_function("toy::refuse", refuse)
                await anyio.to_thread.run_sync(lambda: engine.wait_for_functions({"toy::echo", "toy::refuse"}))
                got = await anyio.to_thread.run_sync(
                    lambda: engine.run(lambda: engine.call_async("toy::echo", {"x": "\u00e9"}))
                )
                assert got == {"echo": {"x": "\u00e9"}}
                with pytest.raises(CallFailed) as info:
                    await anyio.to_thread.run_sync(lambda: engine.run(lambda: engine.call_async("toy::refuse", 1)))
                assert info.value.code == "invocation_failed"
            await client.close()
    finally:
        engine.stop()
    results = [f for _, f in engine.received if f["type"] == "invocationresult"]
    assert [sorted(f) for f in results] == [
        ["function_id", "invocation_id", "type"],
        ["error", "function_id", "invocation_id", "type"],
    ]


async def test_the_client_ignores_a_text_frame_that_is_not_utf8(anyio_backend: str) -> None:
    engine = TestEngine().start()
    client = EngineClient(engine.url, worker_metadata("toy", "0.1.0"), backoff=Backoff(initial_ms=10))

    async def echo(data: Any) -> Any:
        return data

    async def send_invalid() -> None:
        target = engine.functions["toy::echo"]
        await target.ws.send(b'{"type":"ping","x":"\xff"}', text=True)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.run)
            with anyio.fail_after(10):
                await client.wait_connected()
                await client.register_function("toy::echo", echo)
                await anyio.to_thread.run_sync(lambda: engine.wait_for_functions({"toy::echo"}))
                await anyio.to_thread.run_sync(lambda: engine.run(send_invalid))
                assert await anyio.to_thread.run_sync(lambda: engine.call("toy::echo", [1])) == [1]
            assert client.connections == 1
            await client.close()
    finally:
        engine.stop()
