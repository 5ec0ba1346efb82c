"""``estimator: router`` through the test engine: the worker asks the fake llm-router's
``router::count_tokens`` (an o200k_base oracle) and falls back cleanly when the router lacks the
function, is slow or fails."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from context_manager.schemas import function_definitions
from testengine import FakeRouter, TestEngine, WorkerProcess, eventually
from testengine.fake_router import oracle_count

pytestmark = pytest.mark.slow  # each test starts the worker as a process

SEVEN = {d["id"] for d in function_definitions()}
MODEL = {"id": "m1", "limits": {"context_window": 100_000, "max_output_tokens": 1000}}
WARNING = "router::count_tokens unavailable for m1, counting locally"


def user(text: str, ts: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def reply(text: str, ts: int) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "stop_reason": "end",
            "model": "m", "provider": "p", "timestamp": ts}


HISTORY = [user("Please list the files in the repository and explain the layout.", 1),
           reply("The repository has a src folder with the package and a tests folder.", 2),
           user("Now count the lines of every Python module, largest first.", 3)]
REQUEST = {"messages": HISTORY, "model": MODEL, "system_prompt": "You are a careful assistant."}


@pytest.fixture
def router() -> FakeRouter:
    return FakeRouter()


@pytest.fixture
def engine(router: FakeRouter) -> Iterator[TestEngine]:
    engine = TestEngine(router=router).start()
    yield engine
    engine.stop()


@pytest.fixture
def worker(engine: TestEngine, tmp_path: Path) -> Iterator[WorkerProcess]:
    process = WorkerProcess(engine.url, env={"III_COMPOSE_DIR": str(tmp_path)}, cwd=tmp_path)
    try:
        engine.wait_for_functions(SEVEN, timeout=20)
        eventually(lambda: engine.bindings_of("configuration"))
        engine.set_configuration("context-manager", {"estimator": "router", "overflow_fallback": "drop_oldest"})
        eventually(lambda: engine.call("context::count-tokens", REQUEST)["estimator"] == "router")
    except (TimeoutError, AssertionError):
        process.kill()
        raise AssertionError(process.stderr) from None
    yield process
    process.kill()


def oracle(request: dict[str, Any]) -> int:
    return oracle_count({"model": request["model"]["id"], "system_prompt": request.get("system_prompt"),
                         "messages": request["messages"]})


def test_count_tokens_is_the_routers_count_and_is_cached(engine: TestEngine, router: FakeRouter, worker):
    answer = engine.call("context::count-tokens", REQUEST)
    assert answer["estimator"] == "router"
    assert answer["tokens"] == oracle(REQUEST)
    assert sum(answer["by_role"].values()) <= answer["tokens"]
    calls = len(router.count_calls)
    assert engine.call("context::count-tokens", REQUEST) == answer
    assert len(router.count_calls) == calls  # an unchanged history is never counted again
    assert router.count_calls[-1] == {"model": "m1", "system_prompt": "You are a careful assistant.",
                                      "messages": HISTORY}


def test_assemble_counts_with_the_router_at_most_twice(engine: TestEngine, router: FakeRouter, worker):
    answer = engine.call("context::assemble", REQUEST)
    assert answer["breakdown"]["estimator"] == "router"
    assert answer["token_count"] == oracle({**REQUEST, "messages": answer["messages"]})
    b = answer["breakdown"]
    assert b["system_prompt_tokens"] + b["tools_tokens"] + sum(b["by_role"].values()) == answer["token_count"]
    # A history that must be reduced: the router counts the request and the reduced context.
    big = [user("x " * 3000, 1), reply("ok", 2), user("y " * 3000, 3), reply("ok", 4), user("last", 5)]
    small = {"id": "m2", "limits": {"context_window": 3000, "max_output_tokens": 100}}
    before = len(router.count_calls)
    reduced = engine.call("context::assemble", {"messages": big, "model": small})
    assert len(router.count_calls) - before == 2  # the request, then what is returned
    assert reduced["applied"]["dropped_messages"] > 0
    assert reduced["breakdown"]["estimator"] == "router"
    assert reduced["applied"]["initial_token_count"] == oracle({"model": small, "messages": big})
    assert reduced["token_count"] == oracle({"model": small, "system_prompt": reduced["system_prompt"],
                                             "messages": reduced["messages"]})
    assert reduced["token_count"] <= reduced["usable"]


@pytest.mark.parametrize("setup", ["absent", "slow", "error"])
def test_fallback_is_the_local_count_with_one_warning(engine: TestEngine, router: FakeRouter, worker, setup):
    local = engine.call("context::count-tokens", {**REQUEST, "messages": HISTORY[:1]})  # warm the path
    if setup == "absent":
        router.count_tokens = False
    elif setup == "slow":
        router.count_delay_s = 5.0
    else:
        router.count_error = ("router/provider_error", "provider rejected the count")
    fresh = {**REQUEST, "messages": HISTORY + [reply(f"a fresh answer ({setup})", 4)]}
    started = time.monotonic()
    answer = engine.call("context::count-tokens", fresh, timeout=10)
    elapsed = time.monotonic() - started
    assert answer["estimator"] == "heuristic"
    assert local["estimator"] == "router"
    assert elapsed < 4.0  # the 2 s timeout, never the router's 5 s
    assert answer["tokens"] == engine.call("context::count-tokens", fresh, timeout=10)["tokens"]
    eventually(lambda: WARNING in worker.stderr)
    assert worker.stderr.count(WARNING) == 2  # one line per call that could not be counted
