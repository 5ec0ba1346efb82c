"""``acall()`` and ``call()`` from async code: inside ``asyncio.run`` and inside an anyio task group,
with plain and async summarisers, the answers and errors of a plain ``call()``."""

from __future__ import annotations

import asyncio
import logging
import threading
import warnings

import anyio
import pytest

from context_manager import CallError, ConfigError, UnknownFunction, acall, call

SUMMARY = "The user asked about q and got answers about a."


def _payload(turns: int = 12) -> dict:
    messages = []
    for i in range(turns):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {i} " + "q" * 2000}],
                         "timestamp": 2 * i + 1})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i} " + "a" * 2000}],
                         "stop_reason": "end", "model": "m", "provider": "p", "timestamp": 2 * i + 2})
    return {"model": {"id": "m", "provider": "p", "limits": {"context_window": 8000, "max_output_tokens": 1000}},
            "messages": messages}


def plain_summarizer(system_prompt: str, user_prompt: str, model: dict) -> str:
    return SUMMARY


async def async_summarizer(system_prompt: str, user_prompt: str, model: dict) -> str:
    await asyncio.sleep(0)
    return SUMMARY


@pytest.fixture
def config(tmp_path):
    return {"lease_dir": str(tmp_path / "leases")}


@pytest.fixture
def expected(config):
    """What a plain call() outside any loop answers."""
    answer = call("context::assemble", _payload(), config=config, summarizer=plain_summarizer)
    assert answer["applied"]["compacted"] is True and answer["applied"]["summary"] == SUMMARY
    return answer


@pytest.fixture
def quiet(caplog):
    """No warning (a coroutine never awaited) and no log line at ERROR."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with caplog.at_level(logging.WARNING, logger="context_manager"):
            yield
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_acall_inside_asyncio_run(config, expected, quiet):
    async def main():
        return (await acall("context::assemble", _payload(), config=config, summarizer=plain_summarizer),
                await acall("context::assemble", _payload(), config=config, summarizer=async_summarizer))

    with_plain, with_async = asyncio.run(main())
    assert with_plain == expected
    assert with_async == expected


def test_call_inside_asyncio_run_runs_on_a_private_thread(config, expected, quiet):
    loops = []

    async def recording_summarizer(system_prompt: str, user_prompt: str, model: dict) -> str:
        loops.append(threading.current_thread().name)  # an async summariser runs on the call's loop
        return SUMMARY

    async def main():
        return call("context::assemble", _payload(), config=config, summarizer=recording_summarizer)

    assert asyncio.run(main()) == expected
    assert loops and all(name.startswith("context-manager-call") for name in loops)


def test_both_entries_inside_an_anyio_task_group(tmp_path, expected, quiet):
    answers: dict[str, dict] = {}

    # One lease directory each: three compactions of one history sharing one would see each
    # other's lease (the compaction lease lets one summariser run per history).
    def own(key: str) -> dict:
        return {"lease_dir": str(tmp_path / key)}

    async def by_acall(key: str, summarizer) -> None:
        answers[key] = await acall("context::assemble", _payload(), config=own(key), summarizer=summarizer)

    async def by_call(key: str) -> None:
        answers[key] = call("context::assemble", _payload(), config=own(key), summarizer=plain_summarizer)

    async def main():
        async with anyio.create_task_group() as group:
            group.start_soon(by_acall, "acall-plain", plain_summarizer)
            group.start_soon(by_acall, "acall-async", async_summarizer)
            group.start_soon(by_call, "call")

    anyio.run(main)
    assert answers == {"acall-plain": expected, "acall-async": expected, "call": expected}


class AwaitedObject:
    async def __call__(self, system_prompt: str, user_prompt: str, model: dict) -> str:
        return SUMMARY


def test_call_takes_an_async_summarizer_outside_a_loop(config, expected):
    assert call("context::assemble", _payload(), config=config, summarizer=AwaitedObject()) == expected
    assert call("context::assemble", _payload(), config=config, summarizer=async_summarizer) == expected


def _raised(entry, *args, **kwargs) -> tuple[type, str, str | None]:
    try:
        entry(*args, **kwargs)
    except (CallError, ConfigError, UnknownFunction) as exc:
        return type(exc), str(exc), getattr(exc, "code", None)
    raise AssertionError("nothing raised")


@pytest.mark.parametrize(("function_id", "payload", "config"), [
    ("context::nope", {}, None),
    ("context::count-tokens", {}, {"tail_turns": "three"}),
    ("context::assemble", {"messages": 3}, None),
    ("context::assemble", {"messages": [{"role": "user", "content": "\ud800", "timestamp": 1}]}, None),
])
def test_acall_raises_what_call_raises(function_id, payload, config):
    async def through_acall():
        try:
            await acall(function_id, payload, config=config)
        except (CallError, ConfigError, UnknownFunction) as exc:
            return type(exc), str(exc), getattr(exc, "code", None)
        raise AssertionError("nothing raised")

    assert asyncio.run(through_acall()) == _raised(call, function_id, payload, config=config)


def test_a_failing_async_summarizer_is_a_failed_summariser(config):
    async def broken(system_prompt: str, user_prompt: str, model: dict) -> str:
        raise RuntimeError("down")

    async def main():
        await acall("context::assemble", _payload(), config=config, summarizer=broken)

    with pytest.raises(CallError) as caught:
        asyncio.run(main())
    assert caught.value.code == "invocation_failed"
    plain = _raised(call, "context::assemble", _payload(), config=config,
                    summarizer=lambda s, u, m: (_ for _ in ()).throw(RuntimeError("down")))
    assert (CallError, str(caught.value), caught.value.code) == plain
