"""Fault injection around a worker subprocess on the test engine: the engine dying mid-call, the
worker dying mid-compaction, summariser and router faults over the bus, the configuration
worker absent or wrong, and a lease directory that cannot be used.

Documented outcomes (spec 03 §3.8, §5.6; 04 §1.11, §2.6-§2.12): a summariser fault means "not
compacted" and assemble falls through to emergency reduction; a router budget fault falls back
to the fallback limits; boot-time configuration or lease-directory failures exit with status 1;
after boot a bad value keeps the last good snapshot; a lease never outlives its TTL.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testengine import CallFailed, FakeRouter, TestEngine, WorkerProcess, eventually
from testengine.fake_router import RouterCallError, stream_for

from .engine_support import SEVEN, healthy, routed_budgets, worker_on_engine
from .faults import ROUTED, assemble_request, lease_records, write_seed

TTL_SECS = 3


class ScriptedRouter(FakeRouter):
    """The fake router plus switchable budget faults."""

    budget_error: RouterCallError | None = None
    budget_delay_s: float = 0.0

    async def call(self, function_id: str, data: Any) -> Any:
        if function_id == "router::models::budget":
            if self.budget_delay_s:
                import anyio

                await anyio.sleep(self.budget_delay_s)
            if self.budget_error is not None:
                raise self.budget_error
        return await super().call(function_id, data)


def seeded(tmp_path: Path, **values: Any) -> tuple[Path, Path]:
    lease_dir = tmp_path / "leases"
    seed = write_seed(tmp_path / "seed.yaml", lease_dir=str(lease_dir), lease_ttl_secs=TTL_SECS,
                      summarizer_timeout_ms=1500, **values)
    return seed, lease_dir


def compacted(reply: dict[str, Any]) -> bool:
    return bool(reply["applied"]["compacted"])


def fell_through(reply: dict[str, Any]) -> bool:
    return (reply["applied"]["compacted"], reply["applied"]["pruned"]) == (False, True) and \
        reply["token_count"] <= reply["usable"]


# ---------------------------------------------------------------- summariser faults over the bus

@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestEngine, WorkerProcess, ScriptedRouter, Path]]:
    tmp_path = tmp_path_factory.mktemp("bus")
    router = ScriptedRouter(budgets=routed_budgets())
    seed, lease_dir = seeded(tmp_path)
    with worker_on_engine(tmp_path, router=router, args=("--config", str(seed))) as (engine, process):
        yield engine, process, router, lease_dir


@pytest.fixture
def router(bus: Any) -> Iterator[ScriptedRouter]:
    engine, process, router, lease_dir = bus
    yield router
    router.summary = "Summary: all tests pass."
    router.chat_script = None
    router.chat_delay_s = 0.0
    router.budget_error = None
    router.budget_delay_s = 0.0
    assert process.proc.poll() is None
    assert healthy(engine)
    # Whatever happened, the lease of the call is gone (released, not left to expire).
    assert lease_records(lease_dir) == []


def test_the_bus_history_compacts_with_a_working_router(bus: Any, router: ScriptedRouter) -> None:
    engine = bus[0]
    assert compacted(engine.call("context::assemble", assemble_request("ok"), timeout=30))


def test_a_router_chat_that_hangs_past_the_timeout_means_no_compaction(bus: Any, router: ScriptedRouter) -> None:
    engine = bus[0]
    router.chat_delay_s = 10.0
    started = time.monotonic()
    reply = engine.call("context::assemble", assemble_request("hang"), timeout=30)
    elapsed = time.monotonic() - started
    assert fell_through(reply)
    assert 1.5 <= elapsed < 6.0, elapsed


def test_an_empty_router_summary_means_no_compaction(bus: Any, router: ScriptedRouter) -> None:
    router.summary = ""
    assert fell_through(bus[0].call("context::assemble", assemble_request("empty"), timeout=30))


def test_a_router_chat_error_means_no_compaction(bus: Any, router: ScriptedRouter) -> None:
    async def refuse(data: dict[str, Any]) -> Any:
        raise RouterCallError("router/upstream_error", "provider returned 500")

    router.chat_script = refuse
    assert fell_through(bus[0].call("context::assemble", assemble_request("error"), timeout=30))


def test_a_channel_closed_before_the_done_frame_keeps_the_deltas_so_far(bus: Any, router: ScriptedRouter) -> None:
    """Spec 03 §3.7.5: without a `done` frame the folded text is the deltas received."""
    text = "Summary: cut short before the end"

    async def cut_short(data: dict[str, Any]) -> Any:
        return stream_for(text, str(data.get("model")))[:1], {"ok": True}

    router.chat_script = cut_short
    reply = bus[0].call("context::assemble", assemble_request("short"), timeout=30)
    assert compacted(reply)
    assert reply["applied"]["summary"] == text[: len(text) // 3]


def test_a_channel_closed_before_any_frame_means_no_compaction(bus: Any, router: ScriptedRouter) -> None:
    async def silent(data: dict[str, Any]) -> Any:
        return [], {"ok": True}

    router.chat_script = silent
    assert fell_through(bus[0].call("context::assemble", assemble_request("silent"), timeout=30))


def test_garbage_frames_on_the_channel_mean_no_compaction(bus: Any, router: ScriptedRouter) -> None:
    async def garbage(data: dict[str, Any]) -> Any:
        return ["{not json", b"\xff\xfe", json.dumps({"type": "mystery"})], {"ok": True}

    router.chat_script = garbage
    assert fell_through(bus[0].call("context::assemble", assemble_request("garbage"), timeout=30))


def test_a_router_budget_error_falls_back_to_the_fallback_limits(bus: Any, router: ScriptedRouter) -> None:
    router.budget_error = RouterCallError("router/internal", "budget table unavailable")
    reply = bus[0].call("context::count-tokens", {"messages": [], "model": ROUTED})
    assert reply["tokens"] == 0
    reply = bus[0].call("context::assemble", {"messages": [], "model": {"id": "unknown-a"}}, timeout=30)
    assert reply["model_resolved"] == "fallback"


def test_a_router_budget_timeout_falls_back_after_five_seconds(bus: Any, router: ScriptedRouter) -> None:
    router.budget_delay_s = 8.0
    started = time.monotonic()
    reply = bus[0].call("context::assemble", {"messages": [], "model": {"id": "unknown-b"}}, timeout=30)
    assert reply["model_resolved"] == "fallback"
    assert 4.5 <= time.monotonic() - started < 7.5


# ---------------------------------------------------------------- processes dying mid-call

def call_in_background(engine: TestEngine, payload: dict[str, Any]) -> concurrent.futures.Future[Any]:
    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(engine.call, "context::assemble", payload, 30)
    pool.shutdown(wait=False)
    return future


def test_engine_killed_mid_call_and_restarted(tmp_path: Path) -> None:
    router = FakeRouter(budgets=routed_budgets(), chat_delay_s=2.0)
    seed, lease_dir = seeded(tmp_path)
    with worker_on_engine(tmp_path, router=router, args=("--config", str(seed))) as (engine, process):
        pending = call_in_background(engine, assemble_request("killed"))
        eventually(lambda: router.chat_calls, timeout=10)  # compaction is under way
        assert lease_records(lease_dir) != []
        engine.restart(down_for=0.5)
        with pytest.raises((concurrent.futures.CancelledError, CallFailed, RuntimeError)):
            pending.result(timeout=15)  # the caller learns at once; it does not hang
        engine.wait_for_functions(SEVEN, timeout=10)
        assert healthy(engine)
        assert process.proc.poll() is None
        # The interrupted compaction released its lease; a new one goes through.
        eventually(lambda: lease_records(lease_dir) == [], timeout=TTL_SECS + 2)
        router.chat_delay_s = 0.0
        assert compacted(engine.call("context::assemble", assemble_request("killed"), timeout=30))


def test_worker_killed_mid_compaction_leaves_a_lease_that_expires_with_its_ttl(tmp_path: Path) -> None:
    router = FakeRouter(budgets=routed_budgets(), chat_delay_s=5.0)
    seed, lease_dir = seeded(tmp_path)
    with worker_on_engine(tmp_path, router=router, args=("--config", str(seed))) as (engine, process):
        pending = call_in_background(engine, assemble_request("crash"))
        eventually(lambda: router.chat_calls, timeout=10)
        process.proc.kill()
        with pytest.raises(CallFailed) as stopped:
            pending.result(timeout=10)
        assert stopped.value.code == "invocation_stopped"
        [stale] = lease_records(lease_dir)
        claimed_ms = json.loads(stale.read_text())["ts"]
        router.chat_delay_s = 0.0
        restarted = WorkerProcess(engine.url, "--config", str(seed),
                                  env={"III_COMPOSE_DIR": str(tmp_path)}, cwd=tmp_path)
        try:
            engine.wait_for_functions(SEVEN, timeout=30)
            young = engine.call("context::assemble", assemble_request("crash"), timeout=30)
            if time.time() * 1000 - claimed_ms < TTL_SECS * 1000 - 500:
                assert not compacted(young)  # honoured while younger than its TTL
            while time.time() * 1000 - claimed_ms < TTL_SECS * 1000 + 100:
                time.sleep(0.1)
            assert compacted(engine.call("context::assemble", assemble_request("crash"), timeout=30))
            assert lease_records(lease_dir) == []
        finally:
            restarted.kill()


def _children(pid: int) -> list[int]:
    return sorted(int(c) for task in Path(f"/proc/{pid}/task").iterdir()
                  for c in (task / "children").read_text().split())


def test_a_serving_process_killed_while_it_holds_a_lease_in_the_state_store(tmp_path: Path) -> None:
    """`--processes 2` with the leases and remembered summaries in the engine's state store: two
    compactions run at once, one in each serving process, each holding its lease while the
    router is slow. One serving process is SIGKILLed. Its caller gets an `invocation_failed`
    error at once, the other call compacts, the worker replaces the process and keeps serving;
    the dead process's lease (in the state store, shared by every process) holds off its
    history's compaction only until its TTL, then that compaction succeeds."""
    # The summary must come within the lease's TTL (a holder never outlives its lease): the
    # router's delay stays under it.
    ttl_secs = 5
    router = FakeRouter(budgets=routed_budgets(), chat_delay_s=2.5)
    seed = write_seed(tmp_path / "seed.yaml", lease_store="state", session_store="state",
                      summary_reuse=True, lease_ttl_secs=ttl_secs, summarizer_timeout_ms=20000)
    with worker_on_engine(tmp_path, router=router, args=("--config", str(seed), "--processes", "2")) as (
            engine, process):
        eventually(lambda: len(_children(process.proc.pid)) == 2, timeout=30)
        first, second = assemble_request("one"), assemble_request("two")
        pending = [call_in_background(engine, first), call_in_background(engine, second)]
        eventually(lambda: len(router.chat_calls) == 2, timeout=15)
        leases = engine.state.groups.get("context_lease", {})
        assert len(leases) == 2, leases
        killed = _children(process.proc.pid)[0]
        os.kill(killed, signal.SIGKILL)
        router.chat_delay_s = 0.0
        outcomes: list[Any] = []
        for future in pending:
            try:
                outcomes.append(future.result(timeout=30))
            except CallFailed as failed:
                outcomes.append(failed)
        [lost] = [o for o in outcomes if isinstance(o, CallFailed)]
        assert lost.code == "invocation_failed"
        assert lost.message.startswith("internal error: the worker process serving this call"), lost.message
        [served] = [o for o in outcomes if not isinstance(o, CallFailed)]
        assert compacted(served), process.stderr[-3000:]
        orphan = assemble_request("one") if outcomes[0] is lost else assemble_request("two")
        [stale] = engine.state.groups["context_lease"].values()
        eventually(lambda: len(_children(process.proc.pid)) == 2 and killed not in _children(process.proc.pid),
                   timeout=30)
        assert healthy(engine)
        young = engine.call("context::assemble", orphan, timeout=30)
        if time.time() * 1000 - stale["ts"] < ttl_secs * 1000 - 500:
            assert not compacted(young)  # honoured while younger than its TTL
        while time.time() * 1000 - stale["ts"] < ttl_secs * 1000 + 100:
            time.sleep(0.1)
        assert compacted(engine.call("context::assemble", orphan, timeout=30))
        assert engine.state.groups.get("context_lease", {}) == {}
        assert "Traceback" not in process.stderr


# ---------------------------------------------------------------- configuration and lease_dir

def test_configuration_worker_absent_at_boot_exits_1(tmp_path: Path) -> None:
    engine = TestEngine().start()
    engine.configuration_enabled = False
    process = WorkerProcess(engine.url, env={"III_COMPOSE_DIR": str(tmp_path)}, cwd=tmp_path)
    try:
        assert process.wait(60) == 1
        assert "Traceback" not in process.stderr
        assert not engine.function_ids() & SEVEN
    finally:
        process.kill()
        engine.stop()


def test_an_invalid_configuration_after_boot_keeps_the_last_good_snapshot(tmp_path: Path) -> None:
    with worker_on_engine(tmp_path) as (engine, process):
        request = {"messages": [], "model": {"id": "m", "limits": {"context_window": 10000,
                                                                   "max_output_tokens": 1000}}}
        assert engine.call("context::assemble", request)["usable"] == 8000  # 10% reserved
        good = {**engine.configuration.entries["context-manager"].value, "reserved_pct": 20}
        engine.set_configuration("context-manager", good)
        eventually(lambda: engine.call("context::assemble", request)["usable"] == 7000, timeout=10)
        for bad in ({**good, "reserved_pct": "lots"}, {**good, "no_such_key": 1}, "not an object"):
            engine.set_configuration("context-manager", bad, validate=False)
            time.sleep(0.5)
            assert engine.call("context::assemble", request)["usable"] == 7000
        assert process.proc.poll() is None
        assert "Traceback" not in process.stderr


def test_a_lease_dir_occupied_by_a_file_at_boot_exits_1(tmp_path: Path) -> None:
    occupied = tmp_path / "occupied"
    occupied.write_text("a file")
    seed = write_seed(tmp_path / "seed.yaml", lease_dir=str(occupied))
    engine = TestEngine().start()
    process = WorkerProcess(engine.url, "--config", str(seed),
                            env={"III_COMPOSE_DIR": str(tmp_path)}, cwd=tmp_path)
    try:
        assert process.wait(60) == 1
        assert "Traceback" not in process.stderr
        assert occupied.read_text() == "a file"
    finally:
        process.kill()
        engine.stop()


def test_a_lease_dir_occupied_by_a_file_after_boot_keeps_the_previous_store(tmp_path: Path) -> None:
    seed, lease_dir = seeded(tmp_path)
    occupied = tmp_path / "occupied"
    occupied.write_text("a file")
    with worker_on_engine(tmp_path, args=("--config", str(seed))) as (engine, process):
        value = engine.configuration.entries["context-manager"].value
        engine.set_configuration("context-manager", {**value, "lease_dir": str(occupied)})
        time.sleep(0.5)
        assert compacted(engine.call("context::assemble", assemble_request("after"), timeout=30))
        assert process.proc.poll() is None
        assert occupied.read_text() == "a file"
        assert lease_records(lease_dir) == []
