"""Fault injection at the ports, in process: summarisers that hang, fail, answer nothing or the
wrong type, and lease stores that cannot be used. The documented outcome each time: assemble
does not compact, falls through to emergency reduction, answers, and holds no lease."""

from __future__ import annotations

import errno
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from context_manager import call
from context_manager.core.compaction.lease import SCOPE
from context_manager.ports import LeaseRecord, ManualClock, SummarizerFailed

from .faults import assemble_request, lease_records
from .support import (
    FakeSummarizer,
    FullDiskLeaseStore,
    HangingSummarizer,
    MemoryLeaseStore,
    MemoryState,
    context,
    run,
    stateful_context,
)


def fell_through(response: dict[str, Any]) -> bool:
    applied = response["applied"]
    return (applied["compacted"], applied["pruned"]) == (False, True) and \
        response["token_count"] <= response["usable"]


def test_the_reference_history_compacts_with_a_working_summariser() -> None:
    store = MemoryLeaseStore()
    summarizer = FakeSummarizer()
    response = run("context::assemble", assemble_request(), context(summarizer=summarizer,
                                                                   lease_store=store))
    assert response["applied"]["compacted"] is True
    assert summarizer.calls >= 1 and store.records == {}


def test_a_hanging_summariser_is_abandoned_at_the_timeout() -> None:
    store = MemoryLeaseStore()
    hanging = HangingSummarizer()
    started = time.monotonic()
    response = run("context::assemble", assemble_request(),
                   context({"summarizer_timeout_ms": 300}, summarizer=hanging, lease_store=store))
    elapsed = time.monotonic() - started
    assert hanging.started == 1
    assert fell_through(response)
    assert 0.3 <= elapsed < 2.0
    assert store.records == {}  # the lease was released


def test_a_hanging_library_summariser_function_is_abandoned_at_the_timeout(tmp_path: Path) -> None:
    def sleepy(system: str, user: str, model: dict[str, Any]) -> str:
        time.sleep(3)
        return "late"

    started = time.monotonic()
    response = call("context::assemble", assemble_request(),
                    config={"summarizer_timeout_ms": 300, "lease_dir": str(tmp_path)},
                    summarizer=sleepy)
    assert time.monotonic() - started < 2.0
    assert fell_through(response)
    assert lease_records(tmp_path) == []


@pytest.mark.parametrize("reply", ["", "   \n\t"])
def test_an_empty_summary_means_no_compaction(reply: str) -> None:
    store = MemoryLeaseStore()
    summarizer = FakeSummarizer(reply=lambda request: reply)
    response = run("context::assemble", assemble_request(),
                   context(summarizer=summarizer, lease_store=store))
    assert summarizer.calls == 1
    assert fell_through(response)
    assert store.records == {}


class FailingSummarizer:
    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    async def summarize(self, request: Any) -> str:
        self.calls += 1
        raise self.error


@pytest.mark.parametrize("error", [SummarizerFailed("router error (router/upstream): boom"),
                                   RuntimeError("unexpected"), ConnectionResetError("closed early")],
                         ids=["failed", "unexpected exception", "channel closed early"])
def test_a_failing_summariser_means_no_compaction(error: Exception) -> None:
    store = MemoryLeaseStore()
    failing = FailingSummarizer(error)
    response = run("context::assemble", assemble_request(),
                   context(summarizer=failing, lease_store=store))
    assert failing.calls == 1
    assert fell_through(response)
    assert store.records == {}


@pytest.mark.parametrize("reply", [None, 42, b"bytes"], ids=["None", "int", "bytes"])
def test_a_library_summariser_returning_no_text_means_no_compaction(reply: Any, tmp_path: Path) -> None:
    response = call("context::assemble", assemble_request(), config={"lease_dir": str(tmp_path)},
                    summarizer=lambda system, user, model: reply)
    assert fell_through(response)
    assert lease_records(tmp_path) == []


def test_a_library_summariser_that_raises_means_no_compaction(tmp_path: Path) -> None:
    def broken(system: str, user: str, model: dict[str, Any]) -> str:
        raise OSError(errno.ECONNRESET, "connection reset")

    response = call("context::assemble", assemble_request(), config={"lease_dir": str(tmp_path)},
                    summarizer=broken)
    assert fell_through(response)


def test_a_lease_dir_occupied_by_a_regular_file_skips_compaction(tmp_path: Path) -> None:
    occupied = tmp_path / "leases"
    occupied.write_text("not a directory")
    calls: list[str] = []

    def summarizer(system: str, user: str, model: dict[str, Any]) -> str:
        calls.append(user)
        return "Summary."

    response = call("context::assemble", assemble_request(), config={"lease_dir": str(occupied)},
                    summarizer=summarizer)
    assert fell_through(response)
    assert calls == []  # an unusable store reads as "busy": the summariser is never called
    assert occupied.read_text() == "not a directory"


def test_a_full_disk_lease_store_skips_compaction() -> None:
    summarizer = FakeSummarizer()
    response = run("context::assemble", assemble_request(),
                   context(summarizer=summarizer, lease_store=FullDiskLeaseStore()))
    assert fell_through(response)
    assert summarizer.calls == 0


def test_a_stale_lease_blocks_only_until_its_ttl() -> None:
    """A lease left by a crashed holder is honoured while young and taken over once expired."""
    from context_manager.core.compaction.lease import default_lease_key
    from context_manager.wire.decode import decode_messages

    request = assemble_request()
    key = default_lease_key(decode_messages(request["messages"]))
    now_ms = int(time.time() * 1000)
    store = MemoryLeaseStore()
    store.records[(SCOPE, key)] = LeaseRecord("crashed-holder", now_ms - 1000)
    young = run("context::assemble", request,
                context({"lease_ttl_secs": 60}, summarizer=FakeSummarizer(), lease_store=store))
    assert young["applied"]["compacted"] is False
    store.records[(SCOPE, key)] = LeaseRecord("crashed-holder", now_ms - 61_000)
    expired = run("context::assemble", request,
                  context({"lease_ttl_secs": 60}, summarizer=FakeSummarizer(), lease_store=store))
    assert expired["applied"]["compacted"] is True
    assert store.records == {}


# ---------------------------------------------------------------- the engine's state store down mid-call

STATEFUL = {"lease_store": "state", "session_store": "state", "summary_reuse": True,
            "count_calibration": "usage", "anchor_messages": 1, "lease_ttl_secs": 60}


def _stateful_call(state: MemoryState, clock: ManualClock, summarizer: FakeSummarizer) -> dict[str, Any]:
    ctx = stateful_context(STATEFUL, summarizer, state, clock=clock)
    return run("context::assemble", {**assemble_request(), "options": {"lease_key": "session-7"}}, ctx)


def test_a_state_store_going_down_at_any_point_of_a_compaction_never_fails_the_call() -> None:
    """The store answers the first k state calls of a compacting call, then is down, for every k
    from none to all of them. Every call answers within the budget: compacted when the summary
    was made, fallen through to emergency reduction when the lease could not be taken. Once the
    store is back, a lease the failed release left behind holds off compaction only until its
    TTL; with none left the next call compacts (or reuses the remembered summary) at once."""
    control_state = MemoryState()
    control = _stateful_call(control_state, ManualClock(1_000_000), FakeSummarizer())
    assert control["applied"]["compacted"] is True
    total = control_state.calls
    assert total >= 4  # lease claim, session lookup, remembering, release at least
    outcomes = Counter()
    for answered in range(total + 1):
        state, clock, summarizer = MemoryState(), ManualClock(1_000_000), FakeSummarizer()
        state.down_after = answered
        response = _stateful_call(state, clock, summarizer)
        assert response["token_count"] <= response["usable"]
        assert response["applied"]["compacted"] or fell_through(response), (answered, response["applied"])
        outcomes["compacted" if response["applied"]["compacted"] else "fell through"] += 1
        state.down_after = None  # the store is back
        left = dict(state.store.groups.get(SCOPE, {}))
        clock.advance(1000)
        after = _stateful_call(state, clock, summarizer)
        reduced = after["applied"]["compacted"] or after["applied"].get("summary_reused", False)
        if left:
            assert not reduced, answered  # the left lease is honoured while younger than its TTL
            clock.advance(60_000)
            after = _stateful_call(state, clock, summarizer)
            reduced = after["applied"]["compacted"] or after["applied"].get("summary_reused", False)
        assert reduced, (answered, after["applied"])
        assert state.store.groups.get(SCOPE, {}) == {}
    assert outcomes["compacted"] >= 1 and outcomes["fell through"] >= 1, outcomes


def test_a_state_store_down_for_a_whole_conversation_changes_nothing_but_the_reduction() -> None:
    """With the state store down from the start, every call of a growing conversation answers
    as a one-process worker with the memory stores would when no lease can be taken: emergency
    reduction, never an error."""
    state, clock = MemoryState(), ManualClock(1_000_000)
    state.down_after = 0
    summarizer = FakeSummarizer()
    for _ in range(3):
        response = _stateful_call(state, clock, summarizer)
        assert fell_through(response)
        clock.advance(1000)
    assert summarizer.calls == 0
