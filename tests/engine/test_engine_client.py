"""The engine client against the in-process test engine, with toy functions."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from context_manager.engine.client import (
    Backoff,
    EngineClient,
    RegistrationRejected,
    RemoteError,
    worker_metadata,
)
from context_manager.wire.errors import HandlerError
from testengine import CallFailed, TestEngine

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FAST = Backoff(initial_ms=50, max_ms=400, jitter=0.0)


@asynccontextmanager
async def running(engine: TestEngine, name: str = "toy") -> AsyncIterator[EngineClient]:
    client = EngineClient(engine.url, worker_metadata(name, "0.1.0"), backoff=FAST)
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.run)
        with anyio.fail_after(5):
            await client.wait_connected()
        try:
            yield client
        finally:
            await client.close()


async def engine_call(engine: TestEngine, function_id: str, data: Any, **kw: Any) -> Any:
    return await anyio.to_thread.run_sync(lambda: engine.call(function_id, data, **kw))


async def wait_functions(engine: TestEngine, *ids: str) -> None:
    await anyio.to_thread.run_sync(lambda: engine.wait_for_functions(set(ids)))


async def echo(data: Any) -> Any:
    return {"echo": data}


async def test_registered_function_is_served_through_the_engine(engine: TestEngine) -> None:
    with anyio.fail_after(10):
        async with running(engine) as client:
            await client.register_function("toy::echo", echo, description="echo")
            await wait_functions(engine, "toy::echo")
            assert await engine_call(engine, "toy::echo", {"a": 1}) == {"echo": {"a": 1}}


async def test_metadata_is_sent_after_the_registrations(engine: TestEngine) -> None:
    with anyio.fail_after(10):
        async with running(engine) as client:
            await client.register_function("toy::echo", echo)
            await wait_functions(engine, "toy::echo")
            # The metadata frame follows the registrations: the engine may hold the functions a
            # moment before it holds the worker's name.
            while "name" not in engine.workers()[0]:
                await anyio.sleep(0.01)
            [worker] = engine.workers()
            assert worker["name"] == "toy"
            assert worker["runtime"] == "python"
            assert worker["version"] == "0.1.0"
            assert isinstance(worker["pid"], int)


async def test_workers_call_each_other_and_see_the_caller_id(engine: TestEngine) -> None:
    seen: list[Any] = []

    async def record(data: Any) -> Any:
        seen.append(data)
        return {"n": data["n"] + 1}

    with anyio.fail_after(10):
        async with running(engine, "target") as target, running(engine, "caller") as caller:
            await target.register_function("toy::inc", record)
            await wait_functions(engine, "toy::inc")
            assert await caller.invoke("toy::inc", {"n": 41}, timeout_ms=5000) == {"n": 42}
            assert seen == [{"n": 41, "_caller_worker_id": caller.worker_id}]


async def test_unknown_function_is_a_clean_remote_error(engine: TestEngine) -> None:
    with anyio.fail_after(10):
        async with running(engine) as client:
            with pytest.raises(RemoteError) as info:
                await client.invoke("nobody::home", {}, timeout_ms=5000)
    assert info.value.code == "function_not_found"
    assert str(info.value) == (
        "remote error (function_not_found): Function nobody::home not found in namespace default."
    )


async def test_a_function_the_worker_does_not_serve_gets_function_not_found(engine: TestEngine) -> None:
    with anyio.fail_after(10):
        async with running(engine) as client:
            await client.register_function("toy::echo", echo)
            await wait_functions(engine, "toy::echo")
            with pytest.raises(CallFailed) as info:
                await engine_call(engine, "toy::missing", {}, via="toy::echo")
    assert (info.value.code, info.value.message) == ("function_not_found", "Function 'toy::missing' not found")


async def test_handler_failures_become_error_envelopes(engine: TestEngine) -> None:
    async def boom(data: Any) -> Any:
        raise ValueError("b must be a number")

    async def domain(data: Any) -> Any:
        raise HandlerError("context/invalid_request", "messages is required")

    async def unencodable(data: Any) -> Any:
        return {"x": {1, 2}}

    with anyio.fail_after(10):
        async with running(engine) as client:
            await client.register_function("toy::boom", boom)
            await client.register_function("toy::domain", domain)
            await client.register_function("toy::set", unencodable)
            await wait_functions(engine, "toy::boom", "toy::domain", "toy::set")
            with pytest.raises(RemoteError) as info:
                await client.invoke("toy::boom", {}, timeout_ms=5000)
            assert (info.value.code, info.value.message) == ("invocation_failed", "internal error: b must be a number")
            with pytest.raises(RemoteError) as info:
                await client.invoke("toy::domain", {}, timeout_ms=5000)
            assert (info.value.code, info.value.message) == (
                "invocation_failed",
                "handler error: context/invalid_request: messages is required",
            )
            with pytest.raises(RemoteError) as info:
                await client.invoke("toy::set", {}, timeout_ms=5000)
            assert info.value.code == "invocation_failed"
            # The worker still serves after all of that.
            await client.register_function("toy::echo", echo)
            await wait_functions(engine, "toy::echo")
            assert await client.invoke("toy::echo", 7, timeout_ms=5000) == {"echo": 7}


async def test_unexpected_errors_answer_without_the_worker_traceback(engine: TestEngine) -> None:
    async def boom(data: Any) -> Any:
        raise RuntimeError("kaput")

    with anyio.fail_after(10):
        async with running(engine) as client:
            await client.register_function("toy::boom", boom)
            await wait_functions(engine, "toy::boom")
            invocation_id = str(uuid.uuid4())
            text = json.dumps(
                {"type": "invokefunction", "invocation_id": invocation_id, "function_id": "toy::boom", "data": {}}
            )
            body = await anyio.to_thread.run_sync(lambda: engine.call_raw("toy::boom", text, invocation_id))
    error = body["error"]
    assert error == {"code": "invocation_failed", "message": "internal error: kaput"}


async def test_malformed_frames_get_error_replies_and_the_worker_keeps_serving(engine: TestEngine) -> None:
    with anyio.fail_after(10):
        async with running(engine) as client:
            await client.register_function("toy::echo", echo)
            await wait_functions(engine, "toy::echo")
            await anyio.to_thread.run_sync(lambda: engine.send_to("toy::echo", "not json at all"))
            await anyio.to_thread.run_sync(lambda: engine.send_to("toy::echo", '["no", "type"]'))
            invocation_id = str(uuid.uuid4())
            # A lone surrogate breaks the codec's string rules.
            text = (
                '{"type":"invokefunction","invocation_id":"%s","function_id":"toy::echo","data":"\\ud800"}'
                % invocation_id
            )
            body = await anyio.to_thread.run_sync(lambda: engine.call_raw("toy::echo", text, invocation_id))
            assert body["error"]["code"] == "invocation_failed"
            assert body["error"]["message"].startswith("serialization error: ")
            assert await engine_call(engine, "toy::echo", [1]) == {"echo": [1]}


async def test_calls_are_served_concurrently(engine: TestEngine) -> None:
    order: list[str] = []
    release = anyio.Event()

    async def slow(data: Any) -> Any:
        await release.wait()
        order.append("slow")
        return "slow"

    async def fast(data: Any) -> Any:
        order.append("fast")
        release.set()
        return "fast"

    with anyio.fail_after(10):
        async with running(engine, "target") as target, running(engine, "caller") as caller:
            await target.register_function("toy::slow", slow)
            await target.register_function("toy::fast", fast)
            await wait_functions(engine, "toy::slow", "toy::fast")
            results: dict[str, Any] = {}

            async def call(fid: str) -> None:
                results[fid] = await caller.invoke(fid, {}, timeout_ms=5000)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "toy::slow")
                await anyio.sleep(0.05)
                tg.start_soon(call, "toy::fast")
    assert order == ["fast", "slow"]
    assert results == {"toy::slow": "slow", "toy::fast": "fast"}


async def test_timeouts_are_client_side(engine: TestEngine) -> None:
    async def never(data: Any) -> Any:
        await anyio.sleep(30)

    with anyio.fail_after(10):
        async with running(engine, "target") as target, running(engine, "caller") as caller:
            await target.register_function("toy::never", never)
            await wait_functions(engine, "toy::never")
            with pytest.raises(RemoteError) as info:
                await caller.invoke("toy::never", {}, timeout_ms=100)
    assert (info.value.code, info.value.message) == ("TIMEOUT", "invocation timed out after 100ms")


async def test_target_disconnect_stops_the_call(engine: TestEngine) -> None:
    started = anyio.Event()

    async def hang(data: Any) -> Any:
        started.set()
        await anyio.sleep(30)

    with anyio.fail_after(10):
        async with running(engine, "caller") as caller:
            async with running(engine, "target") as target:
                await target.register_function("toy::hang", hang)
                await wait_functions(engine, "toy::hang")
                async with anyio.create_task_group() as tg:
                    outcome: list[RemoteError] = []

                    async def call() -> None:
                        try:
                            await caller.invoke("toy::hang", {}, timeout_ms=5000)
                        except RemoteError as exc:
                            outcome.append(exc)

                    tg.start_soon(call)
                    await started.wait()
                    await target.close()
    assert [(e.code, e.message) for e in outcome] == [("invocation_stopped", "Invocation stopped")]


async def test_ping_is_answered_with_pong(engine: TestEngine) -> None:
    with anyio.fail_after(10):
        async with running(engine) as client:
            await client.register_function("toy::echo", echo)
            await wait_functions(engine, "toy::echo")
            await anyio.to_thread.run_sync(lambda: engine.send_to("toy::echo", {"type": "ping"}))
            while not any(frame["type"] == "pong" for _, frame in engine.received):
                await anyio.sleep(0.02)


async def test_engine_restart_replays_registrations(engine: TestEngine) -> None:
    with anyio.fail_after(15):
        async with running(engine) as client:
            await client.register_function("toy::echo", echo)
            trigger_id = await client.register_trigger("toy::tick", "toy::echo", {"every": 1})
            await wait_functions(engine, "toy::echo")
            # Let the first connection settle: binding stored, our id known.
            while not engine.bindings or client.worker_id is None:
                await anyio.sleep(0.01)
            old_id = client.worker_id
            engine.received.clear()
            await anyio.to_thread.run_sync(lambda: engine.restart(0.3))
            with anyio.fail_after(5):
                await wait_functions(engine, "toy::echo")
                assert await engine_call(engine, "toy::echo", "again") == {"echo": "again"}
            frames = [frame for _, frame in engine.received]
            assert frames[0]["type"] == "reattach"
            assert frames[0]["previous_worker_id"] == old_id
            assert [f["type"] for f in frames[1:4]] == ["registerfunction", "registertrigger", "invokefunction"]
            assert frames[2]["id"] == trigger_id
            assert frames[3]["function_id"] == "engine::workers::register"
            assert client.connections == 2


async def test_calls_made_while_disconnected_are_sent_after_reconnect(engine: TestEngine) -> None:
    with anyio.fail_after(15):
        async with running(engine, "caller") as caller:
            await anyio.to_thread.run_sync(engine.stop)
            while caller.is_connected:
                await anyio.sleep(0.01)
            async with anyio.create_task_group() as tg:
                outcome: list[Any] = []

                async def call() -> None:
                    try:
                        await caller.invoke("nobody::home", {}, timeout_ms=5000)
                    except RemoteError as exc:
                        outcome.append(exc.code)

                tg.start_soon(call)
                await anyio.sleep(0.2)
                await anyio.to_thread.run_sync(engine.start)
    assert outcome == ["function_not_found"]


async def test_close_fails_pending_calls_with_shutdown(engine: TestEngine) -> None:
    async def never(data: Any) -> Any:
        await anyio.sleep(30)

    with anyio.fail_after(10):
        async with running(engine, "target") as target:
            await target.register_function("toy::never", never)
            await wait_functions(engine, "toy::never")
            client = EngineClient(engine.url, worker_metadata("caller", "0.1.0"), backoff=FAST)
            outcome: list[str] = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.run)
                await client.wait_connected()

                async def call() -> None:
                    try:
                        await client.invoke("toy::never", {}, timeout_ms=5000)
                    except RemoteError as exc:
                        outcome.append(exc.code)

                tg.start_soon(call)
                await anyio.sleep(0.1)
                await client.close()
    assert outcome == ["SHUTDOWN"]


async def test_worker_name_conflict_is_fatal(engine: TestEngine) -> None:
    client = EngineClient(engine.url, worker_metadata("dup", "0.1.0"), backoff=FAST)

    async def reject() -> None:
        while not engine.conns:
            await anyio.sleep(0.01)
        await anyio.to_thread.run_sync(
            lambda: engine.run(
                lambda: next(iter(engine.conns.values())).send(
                    {
                        "type": "registrationrejected",
                        "code": "WORKER_NAMESPACE_CONFLICT",
                        "namespace": "default",
                        "worker_name": "dup",
                        "owner_worker_id": "x",
                    }
                )
            )
        )

    caught: list[BaseException] = []
    with anyio.fail_after(10):
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(reject)
                await client.run()
        except* RegistrationRejected as group:
            caught.extend(group.exceptions)
    assert [str(e) for e in caught] == ["worker name conflict: dup"]


async def test_close_during_the_reconnect_delay_returns_at_once(engine: TestEngine) -> None:
    client = EngineClient(engine.url, worker_metadata("slow", "0.1.0"), backoff=Backoff(5000, 2.0, 5000, 0.0))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.run)
            await client.wait_connected()
            await anyio.to_thread.run_sync(engine.stop)
            while client.is_connected:
                await anyio.sleep(0.01)
            await anyio.sleep(0.1)
            started = anyio.current_time()
            await client.close()
        assert anyio.current_time() - started < 1


async def test_the_callers_trace_context_travels_on_the_calls_a_handler_makes(engine: TestEngine) -> None:
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    seen: list[Any] = []

    async def record(data: Any) -> Any:
        seen.append(data)
        return {}

    with anyio.fail_after(10):
        async with running(engine, "target") as target, running(engine, "caller") as caller:

            async def relay(data: Any) -> Any:
                return await caller.invoke("toy::record", data, timeout_ms=5000)

            await target.register_function("toy::record", record)
            await caller.register_function("toy::relay", relay)
            await wait_functions(engine, "toy::record", "toy::relay")
            for extras, expected in (({"traceparent": traceparent, "baggage": "k=v"}, (traceparent, "k=v")),
                                     ({}, (None, None)), ({"traceparent": "junk"}, (None, None))):
                frame = {"type": "invokefunction", "invocation_id": str(uuid.uuid4()),
                         "function_id": "toy::relay", "data": {"n": 1}, **extras}
                await anyio.to_thread.run_sync(engine.call_raw, "toy::relay", json.dumps(frame), frame["invocation_id"])
                [sent] = [f for name, f in engine.received if name == "caller" and f["type"] == "invokefunction"
                          and f.get("function_id") == "toy::record"][-1:]
                assert (sent.get("traceparent"), sent.get("baggage")) == expected
            assert len(seen) == 3
            # Outside any invocation, nothing is attached.
            await caller.invoke("toy::record", {}, timeout_ms=5000)
            last = [f for name, f in engine.received if name == "caller" and f.get("function_id") == "toy::record"][-1]
            assert "traceparent" not in last
