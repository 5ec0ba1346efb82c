"""The history ceiling (``max_history_tokens``): every reduction aims for min(usable, ceiling)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from compaction_support import A, FakeSummarizer, MemoryLeaseStore, U, X, history

from context_manager.core.counting.history_ceiling import (
    ceiling_for,
    decode_option,
    history_budget,
    unrecorded_limit,
)
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.handlers import count_tokens
from context_manager.handlers.assemble import handle
from context_manager.handlers.context import HandlerContext, call_reuse
from context_manager.ports import ManualClock
from context_manager.wire.errors import INVALID_REQUEST, HandlerError

# usable 35000 (40000 less 1000 output, less the 4000 reserve)
BIG = {"id": "big", "limits": {"context_window": 40000, "max_output_tokens": 1000}}
TWO_HEAVY = history(U(X(3000)), A("r0"), U(X(3000)), A("r1"), U("latest question"), A("latest answer"))
EIGHT_TURNS = history(*[m for i in range(8) for m in (U(X(1000)), A(f"r{i}"))])


def run(payload: dict[str, Any], config: WorkerConfig = DEFAULT_CONFIG,
        summarizer: FakeSummarizer | None = None) -> dict[str, Any]:
    ctx = HandlerContext(config=config, summarizer=summarizer, lease_store=MemoryLeaseStore(),
                         clock=ManualClock(1_000_000))
    return asyncio.run(handle(payload, ctx))


def request(messages: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"messages": messages, "model": BIG, "system_prompt": "Base."}
    if options:
        payload["options"] = options
    return payload


def test_the_budget_is_the_smaller_of_usable_and_the_ceiling():
    assert history_budget(35000, None) == 35000
    assert history_budget(35000, 5000) == 5000
    assert history_budget(4000, 5000) == 4000
    assert ceiling_for(None, None) is None
    assert ceiling_for(None, 7000) == 7000
    assert ceiling_for(3000, 7000) == 3000
    assert unrecorded_limit(None, None) is None
    assert unrecorded_limit(40000, None) == 40000
    assert unrecorded_limit(None, 5000) == 5000
    assert unrecorded_limit(40000, 5000) == 5000


def test_without_a_ceiling_the_window_decides_and_nothing_is_added():
    response = run(request(TWO_HEAVY), summarizer=FakeSummarizer())
    assert response["usable"] == 35000
    assert response["token_count"] == 6155
    assert response["applied"]["compacted"] is False
    assert "window_usable" not in response["breakdown"]


def test_the_option_compacts_down_to_the_ceiling_and_the_summariser_keeps_the_window():
    summarizer = FakeSummarizer()
    response = run(request(TWO_HEAVY, max_history_tokens=5000), summarizer=summarizer)
    assert response["usable"] == 5000
    assert response["token_count"] == 104
    applied = response["applied"]
    assert (applied["compacted"], applied["tail_start_index"], applied["tokens_before"]) == (True, 3, 6065)
    assert response["breakdown"]["window_usable"] == 35000
    # One request of the whole head (about 6000 tokens): chunked by the window, not the ceiling.
    assert [len(r.user_prompt) for r in summarizer.requests] == [24173]


def test_the_config_key_applies_and_the_option_wins_over_it():
    config = replace(DEFAULT_CONFIG, max_history_tokens=7000)
    fits = run(request(TWO_HEAVY), config, FakeSummarizer())
    assert (fits["usable"], fits["token_count"], fits["applied"]["compacted"]) == (7000, 6155, False)
    assert fits["breakdown"]["window_usable"] == 35000
    lower = run(request(TWO_HEAVY, max_history_tokens=5000), config, FakeSummarizer())
    assert (lower["usable"], lower["token_count"], lower["applied"]["compacted"]) == (5000, 104, True)


def test_a_ceiling_above_the_window_changes_only_the_breakdown():
    response = run(request(TWO_HEAVY, max_history_tokens=100000), summarizer=FakeSummarizer())
    assert response["usable"] == 35000
    assert response["breakdown"]["window_usable"] == 35000
    assert response["token_count"] == 6155


def test_eager_compaction_is_measured_against_the_ceiling_and_pays_by_cache_reads():
    config = replace(DEFAULT_CONFIG, eager_compaction_at=0.5)
    without = run(request(EIGHT_TURNS), config, FakeSummarizer())
    assert (without["usable"], without["applied"]["compacted"]) == (35000, False)
    # 8396 tokens are past 0.5 * 16000 = 8000 though they fit 16000. The rounds grow about 880
    # tokens a call, so the 8362 tokens of the head would be read from the cache some 8.6 more
    # times before the ceiling: more than re-sending what stays. Compacted early.
    early = run(request(EIGHT_TURNS, max_history_tokens=16000), config, FakeSummarizer())
    applied = early["applied"]
    assert (early["usable"], early["token_count"]) == (16000, 48)
    assert (applied["compacted"], applied["tail_start_index"], applied["tokens_before"]) == (True, 15, 8362)
    # The same budget from the window (no ceiling): the early compaction must save a rewrite,
    # which it does not, so the call returns the context as it is.
    window = run(request(EIGHT_TURNS, reserved_tokens=23000), config, FakeSummarizer())
    assert (window["usable"], window["token_count"], window["applied"]["compacted"]) == (16000, 8396, False)


def test_under_the_ceiling_an_early_compaction_a_call_before_the_budget_waits():
    """Past 0.8 of a 9000 ceiling with 604 tokens left, less than a round: the head's cache reads
    before the compaction that must come are worth less than a re-send."""
    config = replace(DEFAULT_CONFIG, eager_compaction_at=0.8)
    waits = run(request(EIGHT_TURNS, max_history_tokens=9000), config, FakeSummarizer())
    assert (waits["usable"], waits["token_count"], waits["applied"]["compacted"]) == (9000, 8396, False)


@pytest.mark.parametrize("extra", [{}, {"working_set": True}, {"reduce_to": 0.5}])
def test_drop_oldest_fits_the_ceiling(extra):
    config = replace(DEFAULT_CONFIG, overflow_fallback="drop_oldest", **extra)
    response = run(request(EIGHT_TURNS, max_history_tokens=3000), config)
    applied = response["applied"]
    assert (response["usable"], response["token_count"]) == (3000, 2101)
    assert (applied["dropped_messages"], applied["dropped_ranges"]) == (12, [[0, 12]])


def test_the_round_trip_runs_under_the_ceiling():
    first = run(request(TWO_HEAVY, max_history_tokens=5000), summarizer=FakeSummarizer())
    summary = first["applied"]["summary"]
    tail = TWO_HEAVY[first["applied"]["tail_start_index"]:]
    second = run(request([*tail, *history(U("more"), A("sure"), first_timestamp=7)],
                         max_history_tokens=5000, previous_summary=summary),
                 summarizer=FakeSummarizer())
    assert (second["usable"], second["applied"]["compacted"]) == (5000, False)
    assert second["token_count"] == 154
    assert second["breakdown"]["window_usable"] == 35000


@pytest.mark.parametrize(("value", "detail"), [
    (0, "invalid value: integer `0`, expected a positive integer"),
    (-1, "invalid value: integer `-1`, expected u64"),
    (1.5, "invalid type: floating point `1.5`, expected u64"),
    ("32000", 'invalid type: string "32000", expected u64'),
    (True, "invalid type: boolean `true`, expected u64"),
])
def test_a_malformed_ceiling_is_an_invalid_request(value, detail):
    message = f"options.max_history_tokens must be null or a positive integer ({detail})"
    with pytest.raises(HandlerError) as err:
        decode_option(value)
    assert (err.value.kind, err.value.message) == (INVALID_REQUEST, message)
    with pytest.raises(HandlerError) as err:
        run(request(TWO_HEAVY, max_history_tokens=value))
    assert (err.value.kind, err.value.message) == (INVALID_REQUEST, message)
    with pytest.raises(HandlerError) as err:
        count_tokens.count_tokens({**request(TWO_HEAVY), "options": {"max_history_tokens": value}},
                                  HandlerContext(config=DEFAULT_CONFIG), call_reuse(HandlerContext()))
    assert (err.value.kind, err.value.message) == (INVALID_REQUEST, message)


def test_null_options_are_the_configuration():
    assert decode_option(None) is None
    assert run(request(TWO_HEAVY, max_history_tokens=None))["usable"] == 35000


def test_count_tokens_skips_an_unrecorded_anchor_whose_prompt_is_over_the_ceiling():
    from core.counting.test_calibration import MODEL, USAGE
    from core.counting.test_calibration import history as anchored

    from context_manager import call
    from context_manager.core.counting.calibration import SHARED_LEDGER

    SHARED_LEDGER.clear()
    # The prompt before the anchor is estimated at 219 tokens; the anchor counted 150.
    payload = {"model": MODEL, "system_prompt": "s" * 400, "messages": anchored()}
    plain = {"tokens": 583, "by_role": {"user": 338, "assistant": 145, "function_result": 0, "custom": 0},
             "estimator": "heuristic"}
    calibrated = call("context::count-tokens", payload, config=USAGE)
    assert calibrated["tokens"] == 400 and calibrated["calibration"]["provider_tokens"] == 150
    assert call("context::count-tokens", {**payload, "options": {"max_history_tokens": 219}},
                config=USAGE) == calibrated
    assert call("context::count-tokens", {**payload, "options": {"max_history_tokens": 218}},
                config=USAGE) == plain
    assert call("context::count-tokens", payload, config={**USAGE, "max_history_tokens": 218}) == plain
    assert call("context::count-tokens", {**payload, "options": None}, config=USAGE) == calibrated
    assert call("context::count-tokens", {**payload, "options": {}}) == plain
