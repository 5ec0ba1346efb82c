"""``compact_ahead_at``: the summary computed off the call, used by a later call that must compact,
and never waited for (``core.compaction.ahead``). Jobs run when the test says (``ManualRunner``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from compaction_support import FakeSummarizer, MemoryLeaseStore

from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.config.parse import parse_config_value
from context_manager.core.compaction import ahead, lease
from context_manager.core.compaction.recall import session_key
from context_manager.core.compaction.summarize import request_tokens
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.handlers.assemble import handle
from context_manager.handlers.context import HandlerContext
from context_manager.ports import LeaseRecord, ManualClock, ModelBudget, RouterModel
from context_manager.wire.codec import dumps_wire
from context_manager.wire.decode import decode_messages
from context_manager.wire.errors import ContextManagerError, error_envelope

AHEAD = {"compact_ahead_at": 0.7}
# usable 8000: 0.7 of it is 5600 tokens; each round is an assistant of 3,000 letters and a result.
MODEL = {"id": "m", "limits": {"context_window": 10000, "max_output_tokens": 1000}}


class ManualRunner:
    """The ``JobRunner`` port for tests: keeps the jobs until the test runs or drops them."""

    def __init__(self) -> None:
        self.jobs: list[tuple[str, Callable[[], Awaitable[None]], float]] = []
        self.started: list[str] = []

    def start(self, key: str, job: Callable[[], Awaitable[None]], timeout_s: float) -> bool:
        if any(k == key for k, _, _ in self.jobs):
            return False
        self.jobs.append((key, job, timeout_s))
        self.started.append(key)
        return True

    def run_all(self) -> None:
        jobs, self.jobs = self.jobs, []
        for _, job, _ in jobs:
            asyncio.run(job())

    def drop_all(self) -> None:
        """The process ends: what it had not run is gone."""
        self.jobs = []


def session(rounds: int, first: str = "fix the bug") -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": first}], "timestamp": 1}]
    for i in range(rounds):
        messages.append({"role": "assistant", "stop_reason": "function_call", "model": "m", "provider": "p",
                         "timestamp": 2 + 2 * i,
                         "content": [{"type": "text", "text": f"step {i} " + "z" * 3000},
                                     {"type": "function_call", "id": f"c{i}", "function_id": "fs::read"}]})
        messages.append({"role": "function_result", "function_call_id": f"c{i}", "function_id": "fs::read",
                         "content": [{"type": "text", "text": "ok"}], "timestamp": 3 + 2 * i})
    return messages


def payload(messages: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "system_prompt": "base", "messages": messages}
    if options:
        body["options"] = options
    return body


class World:
    """One process: its stores, summariser, clock and runner (the stores may be shared)."""

    def __init__(self, config: dict[str, Any], *, leases: MemoryLeaseStore | None = None,
                 sessions: MemorySessionStore | None = None, clock: ManualClock | None = None) -> None:
        self.config = parse_config_value(config)
        self.summarizer = FakeSummarizer(respond=lambda r: f"AHEAD SUMMARY {len(self.summarizer.requests)}")
        self.leases = leases if leases is not None else MemoryLeaseStore()
        self.sessions = sessions if sessions is not None else MemorySessionStore()
        self.clock = clock if clock is not None else ManualClock(1_000)
        self.runner = ManualRunner()
        self.resolver: Any = None

    def context(self) -> HandlerContext:
        return HandlerContext(config=self.config, summarizer=self.summarizer, lease_store=self.leases,
                              clock=self.clock, session_store=self.sessions, ahead_runner=self.runner,
                              resolver=self.resolver, log=logging.getLogger("context_manager.test"))

    def answer(self, body: dict[str, Any]) -> str:
        try:
            return dumps_wire(asyncio.run(handle(body, self.context()))).decode()
        except ContextManagerError as exc:
            return "error: " + error_envelope(exc)[1]

    def result(self, body: dict[str, Any]) -> dict[str, Any]:
        return asyncio.run(handle(body, self.context()))

    def record(self, messages: list[dict[str, Any]], lease_key: str | None = None) -> Any:
        key = ahead.record_key(session_key(decode_messages(messages), lease_key))
        return asyncio.run(self.sessions.peek(key))


# --- starting a job ---------------------------------------------------------------------------


def test_a_call_past_the_share_starts_one_job_and_answers_as_without_the_key() -> None:
    world, control = World(AHEAD), World({})
    body = payload(session(7))
    answered = world.answer(body)
    assert answered == control.answer(body)
    assert '"compacted":false' in answered and '"token_count":5921' in answered
    assert len(world.runner.jobs) == 1 and world.summarizer.calls == 0
    assert world.runner.jobs[0][2] == 300.0  # a job never outlives the lease TTL
    # the same session again while the job is pending: still one job
    assert world.answer(body) == answered
    assert len(world.runner.started) == 1
    world.runner.run_all()
    assert world.summarizer.calls == 1
    record = world.record(body["messages"])
    assert (record.summary, record.head_len, record.anchor_len, record.retained_items) == (
        "AHEAD SUMMARY 1", 13, 0, None)
    # the lease is free again and summary_reuse's own record of the session is untouched
    assert world.leases.records == {}
    assert asyncio.run(world.sessions.peek(session_key(decode_messages(body["messages"]), None))) is None


def test_a_call_under_the_share_or_that_compacted_starts_none() -> None:
    world = World(AHEAD)
    assert '"token_count":5078' in world.answer(payload(session(6)))  # 5078 <= floor(0.7 * 8000)
    assert world.runner.started == []
    world = World({**AHEAD, "summarizer_fallback": "extractive"})
    assert '"compacted":true' in world.answer(payload(session(11)))  # the extractive no-wait path
    assert world.runner.started == []


def test_a_preview_never_starts_one() -> None:
    world = World(AHEAD)
    world.answer(payload(session(7), preview_only=True))
    assert world.runner.started == [] and world.summarizer.calls == 0 and world.leases.log == []


def test_without_a_session_store_or_summariser_no_job_starts() -> None:
    world = World(AHEAD)
    ctx = world.context()
    ctx.session_store = None
    asyncio.run(handle(payload(session(7)), ctx))
    ctx = world.context()
    ctx.summarizer = None
    asyncio.run(handle(payload(session(7)), ctx))
    assert world.runner.started == []


# --- using the ready summary -----------------------------------------------------------------


def test_the_next_over_budget_call_uses_the_ready_summary_without_the_summariser() -> None:
    world = World(AHEAD)
    world.answer(payload(session(7)))
    world.runner.run_all()
    assert world.summarizer.calls == 1
    result = world.result(payload(session(11)))
    applied = result["applied"]
    assert world.summarizer.calls == 1  # nothing summarised on the call's path
    assert (applied["compacted"], applied["summary"], applied["tail_start_index"]) == (True, "AHEAD SUMMARY 1", 13)
    assert applied["tokens_before"] == applied["summarized_head_tokens"] == 5077
    assert "AHEAD SUMMARY 1" in result["system_prompt"]
    assert result["messages"] == decode_messages(session(11))[13:]
    assert result["token_count"] <= result["usable"] == 8000
    assert world.runner.started == [world.runner.started[0]]  # a call that compacted starts none


def test_a_history_that_no_longer_extends_the_head_does_not_use_it() -> None:
    world = World({**AHEAD, "overflow_fallback": "drop_oldest"})
    world.answer(payload(session(7)))
    world.runner.run_all()
    changed = session(11)
    changed[3]["content"][0]["text"] = "step 1 rewritten"  # inside the summarised head
    applied = world.result(payload(changed))["applied"]
    assert applied["compacted"] is False and applied["dropped_messages"] > 0
    assert world.summarizer.calls == 1


def test_the_previous_summary_caller_gets_a_summary_built_on_its_own() -> None:
    world = World(AHEAD)
    world.answer(payload(session(7), previous_summary="EARLIER WORK"))
    world.runner.run_all()
    assert world.summarizer.calls == 1
    assert "EARLIER WORK" in world.summarizer.requests[0].system_prompt
    result = world.result(payload(session(11), previous_summary="EARLIER WORK"))
    applied = result["applied"]
    assert (applied["compacted"], applied["summary"], applied["tail_start_index"]) == (True, "AHEAD SUMMARY 1", 13)
    assert world.summarizer.calls == 1
    # another previous summary: the ready summary does not build on it
    other = World({**AHEAD, "overflow_fallback": "drop_oldest"}, sessions=world.sessions, leases=world.leases)
    applied = other.result(payload(session(11), previous_summary="SOMETHING ELSE"))["applied"]
    assert applied["compacted"] is False and other.summarizer.calls == 0


def test_a_round_trip_caller_persists_the_ready_summary_and_goes_on_from_its_tail() -> None:
    world = World({**AHEAD, "summary_reuse": True})
    world.answer(payload(session(7)))
    world.runner.run_all()
    first = world.result(payload(session(11)))["applied"]
    assert (first["compacted"], first["tail_start_index"]) == (True, 13)
    # summary_reuse remembered it: the whole history again is answered as its round trip
    again = world.result(payload(session(12)))["applied"]
    assert again["summary_reused"] is True and again["reused_from_index"] == 13
    assert world.summarizer.calls == 1


# --- the no-wait path ------------------------------------------------------------------------


def test_a_call_that_must_compact_before_the_job_is_ready_does_not_wait() -> None:
    world = World({**AHEAD, "summarizer_fallback": "extractive"})
    world.answer(payload(session(7)))
    assert len(world.runner.jobs) == 1  # started, not run
    applied = world.result(payload(session(11)))["applied"]
    assert (applied["compacted"], applied["summary_kind"]) == (True, "extractive")
    assert world.summarizer.calls == 0
    # the job finishes later; the next compaction uses it
    world.runner.run_all()
    applied = world.result(payload(session(11)))["applied"]
    assert (applied["compacted"], applied["summary_kind"], applied["summary"]) == (True, "llm", "AHEAD SUMMARY 1")


def test_without_the_fallback_the_no_wait_path_is_the_configuration_without_a_summariser() -> None:
    world = World(AHEAD)
    world.answer(payload(session(7)))
    overflow = world.answer(payload(session(11)))
    assert overflow == "error: handler error: context/overflow: assembled context requires 9294 tokens but usable budget is 8000"
    assert world.summarizer.calls == 0
    dropping = World({**AHEAD, "overflow_fallback": "drop_oldest"})
    dropping.answer(payload(session(7)))
    answered = dropping.answer(payload(session(11)))
    without_summariser = World({"overflow_fallback": "drop_oldest"})
    ctx = without_summariser.context()
    ctx.summarizer = None
    assert answered == dumps_wire(asyncio.run(handle(payload(session(11)), ctx))).decode()
    assert dropping.summarizer.calls == 0


# --- several processes -----------------------------------------------------------------------


def test_a_job_whose_process_died_is_never_used_and_its_lease_lapses() -> None:
    leases, sessions, clock = MemoryLeaseStore(), MemorySessionStore(), ManualClock(1_000)
    first = World({**AHEAD, "summarizer_fallback": "extractive"}, leases=leases, sessions=sessions, clock=clock)
    body = payload(session(7))
    first.answer(body)
    key = session_key(decode_messages(body["messages"]), None)
    # the job claimed the lease and the process died mid-summary: its claim stays, no record
    leases.records[(lease.SCOPE, key)] = LeaseRecord("dead-process", clock.now_ms())
    first.runner.drop_all()
    second = World({**AHEAD, "summarizer_fallback": "extractive"}, leases=leases, sessions=sessions, clock=clock)
    applied = second.result(payload(session(11)))["applied"]
    assert (applied["compacted"], applied["summary_kind"]) == (True, "extractive")  # no waiting
    second.answer(body)
    second.runner.run_all()  # the lease is still held: the job gives up at once
    assert second.summarizer.calls == 0 and second.record(body["messages"]) is None
    clock.advance(300_000)  # the TTL frees the session
    second.answer(body)
    second.runner.run_all()
    assert second.summarizer.calls == 1
    assert second.record(body["messages"]).summary == "AHEAD SUMMARY 1"
    # a ready summary that still fits this history: a further job does nothing
    second.answer(body)
    second.runner.run_all()
    assert second.summarizer.calls == 1


def test_two_processes_on_one_lease_run_one_job() -> None:
    leases, sessions, clock = MemoryLeaseStore(), MemorySessionStore(), ManualClock(1_000)
    one = World(AHEAD, leases=leases, sessions=sessions, clock=clock)
    two = World(AHEAD, leases=leases, sessions=sessions, clock=clock)
    body = payload(session(7))
    one.answer(body)
    two.answer(body)
    (_, job_one, _), (_, job_two, _) = one.runner.jobs[0], two.runner.jobs[0]

    async def both() -> None:
        await asyncio.gather(job_one(), job_two())

    one.summarizer.delay = two.summarizer.delay = 0.05
    asyncio.run(both())
    assert one.summarizer.calls + two.summarizer.calls == 1


@pytest.mark.parametrize("lease_key", [None, "session-7"])
def test_the_lease_of_the_job_is_the_sessions(lease_key: str | None) -> None:
    world = World(AHEAD)
    options = {} if lease_key is None else {"lease_key": lease_key}
    body = payload(session(7), **options)
    world.answer(body)
    world.runner.run_all()
    expected = lease_key or lease.default_lease_key(decode_messages(body["messages"])[:1])
    assert ("swap", expected) in world.leases.log
    assert world.record(body["messages"], lease_key).head_len == 13


def test_an_early_compaction_uses_a_ready_summary_and_otherwise_waits_for_one() -> None:
    config = {**AHEAD, "eager_compaction_at": 0.8, "summarizer_fallback": "extractive"}
    world = World(config)
    body = payload(session(9))  # fits, past 0.8 of usable
    applied = world.result(body)["applied"]
    assert applied["compacted"] is False and world.summarizer.calls == 0
    assert len(world.runner.jobs) == 1
    world.runner.run_all()
    applied = world.result(body)["applied"]
    assert (applied["compacted"], applied["summary"], applied["tail_start_index"]) == (True, "AHEAD SUMMARY 1", 17)
    assert world.summarizer.calls == 1


def test_with_eager_compaction_the_no_wait_path_over_budget_keeps_the_eager_tail() -> None:
    """It stands in for the early compaction whose summary is late: usable 8000 at 0.8 leaves an
    eager tail of 1000 tokens (one round, from message 21), where the full-window tail of 2000
    keeps two (from 19)."""
    config = {**AHEAD, "eager_compaction_at": 0.8, "summarizer_fallback": "extractive"}
    world = World(config)
    world.result(payload(session(9)))  # the early compaction is due: a job starts, not run
    assert len(world.runner.jobs) == 1
    answered = world.result(payload(session(11)))  # over budget
    applied = answered["applied"]
    assert (applied["compacted"], applied["summary_kind"], applied["tail_start_index"]) == (True, "extractive", 21)
    assert answered["token_count"] == 1039 and world.summarizer.calls == 0
    without_key = World({"eager_compaction_at": 0.8, "summarizer_fallback": "extractive"})
    ctx = without_key.context()
    ctx.summarizer = None
    assert asyncio.run(handle(payload(session(11)), ctx))["applied"]["tail_start_index"] == 19


def test_with_eager_compaction_a_job_starts_where_the_early_compaction_would_be_due() -> None:
    """Past the share but before an early compaction pays, no job: its summary would be used
    only later, with everything added since in its tail."""
    world = World({**AHEAD, "eager_compaction_at": 0.6})
    started = []
    for rounds in (7, 8, 9):  # 5921, 6764, 7607 tokens: all past 0.7 of 8000
        world.result(payload(session(rounds)))
        started.append(len(world.runner.started))
    assert started == [0, 0, 1]


def test_the_compaction_passs_verdict_on_an_early_call_is_not_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass judges whether the early compaction is due; a call it leaves as it was starts
    its job (or not) on that verdict, without the two tail selections again."""
    world = World({**AHEAD, "eager_compaction_at": 0.6})
    asked: list[int | None] = []
    judge = ahead.early_compaction_due

    def counted(request: Any) -> bool:
        asked.append(request.early_headroom)
        return judge(request)

    monkeypatch.setattr(ahead, "early_compaction_due", counted)
    world.result(payload(session(8)))  # 6764 tokens: past 0.6 of 8000, not due
    world.result(payload(session(9)))  # 7607 tokens: due, a job starts
    assert asked == [8000 - 6764, 8000 - 7607]
    assert len(world.runner.started) == 1


def test_a_round_trip_loop_compacts_with_ready_summaries_only() -> None:
    """The iii harness's loop: previous summary plus tail, the compaction persisted each time;
    the jobs finish between turns. Every compaction is a ready summary, one summariser call each,
    and no call's path calls the summariser."""
    world = World({**AHEAD, "summarizer_fallback": "extractive"})
    full = session(60, first="loop session")
    start, previous, compactions = 0, None, []
    for end in range(3, len(full) + 1, 2):
        options: dict[str, Any] = {"lease_key": "loop"}
        if previous is not None:
            options["previous_summary"] = previous
        before = world.summarizer.calls
        applied = world.result(payload(full[start:end], **options))["applied"]
        assert world.summarizer.calls == before  # nothing summarised on the call's path
        if applied["compacted"]:
            compactions.append((end, applied["summary_kind"], applied["summary"]))
            previous, start = applied["summary"], start + applied["tail_start_index"]
        world.runner.run_all()
    # each job keeps the tail less the tokens still free, so the next compaction keeps as much
    # as an inline one would: one every 6 rounds after the first
    assert [end for end, _, _ in compactions] == [21, 33, 45, 57, 69, 81, 93, 105, 117]
    assert {kind for _, kind, _ in compactions} == {"llm"}
    assert [summary for _, _, summary in compactions] == [f"AHEAD SUMMARY {i}" for i in range(1, 10)]
    assert world.summarizer.calls == 9


def test_a_whole_history_loop_with_summary_reuse_chains_ready_summaries() -> None:
    """A caller that re-sends everything: summary_reuse answers it as the round trip, so each
    job builds on the summary before it, as for the previous-summary caller."""
    world = World({**AHEAD, "summarizer_fallback": "extractive", "summary_reuse": True})
    full = session(60, first="whole history session")
    compactions = []
    for end in range(3, len(full) + 1, 2):
        before = world.summarizer.calls
        result = world.result(payload(full[:end]))
        assert world.summarizer.calls == before
        assert result["token_count"] <= result["usable"]
        applied = result["applied"]
        if applied["compacted"]:
            compactions.append((end, applied["summary_kind"], applied["summary"]))
        world.runner.run_all()
    assert {kind for _, kind, _ in compactions} == {"llm"}
    assert [summary for _, _, summary in compactions] == [f"AHEAD SUMMARY {i}" for i in range(1, len(compactions) + 1)]
    assert (len(compactions), world.summarizer.calls) == (9, 9)
    assert "AHEAD SUMMARY 8" in world.summarizer.requests[-1].system_prompt  # built on the one before


# --- with the history ceiling and the summariser's own model ----------------------------------


def test_under_a_history_ceiling_the_share_and_the_head_are_of_the_ceilings_budget() -> None:
    ceiling = {**AHEAD, "max_history_tokens": 5000}
    # 4235 tokens: under 0.7 of the window's 8000, past 0.7 of the ceiling's 5000
    assert World(AHEAD).result(payload(session(5)))["token_count"] == 4235
    world, plain = World(ceiling), World(AHEAD)
    plain.answer(payload(session(5)))
    assert plain.runner.started == []
    answered = world.result(payload(session(5)))
    assert (answered["applied"]["compacted"], answered["usable"]) == (False, 5000)
    assert len(world.runner.jobs) == 1
    world.runner.run_all()
    # the ceiling's full-window tail (2000) less the 765 tokens the ceiling still leaves free:
    # the last round, so the head is the first 9 messages
    assert world.record(session(5)).head_len == 9
    result = world.result(payload(session(7)))
    applied = result["applied"]
    assert (applied["compacted"], applied["summary"], applied["tail_start_index"]) == (True, "AHEAD SUMMARY 1", 9)
    assert result["token_count"] <= result["usable"] == 5000
    assert result["breakdown"]["window_usable"] == 8000
    assert world.summarizer.calls == 1


class Catalog:
    """The router's models: ``cheap`` has a 4000-token window (usable 3100), nothing else is known."""

    def __init__(self) -> None:
        self.looked_up: list[tuple[str | None, str]] = []

    async def get_model_budget(self, provider: str | None, model_id: str) -> ModelBudget | None:
        self.looked_up.append((provider, model_id))
        if model_id != "cheap":
            return None
        return ModelBudget(RouterModel(model_id, 4000, 500, provider="fake"), 500)


def summariser_model_world(config: dict[str, Any]) -> World:
    world = World({**AHEAD, "summarizer_model": {"id": "cheap", "provider": "fake"},
                   "compaction_instructions": "Keep every file path.", **config})
    world.resolver = Catalog()
    return world


def test_the_job_summarises_on_the_summariser_model_with_the_standing_instructions(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = summariser_model_world({})
    world.answer(payload(session(7)))
    assert world.summarizer.calls == 0 and world.resolver.looked_up == []  # nothing on the call's path
    with caplog.at_level(logging.INFO, logger="context_manager.test"):
        world.runner.run_all()
    # the job's cost is in the log, the only place that reports it
    session_id = session_key(decode_messages(session(7)), None)
    assert [r.getMessage() for r in caplog.records if "ready for" in r.getMessage()] == [
        f"summary ahead of time ready for {session_id} (tail from message 13): 2 summariser calls on cheap, "
        "5682 input and 6 output tokens"]
    requests = world.summarizer.requests
    # the head in requests within cheap's usable budget (3100), as inline compaction chunks it
    assert [(r.model, r.provider) for r in requests] == [("cheap", "fake")] * 2
    assert max(request_tokens(HEURISTIC, r.system_prompt, r.user_prompt) for r in requests) == 3100
    assert all("Keep every file path." in r.system_prompt for r in requests)
    result = world.result(payload(session(11)))
    applied = result["applied"]
    assert (applied["compacted"], applied["summary"], applied["tail_start_index"]) == (True, "AHEAD SUMMARY 2", 13)
    # no summariser call on this call's path, so no cost to report
    assert "summarizer" not in applied and world.summarizer.calls == 2


def test_a_summariser_model_that_cannot_be_resolved_costs_the_job_only(caplog: pytest.LogCaptureFixture) -> None:
    world = summariser_model_world({"summarizer_model": {"id": "unknown"}, "allow_fallback_limits": False})
    control = World(AHEAD)
    assert world.answer(payload(session(7))) == control.answer(payload(session(7)))
    with caplog.at_level(logging.WARNING, logger="context_manager.test"):
        world.runner.run_all()
    assert world.summarizer.calls == 0 and world.record(session(7)) is None
    assert "summary ahead of time not made: context/model_unresolved" in caplog.text
    assert world.leases.records == {}  # the lease is released


def test_with_summarizer_request_conversation_the_job_asks_inside_the_context_it_returned() -> None:
    world = World({**AHEAD, "summarizer_request": "conversation"})
    body = payload(session(7))
    returned = world.result(body)
    world.runner.run_all()
    [request] = world.summarizer.requests
    conversation = request.conversation
    assert conversation is not None
    # The context the call returned, up to the planned head (the record's 13 messages).
    assert (conversation.system_prompt, list(conversation.messages)) == (
        returned["system_prompt"], returned["messages"][:13])
    assert world.record(body["messages"]).head_len == 13
