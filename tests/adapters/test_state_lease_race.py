"""`lease_store: state` and `session_store: state` through a real engine: processes racing one
lease key make exactly one summariser call, a state store that is absent or failing reads as busy
with one warning line, and remembered compactions are shared through it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testengine import FakeRouter, TestEngine, WorkerProcess, eventually
from tests.roots.test_worker_process import SEVEN, compaction_request

pytestmark = pytest.mark.slow  # worker processes and a summariser slow enough to overlap

LEASE_WARNING = "state store unusable for compaction leases"
SHARED = "lease_store: state\n"

# A second process on the same engine running `context::compact` itself (the worker owns the
# function ids, so a second worker could not register them): a plain engine client with the
# state lease store and the router summariser, released at `start_at` like the worker's call.
RACER = r"""
import json, logging, sys, time

import anyio

from context_manager.adapters.router_summarizer import RouterSummarizer
from context_manager.adapters.state_lease_store import StateLeaseStore
from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.engine.client import EngineClient, invoke_callable, worker_metadata
from context_manager.handlers.compact import handle
from context_manager.handlers.context import HandlerContext
from context_manager.ports import SystemClock

url, start_at, payload = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])


async def main() -> None:
    client = EngineClient(url, worker_metadata("racer", "0.0.0"))
    invoke = invoke_callable(client)
    ctx = HandlerContext(config=DEFAULT_CONFIG, clock=SystemClock(),
                         summarizer=RouterSummarizer(invoke, url, lambda: 60_000),
                         lease_store=StateLeaseStore(invoke, logging.getLogger("racer")))
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.run)
        await client.wait_connected()
        while time.time() < start_at:
            await anyio.sleep(0.0005)
        result = await handle(payload, ctx)
        await client.close()
    print(json.dumps(result), flush=True)


anyio.run(main)
"""


@pytest.fixture
def router() -> FakeRouter:
    return FakeRouter(chat_delay_s=3.0)  # every racer arrives while the winner summarises


def _engine(router: FakeRouter, **kwargs: Any) -> Iterator[TestEngine]:
    engine = TestEngine(router=router, **kwargs).start()
    yield engine
    engine.stop()


@pytest.fixture
def engine(router: FakeRouter) -> Iterator[TestEngine]:
    yield from _engine(router)


@pytest.fixture
def stateless_engine(router: FakeRouter) -> Iterator[TestEngine]:
    yield from _engine(router, state=False)


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(engine: TestEngine, seed: str) -> WorkerProcess:
        (tmp_path / "seed.yaml").write_text(seed)
        process = WorkerProcess(engine.url, "--config", str(tmp_path / "seed.yaml"),
                                env={"III_COMPOSE_DIR": str(tmp_path)}, cwd=tmp_path)
        started.append(process)
        try:
            engine.wait_for_functions(set(SEVEN), timeout=20)
            eventually(lambda: engine.bindings_of("configuration"))
        except (TimeoutError, AssertionError):
            raise AssertionError(process.stderr) from None
        return process

    yield start
    for process in started:
        process.kill()


def _request(key: str = "session-1") -> dict[str, Any]:
    payload = compaction_request()
    payload["options"]["lease_key"] = key
    return payload


def test_a_worker_and_another_process_racing_one_key_make_one_summariser_call(
        engine: TestEngine, router: FakeRouter, start_worker: Callable[..., WorkerProcess], tmp_path: Path) -> None:
    start_worker(engine, SHARED)
    assert not (tmp_path / "data").exists()  # no lease directory with the state store
    payload = _request()
    start_at = time.time() + 2.0  # after the racer has imported the package and connected
    racer = subprocess.Popen([sys.executable, "-c", RACER, engine.url, str(start_at), json.dumps(payload)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    statuses: list[str] = []

    def worker_call() -> None:
        while time.time() < start_at:
            time.sleep(0.0005)
        statuses.append(engine.call("context::compact", payload, timeout=30)["status"])

    caller = threading.Thread(target=worker_call)
    caller.start()
    out, err = racer.communicate(timeout=60)
    caller.join(60)
    assert racer.returncode == 0, err
    statuses.append(json.loads(out)["status"])
    assert sorted(statuses) == ["busy", "ok"]
    assert len(router.chat_calls) == 1
    updates = [data for fid, data in engine.calls if fid == "state::update"]
    assert len(updates) >= 1 and {u["key"] for u in updates} == {"session-1"}
    assert engine.state.groups == {}  # the winner released its claim


def test_without_a_state_worker_compaction_is_busy_with_one_warning(
        stateless_engine: TestEngine, router: FakeRouter, start_worker: Callable[..., WorkerProcess]) -> None:
    worker = start_worker(stateless_engine, SHARED)
    for key in ("a", "b", "a"):
        assert stateless_engine.call("context::compact", _request(key), timeout=20) == {"status": "busy"}
    assert router.chat_calls == []
    assert worker.stderr.count(LEASE_WARNING) == 1, worker.stderr
    assert "lease store unreadable" not in worker.stderr


def test_a_failing_state_store_is_busy_with_one_warning_until_it_answers(
        engine: TestEngine, router: FakeRouter, start_worker: Callable[..., WorkerProcess]) -> None:
    router.chat_delay_s = 0.0
    worker = start_worker(engine, SHARED)
    engine.state_hook = lambda function_id, data: {"error": {"code": "GET_ERROR", "message": "store offline"}}
    for _ in range(2):
        assert engine.call("context::compact", _request(), timeout=20) == {"status": "busy"}
    assert worker.stderr.count(LEASE_WARNING) == 1
    assert "state::get: remote error (GET_ERROR): store offline" in worker.stderr
    engine.state_hook = None
    assert engine.call("context::compact", _request(), timeout=20)["status"] == "ok"
    assert len(router.chat_calls) == 1
    eventually(lambda: "state store answering again" in worker.stderr)


def test_lease_store_hot_reloads_between_files_and_state(
        engine: TestEngine, router: FakeRouter, start_worker: Callable[..., WorkerProcess], tmp_path: Path) -> None:
    router.chat_delay_s = 0.0
    worker = start_worker(engine, "")
    assert (tmp_path / "data" / "context-manager").is_dir()
    assert engine.call("context::compact", _request(), timeout=20)["status"] == "ok"
    assert not [fid for fid, _ in engine.calls if fid.startswith("state::")]
    engine.set_configuration("context-manager", {"lease_store": "state"})
    eventually(lambda: "lease store replaced (lease_store=state)" in worker.stderr)
    assert engine.call("context::compact", _request(), timeout=20)["status"] == "ok"
    assert [fid for fid, _ in engine.calls if fid.startswith("state::")] == [
        "state::get", "state::update", "state::get", "state::delete"]
    # Held in the state store, the key is busy for the worker; the files are not consulted.
    engine.state.groups = {"context_lease": {"session-1": {"nonce": "other-host", "ts": int(time.time() * 1000)}}}
    assert engine.call("context::compact", _request(), timeout=20) == {"status": "busy"}
    engine.set_configuration("context-manager", {})
    eventually(lambda: "lease store replaced (lease_dir=data/context-manager)" in worker.stderr)
    assert engine.call("context::compact", _request(), timeout=20)["status"] == "ok"
    assert len(router.chat_calls) == 3


SESSION_WARNING = "state store unusable for remembered compactions"
REUSE_SHARED = "summary_reuse: true\nsession_store: state\n"


def _grown(rounds: int) -> dict[str, Any]:
    from tests.core.compaction.test_summary_reuse import _grown as grown

    return grown(rounds)


def test_a_remembered_compaction_in_the_state_store_is_reused(
        engine: TestEngine, router: FakeRouter, start_worker: Callable[..., WorkerProcess]) -> None:
    router.chat_delay_s = 0.0
    start_worker(engine, REUSE_SHARED)
    first = engine.call("context::assemble", _grown(12), timeout=20)
    asked = len(router.chat_calls)  # the head is summarised in pieces
    assert first["applied"]["compacted"] is True and asked >= 1
    [record] = engine.state.groups["context_session"].values()
    assert record["summary"] == first["applied"]["summary"]
    assert record["expires_at"] > int(time.time() * 1000) + 3_500_000
    second = engine.call("context::assemble", _grown(13), timeout=20)
    assert second["applied"]["summary_reused"] is True and len(router.chat_calls) == asked


def test_without_a_state_worker_summaries_are_not_reused_with_one_warning(
        stateless_engine: TestEngine, router: FakeRouter, start_worker: Callable[..., WorkerProcess]) -> None:
    router.chat_delay_s = 0.0
    worker = start_worker(stateless_engine, REUSE_SHARED)
    asked = []
    for rounds in (12, 13):
        answer = stateless_engine.call("context::assemble", _grown(rounds), timeout=20)
        assert answer["applied"]["compacted"] is True and "summary_reused" not in answer["applied"]
        asked.append(len(router.chat_calls))
    assert asked[1] > asked[0] >= 1  # the second call summarised again
    assert worker.stderr.count(SESSION_WARNING) == 1, worker.stderr
