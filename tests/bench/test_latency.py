"""bench.latency: the simulated clock (step times, waits, p99), the summariser's in-call and
off-turn counts, and the exact rows on a small generated session."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from bench.kit.generate import SessionPlan, build_session
from bench.kit.loop import GuidanceHook
from bench.kit.peers import PEERS_BY_NAME, Peer
from bench.kit.sessions import Session
from bench.latency.__main__ import main
from bench.latency.clock import recorded_times, step_seconds, timeline
from bench.latency.jobs import DelayedSessions, SimulatedClock, SimulatedJobs
from bench.latency.run import NOT_SUPPORTED, Row, cells, measure
from bench.latency.worker import IN_CALL, RECOMMENDED, WORKER_MODES, MeteredSummarizer, WorkerMode, supported
from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.ports import RememberedCompaction, SummarizeRequest

TS = 1_764_460_800_000


def _message(role: str, at: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": role}], "timestamp": at}
    if role == "assistant":
        message.update(stop_reason="end", model="m", provider="p")
    return message


def _session(stamps: list[int], roles: str = "uaua") -> Session:
    names = {"u": "user", "a": "assistant"}
    return Session("hand", None, [_message(names[r], TS + at) for r, at in zip(roles, stamps)])


@pytest.fixture(scope="module")
def small() -> Session:
    doc = build_session(SessionPlan("latency-small", 5, (
        ("Fix the flaky lease test in tests/test_worker.py and keep the suite fast.", 40),
        ("Now document the lease protocol in docs/leases.md.", 10))))
    return Session("latency-small", doc["system_prompt"], doc["messages"])


def test_synthesised_times_take_the_stated_step_time() -> None:
    session = _session([0, 1000, 2000, 3000])
    assert not recorded_times(session)
    assert step_seconds(session, 10.0) == {1: 10.0, 3: 0.0}


def test_recorded_times_take_the_gap_between_assistant_messages() -> None:
    session = _session([0, 1500, 1600, 9100])
    assert recorded_times(session)
    assert step_seconds(session) == {1: 7.6, 3: 0.0}
    # a clock that went backwards is no time at all; a missing timestamp makes the times stated
    assert step_seconds(_session([0, 5000, 5100, 4000]))[1] == 0.0
    missing = _session([0, 1500, 1600, 9100])
    del missing.messages[2]["timestamp"]
    assert not recorded_times(missing)


def test_a_call_waits_latency_times_its_summariser_calls() -> None:
    line = timeline([1, 3, 5, 7], [0, 2, 0, 1], {1: 4.0, 3: 6.0, 5: 8.0, 7: 0.0}, 30.0)
    assert [(c.index, c.made_at, c.wait) for c in line.calls] == [(1, 0.0, 0.0), (3, 4.0, 60.0),
                                                                  (5, 70.0, 0.0), (7, 78.0, 30.0)]
    assert (line.waited, line.total_wait, line.max_wait) == (2, 90.0, 60.0)
    assert line.p99_wait == 60.0  # nearest rank over every call, the zero waits included
    assert (line.agent_seconds, line.session_seconds, line.waiting_share) == (18.0, 108.0, 90.0 / 108.0)
    assert timeline([1] * 100 + [2], [0] * 100 + [1], {}, 5.0).p99_wait == 0.0  # one call in 101


def test_summariser_calls_are_in_the_call_only_while_the_harness_waits() -> None:
    summarizer = MeteredSummarizer()

    request = SummarizeRequest("system", "Conversation:\n[user]\nhello", "m")
    steps = iter([3, 4])
    summarizer.steps_done = lambda: next(steps)

    async def twice() -> None:
        await summarizer.summarize(request)
        token = IN_CALL.set(True)
        try:
            await summarizer.summarize(request)
        finally:
            IN_CALL.reset(token)

    anyio.run(twice)
    assert (summarizer.in_call, summarizer.off_turn, len(summarizer.recorder.calls)) == (1, 1, 2)
    assert summarizer.made_after == [3, 4]


def test_a_key_the_worker_refuses_is_a_row_not_an_error(small: Session) -> None:
    assert supported(RECOMMENDED)
    assert not supported({**RECOMMENDED, "no_such_key": 1})
    rows = measure([small], 16_000, 2_000, [30.0], modes=[WorkerMode("future", {"no_such_key": 1})])
    assert [r.supported for r in rows] == [False]
    assert cells(rows[0])[:2] == ("future", NOT_SUPPORTED)


def test_exact_rows_on_a_small_generated_session(small: Session) -> None:
    modes: list[WorkerMode | Peer] = [WORKER_MODES[0], PEERS_BY_NAME["Claude Code"], PEERS_BY_NAME["raw history"]]
    rows = {(r.mode, r.latency): r for r in measure([small], 16_000, 2_000, [5.0, 120.0], modes=modes)}

    def facts(row: Row) -> tuple[Any, ...]:
        return (len(row.clock.calls), row.clock.waited, row.clock.total_wait, row.clock.p99_wait,
                row.ledger.overflows, row.ledger.recall_found, row.ledger.recall_total,
                round(row.ledger.billed_automatic, 1), row.ledger.rewrites, row.in_call, row.off_turn)

    worker = "worker: recommended (inline)"
    assert facts(rows[worker, 5.0]) == (52, 7, 35.0, 5.0, 0, 12, 45, 101792.4, 7, 7, 0)
    assert facts(rows[worker, 120.0]) == (52, 7, 840.0, 120.0, 0, 12, 45, 101792.4, 7, 7, 0)
    assert facts(rows["Claude Code", 120.0]) == (52, 4, 480.0, 120.0, 0, 1, 45, 107235.3, 4, 4, 0)
    assert facts(rows["raw history", 120.0]) == (52, 0, 0.0, 0.0, 41, 0, 45, 19305.4, 0, 0, 0)
    # the session's own times between model calls: the same agent time in every mode
    assert round(rows[worker, 5.0].clock.agent_seconds, 3) == round(rows["raw history", 5.0].clock.agent_seconds, 3) == 1833.886


def test_the_kit_hook_in_the_turn_loop_is_sent_and_billed(small: Session) -> None:
    row = measure([small], 16_000, 2_000, [30.0], modes=[WORKER_MODES[0]], hook=GuidanceHook())[0]
    assert (len(row.clock.calls), row.clock.waited, row.clock.total_wait, row.ledger.overflows,
            row.ledger.recall_found, round(row.ledger.billed_automatic, 1), row.ledger.rewrites,
            row.in_call) == (52, 7, 210.0, 0, 19, 113571.9, 21, 7)
    assert [c.index for c in row.clock.calls if c.wait] == [21, 39, 52, 71, 86, 88, 112]


def test_the_command_prints_a_table_per_latency(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sessions", "multi-cache-invalidation", "--window", "16000", "--max-output", "2000",
                 "--summarizer-latency", "5,30", "--modes", "Codex CLI"]) == 0
    out = capsys.readouterr().out
    assert "### L = 5 s, 16000/2000 (1 sessions)" in out and "### L = 30 s, 16000/2000" in out
    assert out.count("| Codex CLI") == 2
    assert main(["--sessions", "multi-cache-invalidation", "--window", "16000", "--max-output", "2000",
                 "--summarizer-latency", "30", "--modes", "raw history", "--per-session"]) == 0
    out = capsys.readouterr().out
    assert "| multi-cache-invalidation | recorded   |   " in out and "| (none waited) |" in out
    assert main(["--modes", "nobody"]) == 2


def test_a_job_runs_after_its_call_and_its_summary_is_ready_l_per_summariser_call_later() -> None:
    clock = SimulatedClock()
    sessions = DelayedSessions(MemorySessionStore(), clock)
    made = [0]
    runner = SimulatedJobs(sessions, 30.0, lambda: made[0])
    record = RememberedCompaction(summary="s", head_len=4, head_digest="d", anchor_len=0)

    async def job() -> bool:
        made[0] += 2  # two summariser calls, one after the other
        await sessions.put("ahead:x", record)
        return True

    assert runner.start("k", job, 60.0) and not runner.start("k", job, 60.0)
    runner.run_queued(answered_at=100.0)
    assert not runner.start("k", job, 60.0)  # settled: never started again
    clock.now = 159.9
    assert anyio.run(sessions.get, "ahead:x") is None
    clock.now = 160.0
    assert anyio.run(sessions.get, "ahead:x") == record


def test_compaction_ahead_waits_for_nothing_and_its_summaries_arrive_on_the_clock(small: Session) -> None:
    rows = {r.latency: r for r in measure([small], 16_000, 2_000, [5.0, 120.0], modes=[WORKER_MODES[1]])}

    def facts(row: Row) -> tuple[Any, ...]:
        return (len(row.clock.calls), row.clock.waited, row.clock.total_wait, row.ledger.overflows,
                row.ledger.recall_found, row.ledger.recall_total, round(row.ledger.billed_automatic, 1),
                row.ledger.rewrites, row.in_call, row.off_turn)

    assert facts(rows[5.0]) == (52, 0, 0.0, 0, 14, 45, 97995.0, 7, 0, 1)
    # At 120 s a summary is ready later: the readiness of the jobs changes what later calls keep.
    assert facts(rows[120.0]) == (52, 0, 0.0, 0, 14, 45, 99701.7, 7, 0, 1)
