"""``compact_ahead_at`` across processes: two engine clients (two serving processes) with
``lease_store: state`` and ``session_store: state`` on one test engine run one job for a
session, and the other process uses its summary."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import anyio
import pytest
from compaction_support import FakeSummarizer

from context_manager.adapters.job_runners import LoopJobRunner
from context_manager.adapters.state_lease_store import StateLeaseStore
from context_manager.adapters.state_session_store import StateSessionStore
from context_manager.config.parse import parse_config_value
from context_manager.core.compaction import ahead
from context_manager.core.compaction.recall import session_key
from context_manager.engine.client import EngineClient, invoke_callable, worker_metadata
from context_manager.handlers.assemble import handle
from context_manager.handlers.context import HandlerContext
from context_manager.ports import SystemClock
from context_manager.wire.decode import decode_messages
from testengine import TestEngine
from tests.core.compaction.test_compact_ahead import payload, session

CONFIG = parse_config_value({"compact_ahead_at": 0.7, "lease_store": "state", "session_store": "state"})


@pytest.fixture
def engine() -> Iterator[TestEngine]:
    engine = TestEngine().start()
    yield engine
    engine.stop()


def test_two_processes_on_the_state_lease_run_one_job_and_share_its_summary(engine: TestEngine) -> None:
    log = logging.getLogger("context_manager.test")
    body = payload(session(7, first="shared session"))

    async def main() -> tuple[int, int, dict, dict]:
        async with anyio.create_task_group() as tg:
            clients = [EngineClient(engine.url, worker_metadata(f"process-{i}", "0.1.0")) for i in (1, 2)]
            for client in clients:
                tg.start_soon(client.run)
                await client.wait_connected()
            processes = []
            for client in clients:
                invoke = invoke_callable(client)
                processes.append(HandlerContext(
                    config=CONFIG, clock=SystemClock(), log=log,
                    summarizer=FakeSummarizer(replies=["SHARED AHEAD SUMMARY"], delay=0.3),
                    lease_store=StateLeaseStore(invoke, log),
                    session_store=StateSessionStore(invoke, SystemClock(), 3600, log),
                    ahead_runner=LoopJobRunner()))
            answers = await asyncio.gather(*(handle(body, ctx) for ctx in processes))
            assert [a["applied"]["compacted"] for a in answers] == [False, False]
            runners = [ctx.ahead_runner for ctx in processes]
            assert all(isinstance(r, LoopJobRunner) and r.running == 1 for r in runners)
            while any(r.running for r in runners if isinstance(r, LoopJobRunner)):
                await asyncio.sleep(0.02)
            calls = [ctx.summarizer.calls for ctx in processes if isinstance(ctx.summarizer, FakeSummarizer)]
            # the second process, over budget now, uses the summary the first one made
            later = await handle(payload(session(11, first="shared session")), processes[1])
            for client in clients:
                await client.close()
        return calls[0], calls[1], later["applied"], engine.state.groups

    one, two, applied, groups = anyio.run(main)
    assert sorted([one, two]) == [0, 1]
    assert (applied["compacted"], applied["summary"], applied["tail_start_index"]) == (
        True, "SHARED AHEAD SUMMARY", 13)
    key = ahead.record_key(session_key(decode_messages(body["messages"]), None))
    assert list(groups["context_session"]) == [key]
    assert groups.get("context_lease", {}) == {}  # released
