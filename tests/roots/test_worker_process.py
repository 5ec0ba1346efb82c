"""The worker as a real subprocess (`python -m context_manager --url ...`) against the test
engine: registrations, every function over the bus, hot reload, the models-changed flush, a
compaction streamed through a channel, engine restarts and boot failures (spec 04 §1, §2, §8)."""

from __future__ import annotations

import json
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from context_manager.config.schema import config_schema
from context_manager.schemas import function_definitions, policy_function_definitions
from testengine import CallFailed, FakeRouter, TestEngine, WorkerProcess, eventually

pytestmark = pytest.mark.slow  # each test starts the worker as a process

SEVEN = [d["id"] for d in function_definitions()]
# The parent process registers the policy functions after the configuration binding.
POLICY = [d["id"] for d in policy_function_definitions()]
PUBLIC = {"context::assemble", "context::compact", "context::prune", "context::count-tokens"}


@pytest.fixture
def router() -> FakeRouter:
    return FakeRouter(
        budgets={
            "routed-model": {
                "model": {"id": "routed-model", "provider": "fake", "context_window": 2000, "max_output_tokens": 200},
                "effective_max_output_tokens": 200,
            }
        }
    )


@pytest.fixture
def engine(router: FakeRouter) -> Iterator[TestEngine]:
    engine = TestEngine(router=router).start()
    yield engine
    engine.stop()


@pytest.fixture
def start_worker(engine: TestEngine, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(*args: str, env: dict[str, str] | None = None) -> WorkerProcess:
        process = WorkerProcess(
            engine.url, *args, env={"III_COMPOSE_DIR": str(tmp_path), **(env or {})}, cwd=tmp_path
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


@pytest.fixture(params=[1, 2], ids=["one-process", "two-processes"])
def processes(request: pytest.FixtureRequest) -> int:
    """Every behaviour below holds whether the calls are served in the worker's own process or
    in serving processes behind it (``--processes``)."""
    return int(request.param)


@pytest.fixture
def worker(engine: TestEngine, start_worker: Callable[..., WorkerProcess], processes: int) -> WorkerProcess:
    process = start_worker(*(() if processes == 1 else ("--processes", str(processes))))
    try:
        engine.wait_for_functions({*SEVEN, *POLICY}, timeout=20)
        eventually(lambda: engine.bindings_of("configuration"))
    except (TimeoutError, AssertionError):
        raise AssertionError(process.stderr) from None
    return process




def user(text: str, ts: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def reply(text: str, ts: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end",
        "model": "m",
        "provider": "p",
        "timestamp": ts,
    }


INLINE = {"id": "m1", "limits": {"context_window": 1000, "max_output_tokens": 100}}
HELLO = [user("hi", 1)]


# ---------------------------------------------------------------- registration


def test_registrations_follow_the_boot_order(engine: TestEngine, worker: WorkerProcess) -> None:
    frames = [f for name, f in engine.received if name == "context-manager"]
    registered = [(f["type"], f.get("id") if f["type"] == "registerfunction" else f.get("trigger_type")) for f in frames if f["type"] in ("registerfunction", "registertrigger")]
    assert registered == [
        ("registerfunction", "context::assemble"),
        ("registerfunction", "context::compact"),
        ("registerfunction", "context::prune"),
        ("registerfunction", "context::count-tokens"),
        ("registerfunction", "context::on-models-changed"),
        ("registertrigger", "router::models::changed"),
        ("registerfunction", "context-manager::ui-content"),
        ("registertrigger", "console:script"),
        ("registertrigger", "console:style"),
        ("registerfunction", "context::on-config-change"),
        ("registertrigger", "configuration"),
        ("registerfunction", "context::policy::publish"),
        ("registerfunction", "context::policy::list"),
        ("registerfunction", "context::policy::activate"),
        ("registerfunction", "context::policy::withdraw"),
        ("registerfunction", "context::policy::resolve"),
        ("registerfunction", "context::policy::scopes"),
    ]
    definitions = {d["id"]: d for d in function_definitions() + policy_function_definitions()}
    for frame in frames:
        if frame["type"] == "registerfunction":
            d = definitions[frame["id"]]
            assert frame["description"] == d["description"]
            assert frame["metadata"] == d["metadata"]
            assert frame["request_format"] == d["request_schema"]
            assert frame["response_format"] == d["response_schema"]
    bindings = [(b.trigger_type, b.function_id, b.config) for b in engine.bindings.values()]
    assert bindings == [
        ("router::models::changed", "context::on-models-changed", {}),
        ("console:script", "context-manager::ui-content", {"path": "context-manager/page.js"}),
        ("console:style", "context-manager::ui-content", {"path": "context-manager/styles.css"}),
        ("configuration", "context::on-config-change", {"configuration_id": "context-manager", "event_types": ["configuration:updated"]}),
    ]
    assert all("metadata" not in f for f in frames if f["type"] == "registertrigger")
    [meta] = [w for w in engine.workers() if w.get("name") == "context-manager"]
    assert (meta["runtime"], meta["version"]) == ("python", "0.1.0")
    # The configuration was registered first, with the worker's schema.
    assert engine.configuration.entries["context-manager"].schema == config_schema()


# ---------------------------------------------------------------- every function over the bus


def test_every_function_answers_through_the_engine(engine: TestEngine, worker: WorkerProcess) -> None:
    counted = engine.call("context::count-tokens", {"messages": HELLO, "model": INLINE})
    assert counted["tokens"] == 17
    pruned = engine.call("context::prune", {"messages": HELLO})
    assert pruned["messages"] == HELLO
    assembled = engine.call("context::assemble", {"messages": HELLO, "model": INLINE})
    assert (assembled["token_count"], assembled["usable"]) == (17, 800)
    assert engine.call("context::compact", {"messages": [], "model": INLINE}) == {"status": "empty"}
    assert engine.call("context::on-models-changed", {}) == {"ok": True}
    assert engine.call("context::on-config-change", {}) == {"ok": True}
    page = engine.call("context-manager::ui-content", {"path": "context-manager/page.js"})
    assert page["content_type"] == "text/javascript; charset=utf-8"
    assert "configForms" in page["content"]


def test_an_agent_loop_gets_the_answers_of_fresh_calls(engine: TestEngine, worker: WorkerProcess) -> None:
    """Turn after turn the worker reuses what it parsed before; every answer must still be the
    one a fresh library call (plain decoding, no reuse) gives, an edited old message included."""
    from context_manager import call

    def turn(i: int) -> list[dict[str, Any]]:
        return [
            {"role": "user", "content": [{"type": "text", "text": f"step {i}: " + "go on " * 40}],
             "timestamp": 10 * i},
            {"role": "assistant", "content": [{"type": "function_call", "id": f"c{i}", "function_id": "fs::read",
                                               "arguments": {"path": f"src/{i}.py", "limit": 200}}],
             "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": 10 * i + 1},
            {"role": "function_result", "function_call_id": f"c{i}", "function_id": "fs::read",
             "content": [{"type": "text", "text": f"line {i}\n" * 300}], "timestamp": 10 * i + 2},
        ]

    model = {"id": "m", "limits": {"context_window": 200_000, "max_output_tokens": 1_000}}
    history: list[dict[str, Any]] = []
    for i in range(11):
        history = history + turn(i)
        if i == 8:  # an edit far back, as a harness that rewrites history would send
            history[1] = {**history[1], "timestamp": 2}
        payload = {"messages": history, "model": model}
        assert engine.call("context::assemble", payload) == call("context::assemble", payload)


def test_callers_extra_fields_are_ignored(engine: TestEngine, worker: WorkerProcess) -> None:
    # A worker-originated call carries `_caller_worker_id`; the function must not mind.
    result = engine.call("context::count-tokens", {"messages": HELLO, "model": INLINE, "_caller_worker_id": "w"})
    assert result["tokens"] == 17


def test_malformed_payloads_get_errors_and_the_worker_keeps_serving(engine: TestEngine, worker: WorkerProcess) -> None:
    with pytest.raises(CallFailed) as info:
        engine.call("context::count-tokens", {"messages": []})
    assert (info.value.code, info.value.message) == ("invocation_failed", "serialization error: missing field `model`")
    with pytest.raises(CallFailed) as info:
        engine.call("context::assemble", {"model": {"id": "m1"}})
    assert info.value.message == "handler error: context/invalid_request: messages is required"
    with pytest.raises(CallFailed) as info:
        engine.call("context::count-tokens", None)
    assert info.value.message.startswith("serialization error: ")
    engine.send_to("context::count-tokens", "{not json")
    invocation_id = str(uuid.uuid4())
    text = '{"type":"invokefunction","invocation_id":"%s","function_id":"context::prune","data":{"messages":"\\udc00"}}' % invocation_id
    body = engine.call_raw("context::prune", text, invocation_id)
    assert body["error"]["code"] == "invocation_failed"
    assert body["error"]["message"].startswith("serialization error: ")
    assert engine.call("context::count-tokens", {"messages": HELLO, "model": INLINE})["tokens"] == 17


# ---------------------------------------------------------------- configuration


def test_configuration_change_applies_without_restart(engine: TestEngine, worker: WorkerProcess) -> None:
    engine.set_configuration("context-manager", {"reserved_pct": 50})
    eventually(lambda: engine.call("context::assemble", {"messages": HELLO, "model": INLINE})["usable"] == 400)
    # An invalid value (stored behind the schema's back) keeps the last good one.
    engine.set_configuration("context-manager", {"reserved_pct": -1}, validate=False)
    assert engine.call("context::on-config-change", {"id": "context-manager"}) == {"ok": True}
    assert engine.call("context::assemble", {"messages": HELLO, "model": INLINE})["usable"] == 400
    assert worker.proc.poll() is None


def _reasoning_history() -> list[dict[str, Any]]:
    thinking = {"role": "assistant", "content": [{"type": "thinking", "text": "t" * 400}, {"type": "text", "text": "a"}],
                "stop_reason": "end", "model": "m", "provider": "p", "timestamp": 2}
    return [user("q", 1), thinking, user("q2", 3), reply("b", 4)]


def test_a_retention_policy_hot_reloads_and_a_bad_one_keeps_the_last_good(
    engine: TestEngine, worker: WorkerProcess
) -> None:
    payload = {"messages": _reasoning_history(), "model": {"id": "m1", "limits": {"context_window": 100000, "max_output_tokens": 100}}}
    assert "warnings" not in engine.call("context::assemble", payload)["applied"]
    engine.set_configuration("context-manager", {"retention": {"reasoning": {"keep_turns": 1}}})
    dropped = [{"code": "reasoning_dropped", "count": 1, "tokens_freed": 107}]
    eventually(lambda: engine.call("context::assemble", payload)["applied"].get("warnings") == dropped)
    # A changed policy applies in turn: the thinking message is 2 turns old, 3 are kept now.
    engine.set_configuration("context-manager", {"retention": {"reasoning": {"keep_turns": 3}}})
    eventually(lambda: "warnings" not in engine.call("context::assemble", payload)["applied"])
    engine.set_configuration("context-manager", {"retention": {"reasoning": {"keep_turns": 1}}})
    eventually(lambda: engine.call("context::assemble", payload)["applied"].get("warnings") == dropped)
    # to above over, stored behind the schema's back: rejected, the last good policy stays.
    bad = {"retention": {"reasoning": {"keep_turns": 5},
                         "tools": {"default": {"result": {"mode": "over", "over": 10, "to": 20}}}}}
    engine.set_configuration("context-manager", bad, validate=False)
    assert engine.call("context::on-config-change", {"id": "context-manager"}) == {"ok": True}
    assert engine.call("context::assemble", payload)["applied"]["warnings"] == dropped
    assert "retention.tools.default.result.to: 20 is greater than over (10)" in worker.stderr
    assert worker.proc.poll() is None


def test_boot_uses_the_seed_only_for_a_first_registration(
    engine: TestEngine, start_worker: Callable[..., WorkerProcess], tmp_path: Path
) -> None:
    seed = tmp_path / "seed.yaml"
    seed.write_text("reserved_pct: 20\n")
    process = start_worker("--config", str(seed))
    engine.wait_for_functions(PUBLIC, timeout=20)
    assert engine.call("context::assemble", {"messages": HELLO, "model": INLINE})["usable"] == 700
    assert engine.configuration.entries["context-manager"].value["reserved_pct"] == 20
    process.kill()


# ---------------------------------------------------------------- router interplay


def test_models_changed_flushes_the_budget_cache(engine: TestEngine, router: FakeRouter, worker: WorkerProcess) -> None:
    routed = {"messages": HELLO, "model": {"id": "routed-model"}}
    assert engine.call("context::assemble", routed)["usable"] == 1600
    assert engine.call("context::assemble", routed)["usable"] == 1600
    assert len(router.budget_calls) == 1
    assert router.budget_calls[0]["id"] == "routed-model"
    assert engine.fire_models_changed({"provider": "fake"}) == [{"result": {"ok": True}}]
    engine.call("context::assemble", routed)
    assert len(router.budget_calls) == 2


def compaction_request() -> dict[str, Any]:
    messages = [
        user("first question " * 40, 1),
        reply("first answer " * 40, 2),
        user("second question " * 40, 3),
        reply("second answer " * 40, 4),
        user("third question", 5),
    ]
    return {
        "messages": messages,
        "model": {"id": "test-model", "provider": "fake", "limits": {"context_window": 100000, "max_output_tokens": 1000}},
        "options": {"tail_turns": 1, "preserve_recent_tokens": 10},
    }


def test_compaction_summary_streams_through_a_channel(engine: TestEngine, router: FakeRouter, worker: WorkerProcess) -> None:
    result = engine.call("context::compact", compaction_request(), timeout=20)
    assert result["status"] == "ok"
    assert result["summary"] == "Summary: all tests pass."
    assert result["tail_start_index"] == 4
    [chat] = router.chat_calls
    assert chat["writer_ref"]["direction"] == "write"
    assert (chat["model"], chat["provider"], chat["tools"]) == ("test-model", "fake", [])
    assert [fid for fid, _ in engine.calls].count("engine::channels::create") == 1


def test_missing_router_functions_are_clean_errors_for_the_worker(engine: TestEngine, worker: WorkerProcess) -> None:
    engine.router = None
    fallback = engine.call("context::assemble", {"messages": HELLO, "model": {"id": "unknown-model"}})
    assert fallback["model_resolved"] == "fallback"
    assert engine.call("context::compact", compaction_request(), timeout=20) == {"status": "overflow"}
    assert engine.call("context::count-tokens", {"messages": HELLO, "model": INLINE})["tokens"] == 17


# ---------------------------------------------------------------- engine restart and process lifecycle


def test_engine_restart_reregisters_within_five_seconds(engine: TestEngine, worker: WorkerProcess) -> None:
    engine.calls.clear()
    engine.restart(down_for=0.5)
    started = time.monotonic()
    engine.wait_for_functions(set(SEVEN), timeout=5)
    eventually(lambda: len(engine.bindings) == 4, timeout=5 - (time.monotonic() - started))
    assert time.monotonic() - started < 5
    assert engine.call("context::count-tokens", {"messages": HELLO, "model": INLINE})["tokens"] == 17
    assert len(engine.bindings) == 4
    # The worker does not re-register or re-fetch its configuration on reconnect.
    assert not [fid for fid, _ in engine.calls if fid.startswith("configuration::")]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signals_stop_the_worker_cleanly(worker: WorkerProcess, sig: int) -> None:
    worker.interrupt(sig)
    assert worker.wait(10) == 0


def test_absent_configuration_worker_exits_1(engine: TestEngine, start_worker: Callable[..., WorkerProcess]) -> None:
    engine.configuration_enabled = False
    process = start_worker()
    assert process.wait(20) == 1
    errors = [line for line in process.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1
    assert "registering context-manager configuration schema" in errors[0]
    assert "function_not_found" in errors[0]
    assert not engine.function_ids() & set(SEVEN)


def test_invalid_stored_configuration_exits_1(engine: TestEngine, start_worker: Callable[..., WorkerProcess]) -> None:
    engine.configuration.register({"id": "context-manager", "name": "x", "description": "x", "schema": {}, "initial_value": {"tail_truns": 3}})
    process = start_worker()
    assert process.wait(20) == 1
    errors = [line for line in process.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "loading context-manager configuration: json parse: " in errors[0]


def test_config_name_from_the_environment(engine: TestEngine, start_worker: Callable[..., WorkerProcess]) -> None:
    start_worker(env={"III_CONFIG_NAME": "ctx-b"})
    engine.wait_for_functions(PUBLIC, timeout=20)
    entry = engine.configuration.entries["ctx-b"]
    assert entry.metadata == {"ui_form": "context-manager"}
    eventually(lambda: engine.bindings_of("configuration"))
    [binding] = engine.bindings_of("configuration")
    assert binding.config == {"configuration_id": "ctx-b", "event_types": ["configuration:updated"]}


def test_manifest_flag_does_not_connect(engine: TestEngine, start_worker: Callable[..., WorkerProcess]) -> None:
    process = start_worker("--manifest")
    assert process.wait(20) == 0
    assert not engine.received
    assert json.loads(process.stdout_text())["name"] == "context-manager"


def test_unreachable_engine_fails_boot_after_the_retry_budget(tmp_path: Path) -> None:
    import socket

    # Bound but never listening, the port refuses every connection and stays taken for the whole
    # test, so no engine started meanwhile (another xdist worker's) can be given it.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        process = WorkerProcess(f"ws://127.0.0.1:{port}", env={"III_COMPOSE_DIR": str(tmp_path)}, cwd=tmp_path)
        try:
            started = time.monotonic()
            assert process.wait(30) == 1
            # 3 attempts of 5000 ms plus sleeps of 250 and 500 ms (spec 04 §2.8).
            assert 15.75 <= time.monotonic() - started < 25
            errors = [line for line in process.stderr.splitlines() if " ERROR " in line]
            assert len(errors) == 1
            assert "configuration::get failed after 3 attempts: remote error (TIMEOUT)" in errors[0]
        finally:
            process.kill()
