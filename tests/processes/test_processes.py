"""``--processes 2`` through the test engine: a serving process killed mid-call costs that call
one error reply and nothing else, a stop drains the calls in hand, a reload reaches every
serving process, and concurrent calls get the answers one process gives."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from context_manager import call
from testengine import CallFailed, FakeRouter, TestEngine, WorkerProcess, eventually
from tests.roots.test_worker_process import HELLO, INLINE, SEVEN, compaction_request

pytestmark = pytest.mark.slow  # each test starts the worker as a process

STARTED = re.compile(r"worker process (\d+) started \(pid=(\d+)\)")


@pytest.fixture
def router() -> FakeRouter:
    return FakeRouter(chat_delay_s=2.0)


@pytest.fixture
def engine(router: FakeRouter) -> Iterator[TestEngine]:
    engine = TestEngine(router=router).start()
    yield engine
    engine.stop()


@pytest.fixture
def worker(engine: TestEngine, tmp_path: Path) -> Iterator[WorkerProcess]:
    process = WorkerProcess(engine.url, "--processes", "2", env={"III_COMPOSE_DIR": str(tmp_path)}, cwd=tmp_path)
    try:
        engine.wait_for_functions(set(SEVEN), timeout=20)
        eventually(lambda: engine.bindings_of("configuration"))
        eventually(lambda: len(started(process)) == 2)
    except (TimeoutError, AssertionError):
        process.kill()
        raise AssertionError(process.stderr) from None
    yield process
    process.kill()


def started(process: WorkerProcess) -> list[tuple[int, int]]:
    """(index, pid) of every serving process started so far, in order."""
    return [(int(index), int(pid)) for index, pid in STARTED.findall(process.stderr)]


class Background:
    """One engine call on a thread: its outcome and when it came."""

    def __init__(self, engine: TestEngine, function_id: str, payload: Any) -> None:
        self.outcome: Any = None
        self.finished_at = 0.0
        self._thread = threading.Thread(target=self._run, args=(engine, function_id, payload))
        self._thread.start()

    def _run(self, engine: TestEngine, function_id: str, payload: Any) -> None:
        try:
            self.outcome = engine.call(function_id, payload, timeout=30)
        except CallFailed as exc:
            self.outcome = exc
        self.finished_at = time.monotonic()

    def join(self, timeout: float = 30) -> Any:
        self._thread.join(timeout)
        assert not self._thread.is_alive()
        return self.outcome


def test_a_killed_serving_process_costs_its_call_one_error_reply(
    engine: TestEngine, router: FakeRouter, worker: WorkerProcess
) -> None:
    # With both processes idle a call goes to the first: the compaction waits there on the
    # (slow) summariser when the process is killed.
    compaction = Background(engine, "context::compact", compaction_request())
    eventually(lambda: len(router.chat_calls) == 1)
    [(first, pid), _] = started(worker)
    assert first == 0
    os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    failure = compaction.join()
    assert isinstance(failure, CallFailed)
    assert failure.code == "invocation_failed"
    assert failure.message == "internal error: the worker process serving this call was killed by signal 9"
    assert compaction.finished_at - killed_at < 5
    # Later calls are answered, by the survivor and by the replacement.
    expected = call("context::assemble", {"messages": HELLO, "model": INLINE})
    assert engine.call("context::assemble", {"messages": HELLO, "model": INLINE}) == expected
    eventually(lambda: len(started(worker)) == 3, timeout=10)
    assert started(worker)[2][0] == 0
    # The killed call's lease is honoured until its TTL, as after any crash (spec 03 §6.5).
    assert engine.call("context::compact", compaction_request(), timeout=20) == {"status": "busy"}
    other = compaction_request()
    other["options"]["lease_key"] = "another-session"
    assert engine.call("context::compact", other, timeout=20)["status"] == "ok"
    time.sleep(router.chat_delay_s + 0.5)  # the killed call's summary would have been done by now
    assert engine.stray_results == []
    assert worker.proc.poll() is None
    assert "worker process 0 (pid=%d) was killed by signal 9 holding 1 calls" % pid in worker.stderr


def test_stopping_drains_the_calls_in_hand(engine: TestEngine, router: FakeRouter, worker: WorkerProcess) -> None:
    compaction = Background(engine, "context::compact", compaction_request())
    eventually(lambda: len(router.chat_calls) == 1)
    worker.interrupt(signal.SIGTERM)
    result = compaction.join()
    assert result["status"] == "ok"
    assert result["summary"] == "Summary: all tests pass."
    assert worker.wait(15) == 0
    assert "waiting for 1 calls in hand" in worker.stderr
    assert engine.stray_results == []


def test_a_reload_reaches_every_serving_process(engine: TestEngine, router: FakeRouter, worker: WorkerProcess) -> None:
    engine.set_configuration("context-manager", {"reserved_pct": 50})
    eventually(lambda: engine.call("context::assemble", {"messages": HELLO, "model": INLINE})["usable"] == 400)
    # The first process is busy with a compaction, so this call is served by the second.
    compaction = Background(engine, "context::compact", compaction_request())
    eventually(lambda: len(router.chat_calls) == 1)
    assert engine.call("context::assemble", {"messages": HELLO, "model": INLINE})["usable"] == 400
    assert compaction.join()["status"] == "ok"
    assert engine.call("context::assemble", {"messages": HELLO, "model": INLINE})["usable"] == 400


def test_a_replacement_process_serves_with_the_configuration_in_force(
    engine: TestEngine, worker: WorkerProcess
) -> None:
    engine.set_configuration("context-manager", {"reserved_pct": 50})
    eventually(lambda: engine.call("context::assemble", {"messages": HELLO, "model": INLINE})["usable"] == 400)
    for _, pid in started(worker):
        os.kill(pid, signal.SIGKILL)
    eventually(lambda: len(started(worker)) == 4, timeout=10)
    assert engine.call("context::assemble", {"messages": HELLO, "model": INLINE})["usable"] == 400


def test_concurrent_calls_get_the_answers_of_one_process(engine: TestEngine, worker: WorkerProcess) -> None:
    payloads = [_session_payload(seed) for seed in range(24)]
    expected = [call("context::assemble", payload) for payload in payloads]
    calls = [Background(engine, "context::assemble", payload) for payload in payloads * 2]
    answers = [c.join() for c in calls]
    assert answers == expected * 2
    assert engine.stray_results == []


def _session_payload(seed: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for turn in range(40):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"{seed}: step {turn} " * 30}],
                         "timestamp": 2 * turn + 1})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"done {turn} " * 40}],
                         "stop_reason": "end", "model": "m", "provider": "p", "timestamp": 2 * turn + 2})
    return {"messages": messages, "model": {"id": "m", "limits": {"context_window": 12000, "max_output_tokens": 500}}}


def test_processes_flag_and_environment_are_checked(engine: TestEngine, tmp_path: Path) -> None:
    for args, env, complaint in [
        (("--processes", "0"), {}, "--processes must be a whole number from 1 to 64, got '0'"),
        (("--processes", "two"), {}, "--processes must be a whole number from 1 to 64, got 'two'"),
        ((), {"III_CM_PROCESSES": "65"}, "III_CM_PROCESSES must be a whole number from 1 to 64, got '65'"),
    ]:
        process = WorkerProcess(engine.url, *args, env=env, cwd=tmp_path)
        try:
            assert process.wait(20) == 2
            assert process.stderr == f"context-manager: {complaint}\n"
        finally:
            process.kill()


def test_the_environment_sets_the_process_count(engine: TestEngine, tmp_path: Path) -> None:
    process = WorkerProcess(engine.url, env={"III_CM_PROCESSES": "2", "III_COMPOSE_DIR": str(tmp_path)}, cwd=tmp_path)
    try:
        engine.wait_for_functions(set(SEVEN), timeout=20)
        eventually(lambda: "worker ready (public functions=4, processes=2)" in process.stderr)
    finally:
        process.kill()




def test_the_anchor_comes_back_to_a_tail_only_caller_whichever_process_serves_it(
    engine: TestEngine, worker: WorkerProcess
) -> None:
    """The summary carries the anchor, so neither process needs to have seen the compaction."""
    engine.set_configuration("context-manager", {"anchor_messages": 1})
    eventually(lambda: "anchor_tokens" in engine.call(
        "context::assemble", {"messages": HELLO, "model": INLINE})["applied"])
    task = {"role": "user", "content": [{"type": "text", "text": "Fix the flaky lease test"}], "timestamp": 1}
    messages: list[dict[str, Any]] = [task]
    for i in range(30):
        messages.append({"role": "assistant", "content": [
            {"type": "function_call", "id": f"c{i}", "function_id": "read", "arguments": {"n": i}}],
            "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": 2 * i + 2})
        messages.append({"role": "function_result", "function_call_id": f"c{i}", "function_id": "read",
                         "content": [{"type": "text", "text": f"line {i} " * 200}], "timestamp": 2 * i + 3})
    model = {"id": "m", "limits": {"context_window": 12000, "max_output_tokens": 1000}}
    first = engine.call("context::assemble", {"messages": messages, "model": model,
                                              "options": {"lease_key": "s1"}}, timeout=30)
    applied = first["applied"]
    assert applied["compacted"] is True and applied["summary"].endswith("<!-- /context-manager:anchor -->")
    tail = messages[applied["tail_start_index"]:]
    # Concurrent calls of new sessions, which the pool places on the less loaded process: the
    # answers may come from either, none of which needs to remember the compaction.
    calls = [Background(engine, "context::assemble", {
        "messages": sent, "model": model,
        "options": {"previous_summary": applied["summary"], "lease_key": f"s{k}"}})
        for k, sent in enumerate((tail, [task, *tail]) * 3, start=2)]
    answers = [c.join() for c in calls]
    assert all(answer == answers[0] for answer in answers)
    assert answers[0]["messages"] == first["messages"]
    assert answers[0]["messages"][0]["content"] == task["content"]
    assert sum(m["content"] == task["content"] for m in answers[0]["messages"]) == 1
    assert answers[0]["system_prompt"] == first["system_prompt"]
