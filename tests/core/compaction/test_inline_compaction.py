"""Compaction inside `context::assemble` (spec 03 §5; Examples 8, 9, 10, 19) and the round trip."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any

import pytest
from compaction_support import (
    AC,
    FR,
    A,
    C,
    FakeSummarizer,
    MemoryLeaseStore,
    U,
    X,
    decoded,
    history,
)

from context_manager.adapters.fs_lease_store import FsLeaseStore
from context_manager.core.compaction import lease
from context_manager.core.compaction.inline import InlineCompaction, try_compact
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.handlers.assemble import handle
from context_manager.handlers.context import HandlerContext
from context_manager.ports import LeaseRecord, ManualClock, SummarizerFailed
from context_manager.wire.decode import ModelInput, ModelLimits, decode_messages
from context_manager.wire.errors import HandlerError

SMALL = {"id": "small", "limits": {"context_window": 5000, "max_output_tokens": 500}}
GOAL = "## Goal\n- ship the feature"
EXAMPLE_10 = history(U(X(3000)), A("r0"), U(X(3000)), A("r1"), U("latest question"), A("latest answer"))
EXAMPLE_10_KEY = "6a124d15295145fb5a0a412a23b207b09469e6f32165dd8ec2aab31f69c7d683"


def context(summarizer, store=None, clock=None, config=DEFAULT_CONFIG):
    return HandlerContext(config=config, summarizer=summarizer,
                          lease_store=store if store is not None else MemoryLeaseStore(),
                          clock=clock or ManualClock(1_000_000))


def assemble(payload, ctx):
    return asyncio.run(handle(payload, ctx))


def request(messages=EXAMPLE_10, system_prompt="Base prompt.", **options):
    payload: dict[str, Any] = {"messages": messages, "model": SMALL}
    if system_prompt is not None:
        payload["system_prompt"] = system_prompt
    if options:
        payload["options"] = options
    return payload


# --- try_compact on its own ----------------------------------------------------------------


@dataclass
class _Request:
    view: list
    sizes: list
    request_messages: list
    lease_key: str | None = None
    previous_summary: str | None = None
    usable: int = 4000
    tail_turns: int = 2
    model: ModelInput = ModelInput("small", None, ModelLimits(5000, 500))
    estimator: Any = HEURISTIC
    config: WorkerConfig = DEFAULT_CONFIG
    early_headroom: int | None = None
    summarizer_budget: int | None = None  # CompactionRequest's: None gives the summariser ``usable``
    chunk_budget: int | None = None
    tail_budget: int | None = None
    history_ceiling: int | None = None
    summarized: bool = False
    conversation: Any = None


@dataclass
class _Deps:
    summarizer: Any
    lease_store: Any
    clock: Any = None
    log: Any = None
    resolver: Any = None

    def __post_init__(self):
        import logging

        self.clock = self.clock or ManualClock(7)
        self.log = self.log or logging.getLogger("test")


def direct(view_messages, **fields):
    view = decoded(*view_messages)
    return _Request(view=view, sizes=[HEURISTIC.message(m) for m in view], request_messages=view,
                    **fields)


def test_try_compact_returns_the_head_and_releases_the_lease():
    summarizer, store = FakeSummarizer(replies=[GOAL, GOAL]), MemoryLeaseStore()
    req = direct((U(X(3000)), A("r0"), U(X(3000)), A("r1"), U("latest question"), A("latest answer")))
    outcome = asyncio.run(try_compact(req, _Deps(summarizer, store)))
    assert outcome == InlineCompaction(summary=GOAL, head_len=3, tail_start_view=3, tokens_before=6065)
    assert summarizer.calls == 2
    assert {key for _, key in store.log} == {EXAMPLE_10_KEY} and store.records == {}


def test_try_compact_skips_whole_head_and_empty_selections_after_taking_the_lease():
    for messages, fields in [
        ((AC("c1", "coder::read-file"), FR("c1", "coder::read-file", X(6000))), {}),  # no user
        ((U(X(3000)), A("r0"), U(X(3000))), {"tail_turns": 0}),  # whole head
        ((U("a"), A("b")), {}),  # everything fits
        ((), {}),  # empty view
    ]:
        summarizer, store = FakeSummarizer(), MemoryLeaseStore()
        assert asyncio.run(try_compact(direct(messages, **fields), _Deps(summarizer, store))) is None
        assert summarizer.calls == 0
        assert [op for op, _ in store.log] == ["get", "swap", "get", "set"] and store.records == {}


def test_try_compact_uses_the_callers_lease_key_and_the_request_list():
    store = MemoryLeaseStore()
    req = direct((U(X(3000)), A("r0"), U(X(3000))), lease_key="session-42")
    asyncio.run(try_compact(req, _Deps(FakeSummarizer(replies=["S"] * 3), store)))
    assert {key for _, key in store.log} == {"session-42"}


def test_try_compact_without_a_summariser_does_nothing():
    store = MemoryLeaseStore()
    req = direct((U(X(3000)), A("r0"), U(X(3000))))
    assert asyncio.run(try_compact(req, _Deps(None, store))) is None
    assert store.log == []


def test_an_early_compaction_runs_only_when_it_removes_twice_its_headroom_more_than_waiting():
    # Both tail budgets (2,000 full-window, max(2,000 - 800, 1,000) early) keep the same two
    # messages, so compacting early removes exactly what waiting would (6,065 tokens): it pays
    # only without headroom.
    eager = replace(DEFAULT_CONFIG, eager_compaction_at=0.8)
    messages = (U(X(3000)), A("r0"), U(X(3000)), A("r1"), U("latest question"), A("latest answer"))
    outcome = asyncio.run(try_compact(direct(messages, config=eager, early_headroom=0),
                                      _Deps(FakeSummarizer(replies=[GOAL, GOAL]), None)))
    assert outcome == InlineCompaction(summary=GOAL, head_len=3, tail_start_view=3, tokens_before=6065)
    summarizer = FakeSummarizer(replies=[GOAL, GOAL])
    assert asyncio.run(try_compact(direct(messages, config=eager, early_headroom=1),
                                   _Deps(summarizer, None))) is None
    assert summarizer.calls == 0


def test_an_early_compaction_that_does_not_pay_takes_no_lease():
    # Decided before the lease: a warm call past the eager share costs no lease round trip.
    eager = replace(DEFAULT_CONFIG, eager_compaction_at=0.8)
    messages = (U(X(3000)), A("r0"), U(X(3000)), A("r1"), U("latest question"), A("latest answer"))
    store = MemoryLeaseStore()
    assert asyncio.run(try_compact(direct(messages, config=eager, early_headroom=1),
                                   _Deps(FakeSummarizer(), store))) is None
    assert store.log == []
    assert asyncio.run(try_compact(direct(messages, config=eager, early_headroom=0),
                                   _Deps(FakeSummarizer(replies=[GOAL, GOAL]), store))) is not None
    assert [op for op, _ in store.log] == ["get", "swap", "get", "set"] and store.records == {}


# --- Example 10 through assemble ---------------------------------------------------------------


def test_example_10_two_bounded_calls_and_the_lease_file_is_gone(tmp_path):
    summarizer = FakeSummarizer(replies=[GOAL, GOAL])
    store = FsLeaseStore(tmp_path)
    response = assemble(request(), context(summarizer, store))
    assert response["system_prompt"] == "Base prompt.\n\n# Conversation summary\n\n" + GOAL
    assert response["breakdown"]["system_prompt_tokens"] == 16
    assert response["messages"] == decoded(U(X(3000)), A("r0"), U(X(3000)), A("r1"),
                                           U("latest question"), A("latest answer"))[3:]
    assert response["token_count"] == 105 and response["usable"] == 4000
    applied = response["applied"]
    assert applied["initial_token_count"] == 6157
    assert {k: applied[k] for k in ("compacted", "summary", "tail_start_index", "tokens_before",
                                     "summarized_head_tokens")} == {
        "compacted": True, "summary": GOAL, "tail_start_index": 3, "tokens_before": 6065,
        "summarized_head_tokens": 6065}
    assert summarizer.calls == 2
    assert [p.name for p in (tmp_path / "context_lease").iterdir()] == [".lock"]


def test_example_10_twice_without_persisting_costs_four_calls():
    summarizer = FakeSummarizer(replies=[GOAL] * 4)
    ctx = context(summarizer)
    first = assemble(request(), ctx)
    second = assemble(request(), ctx)
    assert first == second and summarizer.calls == 4


def test_example_10_with_a_previous_summary():
    summarizer = FakeSummarizer(replies=[GOAL, "## Goal\n- NEW"])
    response = assemble(request(previous_summary="OLD-ANCHOR-TEXT", system_prompt=None),
                        context(summarizer))
    first, second = summarizer.requests
    assert "<previous-summary>\nOLD-ANCHOR-TEXT\n</previous-summary>" in first.system_prompt
    assert len(first.system_prompt.encode()) == 1475 and len(first.user_prompt.encode()) == 14179
    assert "<previous-summary>\n" + GOAL + "\n</previous-summary>" in second.system_prompt
    assert response["system_prompt"] == "# Conversation summary\n\n## Goal\n- NEW"
    assert "OLD-ANCHOR-TEXT" not in response["system_prompt"]
    # the initial prompt "# Conversation summary\n\nOLD-ANCHOR-TEXT" counted 9 tokens
    assert response["applied"]["initial_token_count"] == 6154 + 9


# --- Example 9: the reported index counts the customs ------------------------------------------


def test_example_9_tail_start_index_is_a_request_index():
    messages = history(C("ui_marker"), U(X(3000)), A("r0"), C("ui_marker"), U(X(3000)), A("r1"),
                       U("latest question"), A("latest answer"))
    summarizer, store = FakeSummarizer(replies=["S"] * 4), MemoryLeaseStore()
    response = assemble(request(messages), context(summarizer, store))
    applied = response["applied"]
    assert (applied["tail_start_index"], applied["tokens_before"]) == (5, 6065)
    assert response["messages"] == decoded(*[m for m in messages])[5:]
    # the default key hashes the request as sent, customs included
    assert {key for _, key in store.log} == {lease.default_lease_key(decoded(*messages))}
    assert all("[custom]" not in r.user_prompt for r in summarizer.requests)


# --- Example 8: nothing to summarise, emergency reduction takes over ------------------------


def test_example_8_no_user_message_goes_to_emergency_reduction():
    messages = history(AC("c1", "coder::read-file"), FR("c1", "coder::read-file", X(6000)))
    summarizer, store = FakeSummarizer(), MemoryLeaseStore()
    response = assemble(request(messages, system_prompt=None), context(summarizer, store))
    assert summarizer.calls == 0
    assert [op for op, _ in store.log] == ["get", "swap", "get", "set"] and store.records == {}
    assert response["applied"]["compacted"] is False and response["applied"]["pruned"] is True
    assert response["token_count"] <= 4000
    for field in ("summary", "tail_start_index", "tokens_before", "summarized_head_tokens"):
        assert field not in response["applied"]


# --- Example 19: busy lease or failed summariser -> context/overflow ----------------------------


OVERFLOW = "handler error: context/overflow: assembled context requires 6154 tokens but usable budget is 4000"


def test_example_19_busy_lease():
    foreign = LeaseRecord("foreign-holder", 1_000_000)
    store = MemoryLeaseStore({(lease.SCOPE, EXAMPLE_10_KEY): foreign})
    summarizer = FakeSummarizer()
    with pytest.raises(HandlerError) as failure:
        assemble(request(system_prompt=None), context(summarizer, store))
    assert failure.value.wire_message == OVERFLOW
    assert summarizer.calls == 0
    assert store.records == {(lease.SCOPE, EXAMPLE_10_KEY): foreign}


@pytest.mark.parametrize("failure_mode", [
    SummarizerFailed("provider exploded"),
    RuntimeError("provider exploded"),
    "  ",
])
def test_example_19_failed_summariser(failure_mode):
    summarizer, store = FakeSummarizer(replies=[failure_mode]), MemoryLeaseStore()
    with pytest.raises(HandlerError) as failure:
        assemble(request(system_prompt=None), context(summarizer, store))
    assert failure.value.wire_message == OVERFLOW
    assert summarizer.calls == 1
    assert [op for op, _ in store.log] == ["get", "swap", "get", "set"] and store.records == {}


def test_a_hanging_summariser_ends_at_the_pipeline_deadline():
    config = replace(DEFAULT_CONFIG, summarizer_timeout_ms=50)
    summarizer, store = FakeSummarizer(delay=30.0), MemoryLeaseStore()
    with pytest.raises(HandlerError) as failure:
        assemble(request(system_prompt=None), context(summarizer, store, config=config))
    assert failure.value.wire_message == OVERFLOW
    assert store.records == {}


def test_compaction_not_allowed_never_touches_the_lease():
    summarizer, store = FakeSummarizer(), MemoryLeaseStore()
    with pytest.raises(HandlerError):
        assemble(request(system_prompt=None, allow_compaction=False), context(summarizer, store))
    assert summarizer.calls == 0 and store.log == []


# --- §5.7 the round trip ------------------------------------------------------------------


def test_round_trip_updates_the_summary_instead_of_starting_over(tmp_path):
    store = FsLeaseStore(tmp_path)
    summarizer = FakeSummarizer(respond=lambda r: "## Goal\n- summary " + str(len(summarizer.requests)))
    ctx = context(summarizer, store)

    # Turn 1: over budget -> compacts; the caller persists summary and boundary.
    stored = list(EXAMPLE_10)
    first = assemble(request(stored), ctx)
    applied = first["applied"]
    assert applied["compacted"] is True and applied["tail_start_index"] == 3
    summary = applied["summary"]
    assert summary == "## Goal\n- summary 2"
    window = stored[applied["tail_start_index"]:]

    # Turn 2: the window plus a small exchange fits: the summary is carried, nothing is called.
    window = window + history(U("thanks"), A("you are welcome"), first_timestamp=7)
    calls = summarizer.calls
    second = assemble(request(window, previous_summary=summary), ctx)
    assert second["applied"]["compacted"] is False
    assert second["system_prompt"] == "Base prompt.\n\n# Conversation summary\n\n" + summary
    assert second["messages"] == decode_messages(window)
    assert summarizer.calls == calls

    # Turn 3: the window grows over budget again -> the summary is updated, not restarted.
    window = window + history(U(X(4000)), A("r9"), U("newest"), A("newest answer"), first_timestamp=9)
    third = assemble(request(window, previous_summary=summary), ctx)
    assert third["applied"]["compacted"] is True
    update = summarizer.requests[calls]
    assert f"<previous-summary>\n{summary}\n</previous-summary>" in update.system_prompt
    new_summary = third["applied"]["summary"]
    assert new_summary != summary and summary not in third["system_prompt"]
    assert third["system_prompt"] == "Base prompt.\n\n# Conversation summary\n\n" + new_summary
    # the 4000-token message went into the summary; its reply starts the verbatim tail
    tail_start = third["applied"]["tail_start_index"]
    assert tail_start == 6 and window[tail_start]["content"][0]["text"] == "r9"
    assert third["messages"] == decode_messages(window[tail_start:])
    assert third["token_count"] <= third["usable"]
    assert [p.name for p in (tmp_path / "context_lease").iterdir()] == [".lock"]
