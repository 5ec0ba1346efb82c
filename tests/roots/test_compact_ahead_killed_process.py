"""``compact_ahead_at`` when the worker process running a job is killed: the worker runs as real
subprocesses (``python -m context_manager``) on one test engine, with the engine's state for the
lease and the ready summaries, and the fake router as the summariser."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_manager.core.compaction import ahead
from context_manager.core.compaction.recall import session_key
from context_manager.wire.decode import decode_messages
from testengine import FakeRouter, TestEngine, WorkerProcess, eventually
from testengine.fake_router import stream_for
from tests.core.compaction.test_compact_ahead import payload, session

pytestmark = pytest.mark.slow  # starts the worker as a process, twice

TTL_S = 12  # long enough for the second process to boot while the claim holds
SEED = (
    "compact_ahead_at: 0.7\n"
    "lease_store: state\n"
    "session_store: state\n"
    "summarizer_fallback: extractive\n"
    f"lease_ttl_secs: {TTL_S}\n"
)
SECOND = "SUMMARY MADE BY THE SECOND PROCESS"
FUNCTIONS = {"context::assemble", "context::compact"}


class Router(FakeRouter):
    """The first summariser request never gets an answer in the life of the process that sent
    it; every later one is answered at once."""

    async def _first_hangs(self, data: dict[str, Any]) -> tuple[list[str | bytes], Any]:
        if len(self.chat_calls) == 1:
            await anyio.sleep(TTL_S * 2)
        return list(stream_for(SECOND, str(data.get("model")))), {"ok": True, "stop_reason": "end"}


@pytest.fixture
def router() -> Router:
    router = Router()
    router.chat_script = router._first_hangs
    return router


@pytest.fixture
def engine(router: Router) -> Iterator[TestEngine]:
    engine = TestEngine(router=router).start()
    yield engine
    engine.stop()


def start(engine: TestEngine, tmp_path: Path, seed: Path) -> WorkerProcess:
    process = WorkerProcess(engine.url, "--config", str(seed),
                            env={"III_COMPOSE_DIR": str(tmp_path)}, cwd=tmp_path)
    try:
        engine.wait_for_functions(FUNCTIONS, timeout=20)
    except TimeoutError:
        process.kill()
        raise AssertionError(process.stderr) from None
    return process


def ready_record(engine: TestEngine, messages: list[dict[str, Any]]) -> Any:
    key = ahead.record_key(session_key(decode_messages(messages), None))
    return engine.state.groups.get("context_session", {}).get(key)


def test_a_killed_process_with_a_job_in_flight_loses_and_doubles_no_summary(
    engine: TestEngine, router: Router, tmp_path: Path
) -> None:
    seed = tmp_path / "seed.yaml"
    seed.write_text(SEED)
    past_share, over_budget = payload(session(7)), payload(session(11))

    first = start(engine, tmp_path, seed)
    try:
        assert engine.call("context::assemble", past_share)["applied"]["compacted"] is False
        # The job took the session's lease and is waiting for its summariser: kill the process.
        eventually(lambda: len(router.chat_calls) == 1, timeout=10)
        claimed_at = time.monotonic()
        first.proc.kill()
        first.proc.wait(10)
        eventually(lambda: len(engine.workers()) == 0, timeout=10)
    finally:
        first.kill()

    second = start(engine, tmp_path, seed)
    try:
        # Within the TTL the dead process's claim holds: a call that must compact answers at once
        # with the extractive summary, and nothing the dead job was making is in the state.
        asked = time.monotonic()
        answer = engine.call("context::assemble", over_budget, timeout=TTL_S)
        assert time.monotonic() - claimed_at < TTL_S and time.monotonic() - asked < TTL_S / 2
        applied = answer["applied"]
        assert (applied["compacted"], applied["summary_kind"]) == (True, "extractive")
        assert ready_record(engine, past_share["messages"]) is None
        # A call past the share starts this process's job, which finds the lease held and ends.
        assert engine.call("context::assemble", past_share)["applied"]["compacted"] is False
        time.sleep(1)
        assert len(router.chat_calls) == 1

        # Once the claim is a TTL old, the next call past the share makes the summary, once.
        time.sleep(max(0.0, claimed_at + TTL_S + 0.5 - time.monotonic()))
        assert engine.call("context::assemble", past_share)["applied"]["compacted"] is False
        eventually(lambda: ready_record(engine, past_share["messages"]) is not None, timeout=10)
        assert ready_record(engine, past_share["messages"])["summary"] == SECOND
        applied = engine.call("context::assemble", over_budget)["applied"]
        assert (applied["compacted"], applied["summary"], applied["summary_kind"]) == (True, SECOND, "llm")
        assert len(router.chat_calls) == 2  # the dead job's request, then this process's one
        assert second.proc.poll() is None
    finally:
        second.kill()
