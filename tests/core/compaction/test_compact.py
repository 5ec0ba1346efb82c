"""`context::compact` end to end through its handler (spec 03 §4; Examples 1–3, 9, 12, 13, 15)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

import pytest
from compaction_support import (
    A,
    C,
    FakeSummarizer,
    MemoryLeaseStore,
    U,
    X,
    decoded,
    history,
)

from context_manager.core.compaction import lease
from context_manager.core.compaction.prompts import build_system_prompt
from context_manager.core.compaction.summarize import request_tokens
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.handlers.compact import handle
from context_manager.handlers.context import HandlerContext
from context_manager.ports import (
    LeaseRecord,
    ManualClock,
    ModelBudget,
    RouterModel,
    SummarizerEmpty,
    SummarizerFailed,
    SummarizerUnavailable,
)
from context_manager.wire.codec import dumps_wire
from context_manager.wire.errors import DecodeError, HandlerError

SUMMARY = "## Goal\n- finish the migration"
EXAMPLE_2 = history(U(X(9000)), A("r1"), U("q2"), A("r2"), U("q3"), A("r3"))
EXAMPLE_2_KEY = lease.default_lease_key(decoded(U(X(9000)), A("r1"), U("q2"), A("r2"), U("q3"), A("r3")))


class RouterCatalog:
    """A resolver that knows model ``big`` (200000 / 8000)."""

    def __init__(self):
        self.calls = 0

    async def get_model_budget(self, provider, model_id):
        self.calls += 1
        if model_id == "big":
            return ModelBudget(RouterModel("big", 200000, 8000, provider="test"), 8000)
        return None


def context(summarizer=None, store=None, clock=None, config=DEFAULT_CONFIG, resolver=None):
    return HandlerContext(
        config=config,
        resolver=resolver or RouterCatalog(),
        summarizer=summarizer if summarizer is not None else FakeSummarizer(replies=[SUMMARY]),
        lease_store=store if store is not None else MemoryLeaseStore(),
        clock=clock or ManualClock(1_000_000),
    )


def compact(payload, ctx):
    return asyncio.run(handle(payload, ctx))


def request(messages=EXAMPLE_2, model=None, **options):
    payload = {"messages": messages, "model": model or {"id": "big", "provider": "test"}}
    if options:
        payload["options"] = options
    return payload


# --- Example 2 --------------------------------------------------------------------------------


def test_example_2_ok_with_every_field():
    summarizer, store = FakeSummarizer(replies=[SUMMARY]), MemoryLeaseStore()
    response = compact(request(), context(summarizer, store))
    assert response == {
        "status": "ok", "summary": SUMMARY, "tail_start_index": 2, "tokens_before": 9049,
        "tokens_after": 107, "used_prior_summary": False,
    }
    assert list(response) == ["status", "summary", "tail_start_index", "tokens_before",
                              "tokens_after", "used_prior_summary"]
    assert dumps_wire(response) == (
        b'{"status":"ok","summary":"## Goal\\n- finish the migration","tail_start_index":2,'
        b'"tokens_after":107,"tokens_before":9049,"used_prior_summary":false}')
    (call,) = summarizer.requests
    assert (call.model, call.provider) == ("big", "test")
    assert call.system_prompt == build_system_prompt(None, None)  # one call: no fragment note
    assert (len(call.user_prompt.encode()), len(call.system_prompt.encode())) == (36164, 1099)
    assert request_tokens(HEURISTIC, call.system_prompt, call.user_prompt) == 9402
    assert "\n[user]\n" + "x" * 36000 + "\n\n[assistant]\nr1\n</conversation>\n" in call.user_prompt
    assert store.records == {}  # released
    assert [op for op, key in store.log] == ["get", "swap", "get", "set"]
    assert {key for op, key in store.log} == {EXAMPLE_2_KEY}


def test_example_3_tail_turns_and_preserve_recent_tokens():
    response = compact(request(tail_turns=1), context())
    assert (response["tail_start_index"], response["tokens_before"], response["tokens_after"]) == (
        4, 9099, 7 + 50)
    response = compact(request(tail_turns=0), context())
    assert (response["tail_start_index"], response["tokens_before"], response["tokens_after"]) == (
        None, 9149, 7)
    assert dumps_wire(response).count(b'"tail_start_index":null') == 1
    response = compact(request(preserve_recent_tokens=0), context())
    assert response["tail_start_index"] == 4


def test_options_null_and_config_tail_turns():
    assert compact(request(tail_turns=None, lease_key=None), context())["tail_start_index"] == 2
    ctx = context(config=replace(DEFAULT_CONFIG, tail_turns=1))
    assert compact(request(), ctx)["tail_start_index"] == 4
    payload = request()
    payload["options"] = None
    assert compact(payload, context())["status"] == "ok"


def test_previous_summary_and_instructions_reach_the_summariser():
    summarizer = FakeSummarizer(replies=[SUMMARY])
    response = compact(request(previous_summary="", instructions="  keep SQL  "), context(summarizer))
    assert response["used_prior_summary"] is True
    (call,) = summarizer.requests
    assert "<previous-summary>\n\n</previous-summary>" in call.system_prompt
    assert call.system_prompt.endswith("<instructions>\nkeep SQL\n</instructions>")


def test_explicit_lease_key_is_used_verbatim():
    store = MemoryLeaseStore()
    compact(request(lease_key=" session 42 "), context(store=store))
    assert {key for _, key in store.log} == {" session 42 "}


def test_example_9_compact_counts_and_summarises_customs():
    messages = history(C("ui_marker"), U(X(3000)), A("r0"), C("ui_marker"), U(X(3000)), A("r1"),
                       U("latest question"), A("latest answer"))
    summarizer = FakeSummarizer(replies=[SUMMARY])
    response = compact(request(messages, model={"id": "small", "limits": {
        "context_window": 5000, "max_output_tokens": 500}}), context(summarizer))
    assert (response["tail_start_index"], response["tokens_before"]) == (5, 6123)
    assert summarizer.requests[0].user_prompt.count("\n[custom]\n") == 2


# --- Example 13: the status matrix -----------------------------------------------------------


def test_messages_absent_or_null():
    for payload in ({"model": {"id": "big"}}, {"messages": None, "model": {"id": "big"}}):
        with pytest.raises(HandlerError) as failure:
            compact(payload, context())
        assert failure.value.wire_message == (
            "handler error: context/invalid_request: messages is required")


def test_empty_messages_need_no_model_and_no_lease():
    resolver, store = RouterCatalog(), MemoryLeaseStore()
    assert compact(request([]), context(store=store, resolver=resolver)) == {"status": "empty"}
    assert resolver.calls == 0 and store.log == []


def test_example_1_nothing_to_compact_still_takes_the_lease():
    summarizer, store = FakeSummarizer(), MemoryLeaseStore()
    messages = history(U("q1"), A("a1"), U("q2"), A("a2"))
    assert compact(request(messages), context(summarizer, store)) == {"status": "empty"}
    assert summarizer.calls == 0
    assert [op for op, _ in store.log] == ["get", "swap", "get", "set"] and store.records == {}


@pytest.mark.parametrize(("reply", "status"), [
    ("  \n ", "empty"),
    (SummarizerEmpty(), "empty"),
    (SummarizerUnavailable("function_not_found: router::chat"), "overflow"),
    (SummarizerFailed('"429 rate limited"'), "overflow"),
    (SummarizerFailed("summariser stream error: ctx overflow"), "overflow"),
    (RuntimeError("adapter bug"), "overflow"),
])
def test_summariser_outcomes(reply, status, caplog):
    store = MemoryLeaseStore()
    with caplog.at_level(logging.WARNING):
        response = compact(request(), context(FakeSummarizer(replies=[reply]), store))
    assert response == {"status": status}
    assert store.records == {}  # released in every case
    if isinstance(reply, SummarizerUnavailable):
        assert "error_kind=permanent" in caplog.text


def test_no_summariser_at_all_is_overflow():
    ctx = context()
    ctx.summarizer = None
    assert compact(request(), ctx) == {"status": "overflow"}


def test_busy_on_a_live_foreign_claim_or_a_failing_store():
    foreign = LeaseRecord("foreign-holder", 1_000_000)
    store = MemoryLeaseStore({(lease.SCOPE, EXAMPLE_2_KEY): foreign})
    summarizer = FakeSummarizer()
    assert compact(request(), context(summarizer, store)) == {"status": "busy"}
    assert summarizer.calls == 0 and store.records == {(lease.SCOPE, EXAMPLE_2_KEY): foreign}
    assert compact(request(), context(summarizer, MemoryLeaseStore(fail=True))) == {"status": "busy"}
    assert summarizer.calls == 0


def test_example_12_preflight_overflow():
    messages = history(U(X(3000)), A("r0"), U("q2"), A("a2"))
    summarizer, store = FakeSummarizer(), MemoryLeaseStore()
    model = {"id": "tiny", "limits": {"context_window": 1000, "max_output_tokens": 500}}
    assert compact(request(messages, model=model), context(summarizer, store)) == {"status": "overflow"}
    assert summarizer.calls == 0 and store.records == {}
    assert [op for op, _ in store.log] == ["get", "swap", "get", "set"]


def test_slow_summariser_times_out_to_overflow():
    config = replace(DEFAULT_CONFIG, summarizer_timeout_ms=30)
    store = MemoryLeaseStore()
    ctx = context(FakeSummarizer(delay=5.0), store, config=config)
    assert compact(request(), ctx) == {"status": "overflow"}
    assert store.records == {}


def test_model_unresolved_when_fallback_is_disabled():
    ctx = context(config=replace(DEFAULT_CONFIG, allow_fallback_limits=False))
    with pytest.raises(HandlerError) as failure:
        compact(request(model={"id": "nobody"}), ctx)
    assert failure.value.wire_message == (
        "handler error: context/model_unresolved: could not resolve model limits "
        "(model nobody is not in the router catalog)")


def test_unknown_model_uses_the_fallback_limits():
    # fallback 8192/1024, reserve 819: input budget 6349, tail budget 2000
    summarizer = FakeSummarizer(replies=["S"] * 10)
    response = compact(request(model={"id": "nobody"}), context(summarizer))
    assert response["status"] == "ok" and response["tail_start_index"] == 2
    assert summarizer.calls == 2


# --- decoding ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "message"), [
    ({"tail_turns": -1}, "invalid value: integer `-1`, expected usize"),
    ({"tail_turns": "2"}, 'invalid type: string "2", expected usize'),
    ({"preserve_recent_tokens": 1.5}, "invalid type: floating point `1.5`, expected u64"),
    ({"lease_key": 7}, "invalid type: integer `7`, expected a string"),
    ({"instructions": False}, "invalid type: boolean `false`, expected a string"),
    ({"tail_turns": "x", "lease_key": 7}, "invalid type: integer `7`, expected a string"),
])
def test_option_decoding_errors(options, message):
    with pytest.raises(DecodeError) as failure:
        compact(request(**options), context())
    assert failure.value.wire_message == f"serialization error: {message}"


def test_model_is_required_and_unknown_fields_are_ignored():
    with pytest.raises(DecodeError) as failure:
        compact({"messages": []}, context())
    assert failure.value.detail == "missing field `model`"
    payload = request(future_option=True)
    payload["extra"] = 1
    assert compact(payload, context())["status"] == "ok"


# --- Example 15: contention timeline ------------------------------------------------------------


def test_example_15_contention_timeline():
    store, clock = MemoryLeaseStore(), ManualClock(1_000_000)
    store.records[(lease.SCOPE, EXAMPLE_2_KEY)] = LeaseRecord("foreign-holder", 1_000_000)
    summarizer = FakeSummarizer(replies=[SUMMARY])
    ctx = context(summarizer, store, clock)
    assert compact(request(), ctx) == {"status": "busy"}  # A, age 0
    clock.now = 1_299_999
    assert compact(request(), ctx) == {"status": "busy"}  # B, age 299999
    assert summarizer.calls == 0
    clock.now = 1_300_000
    claims = []
    original_swap = store.swap

    async def spying_swap(scope, key, record):
        prior = await original_swap(scope, key, record)
        claims.append((prior, record))
        return prior

    store.swap = spying_swap
    assert compact(request(), ctx)["status"] == "ok"  # C takes over the expired claim
    ((prior, claim),) = claims
    assert prior == LeaseRecord("foreign-holder", 1_000_000) and claim.ts == 1_300_000
    assert summarizer.calls == 1 and store.records == {}


def test_example_15_takeover_just_past_the_ttl():
    store, clock = MemoryLeaseStore(), ManualClock(1_300_001)
    store.records[(lease.SCOPE, EXAMPLE_2_KEY)] = LeaseRecord("foreign-holder", 1_000_000)
    assert compact(request(), context(store=store, clock=clock))["status"] == "ok"
