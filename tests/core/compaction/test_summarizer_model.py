"""``summarizer_model`` (the summariser on a model of its own, chunked by its window, its cost
reported) and ``compaction_instructions`` (standing instructions in every summariser prompt)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from compaction_support import A, FakeSummarizer, MemoryLeaseStore, U, X, history

from context_manager.adapters.router_summarizer import router_usage
from context_manager.core.compaction.instructions import combined
from context_manager.core.compaction.prompts import build_system_prompt
from context_manager.core.compaction.summarize import request_tokens
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.settings import DEFAULT_CONFIG, ModelChoice, WorkerConfig
from context_manager.handlers import assemble, compact
from context_manager.handlers.context import HandlerContext
from context_manager.ports import ManualClock, ModelBudget, RouterModel, SummaryReply

SUMMARY = "## Goal\n- finish the migration"
HEAVY = history(U(X(9000)), A("r1"), U("q2"), A("r2"), U("q3"), A("r3"))
# big: usable 200000 - 8000 - 20000 = 172000; cheap: 4000 - 500 - 400 = 3100.
WINDOWS = {"big": (200000, 8000), "cheap": (4000, 500)}
CHEAP = replace(DEFAULT_CONFIG, summarizer_model=ModelChoice("cheap", "fake"))
STANDING = "Keep every file path."


class Catalog:
    def __init__(self) -> None:
        self.looked_up: list[tuple[str | None, str]] = []

    async def get_model_budget(self, provider, model_id):
        self.looked_up.append((provider, model_id))
        if model_id not in WINDOWS:
            return None
        window, output = WINDOWS[model_id]
        return ModelBudget(RouterModel(model_id, window, output, provider="fake"), output)


def ctx(summarizer: Any, config: WorkerConfig = DEFAULT_CONFIG, resolver: Any = None) -> HandlerContext:
    return HandlerContext(config=config, resolver=resolver or Catalog(), summarizer=summarizer,
                          lease_store=MemoryLeaseStore(), clock=ManualClock(1_000_000))


def run_compact(config: WorkerConfig, summarizer: Any, **options: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"messages": HEAVY, "model": {"id": "big", "provider": "fake"}}
    if options:
        payload["options"] = options
    return asyncio.run(compact.handle(payload, ctx(summarizer, config)))


def run_assemble(config: WorkerConfig, summarizer: Any, model: dict[str, Any] | None = None) -> dict[str, Any]:
    payload = {"messages": HEAVY, "model": model or {"id": "small", "limits": {"context_window": 5000,
                                                                              "max_output_tokens": 500}}}
    return asyncio.run(assemble.handle(payload, ctx(summarizer, config)))


def counted(summarizer: FakeSummarizer) -> tuple[int, int]:
    return (sum(request_tokens(HEURISTIC, r.system_prompt, r.user_prompt) for r in summarizer.requests),
            HEURISTIC.text(SUMMARY) * len(summarizer.requests))


# --- summarizer_model -------------------------------------------------------------------------


def test_by_default_the_session_model_summarises_and_nothing_is_reported():
    summarizer = FakeSummarizer(replies=[SUMMARY])
    response = run_compact(DEFAULT_CONFIG, summarizer)
    assert "summarizer" not in response
    assert [(r.model, r.provider) for r in summarizer.requests] == [("big", "fake")]


def test_compact_sends_every_chunk_to_the_summariser_model_within_its_window():
    summarizer = FakeSummarizer(replies=[SUMMARY])
    response = run_compact(CHEAP, summarizer)
    requests = summarizer.requests
    assert [(r.model, r.provider) for r in requests] == [("cheap", "fake")] * 4
    sizes = [request_tokens(HEURISTIC, r.system_prompt, r.user_prompt) for r in requests]
    assert max(sizes) <= 3100 and sum(sizes) == 10832
    assert response["summarizer"] == {"model": "cheap", "calls": 4, "input_tokens": 10832,
                                      "output_tokens": 4 * HEURISTIC.text(SUMMARY)}
    assert counted(summarizer) == (10832, 28)
    # The summary is sized by the session's budget: the answer is the default one plus the report.
    default = run_compact(DEFAULT_CONFIG, FakeSummarizer(replies=[SUMMARY]))
    assert {k: v for k, v in response.items() if k != "summarizer"} == default
    assert list(response)[-1] == "summarizer"


def test_the_router_usage_is_reported_when_the_reply_carries_it():
    summarizer = FakeSummarizer(respond=lambda request: SummaryReply(SUMMARY, (1200, 80)))
    response = run_compact(CHEAP, summarizer)
    assert response["summarizer"] == {"model": "cheap", "calls": 4, "input_tokens": 4800, "output_tokens": 320}


def test_inline_compaction_uses_the_summariser_model_and_reports_it():
    summarizer = FakeSummarizer(replies=[SUMMARY])
    response = run_assemble(CHEAP, summarizer)
    applied = response["applied"]
    assert applied["compacted"] is True
    assert [r.model for r in summarizer.requests] == ["cheap"] * 4
    assert applied["summarizer"] == {"model": "cheap", "calls": 4, "input_tokens": counted(summarizer)[0],
                                     "output_tokens": 28}
    default = run_assemble(DEFAULT_CONFIG, FakeSummarizer(replies=[SUMMARY]))
    assert "summarizer" not in default["applied"]
    assert {k: v for k, v in applied.items() if k != "summarizer"} == default["applied"]


def test_a_larger_summariser_window_takes_the_head_in_one_request():
    config = replace(DEFAULT_CONFIG, summarizer_model=ModelChoice("big"))
    summarizer = FakeSummarizer(replies=[SUMMARY])
    default = FakeSummarizer(replies=[SUMMARY])
    run_assemble(DEFAULT_CONFIG, default)
    response = run_assemble(config, summarizer)
    assert len(default.requests) == 3  # the 5000-token session window
    assert [(r.model, r.provider) for r in summarizer.requests] == [("big", None)]
    assert response["applied"]["summarizer"]["calls"] == 1


def test_no_report_when_the_summariser_was_not_called():
    config = replace(CHEAP, summarizer_fallback="extractive")
    response = run_compact(config, None)
    assert response["status"] == "ok" and "summarizer" not in response


def test_router_usage_reads_input_with_the_cache_and_output():
    assert router_usage({"ok": True, "usage": {"input": 10, "output": 3, "cache_read": 5, "cache_write": 2}}) == (17, 3)
    assert router_usage({"ok": True, "usage": {"input": 10, "output": 3}}) == (10, 3)
    assert router_usage({"ok": True}) is None
    assert router_usage({"ok": True, "usage": {"input": 10}}) is None
    assert router_usage({"ok": True, "usage": {"input": -1, "output": 3}}) is None
    assert router_usage({"ok": True, "usage": {"input": 1.5, "output": 3}}) is None
    assert router_usage(None) is None


# --- compaction_instructions ------------------------------------------------------------------


def test_standing_and_call_instructions_combine():
    assert combined(None, None) is None
    assert combined(STANDING, None) == STANDING
    assert combined(None, "Mention the tests.") == "Mention the tests."
    assert combined(STANDING, "Mention the tests.") == STANDING + "\n\nMention the tests."


def test_without_instructions_the_prompts_are_unchanged():
    summarizer = FakeSummarizer(replies=[SUMMARY])
    run_compact(DEFAULT_CONFIG, summarizer)
    assert summarizer.requests[0].system_prompt == build_system_prompt(None, None)


@pytest.mark.parametrize(("per_call", "guidance"), [
    (None, STANDING),
    ("Mention the tests.", STANDING + "\n\nMention the tests."),
])
def test_compact_puts_the_standing_instructions_in_every_prompt(per_call, guidance):
    config = replace(CHEAP, compaction_instructions=STANDING)
    summarizer = FakeSummarizer(replies=[SUMMARY])
    options = {} if per_call is None else {"instructions": per_call}
    run_compact(config, summarizer, **options)
    assert len(summarizer.requests) == 4
    block = f"<instructions>\n{guidance}\n</instructions>"
    assert all(block in r.system_prompt for r in summarizer.requests)
    assert summarizer.requests[0].system_prompt == build_system_prompt(None, guidance) + \
        summarizer.requests[1].system_prompt[len(build_system_prompt(SUMMARY, guidance)):]


def test_inline_compaction_puts_the_standing_instructions_in_every_prompt():
    config = replace(DEFAULT_CONFIG, compaction_instructions=STANDING)
    summarizer = FakeSummarizer(replies=[SUMMARY])
    response = run_assemble(config, summarizer)
    assert response["applied"]["compacted"] is True
    assert len(summarizer.requests) == 3
    assert all(r.system_prompt.startswith(build_system_prompt(None if i == 0 else SUMMARY, STANDING))
               for i, r in enumerate(summarizer.requests))
