"""Usage calibration (``count_calibration: usage``): the anchor, the growth ratio, the guard
rails, the ledger of reduced contexts, and its effect on count-tokens and assemble."""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import CallError, call
from context_manager.core.counting.calibration import (
    SHARED_LEDGER,
    Calibration,
    InputDigests,
    SentLedger,
    choose_calibration,
    input_shape,
    provider_prompt_tokens,
)
from context_manager.core.counting.estimate import HEURISTIC

USAGE = {"count_calibration": "usage"}
MODEL = {"id": "m", "limits": {"context_window": 100_000, "max_output_tokens": 1000}}
TS = 1_700_000_000_000


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": TS}


def assistant(text: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"role": "assistant", "content": [{"type": "text", "text": text}],
                         "stop_reason": "end", "model": "m", "provider": "p", "timestamp": TS}
    if usage is not None:
        m["usage"] = usage
    return m


def size(m: dict[str, Any]) -> int:
    from context_manager.wire.decode import decode_message

    return HEURISTIC.message(decode_message(m))


@pytest.fixture(autouse=True)
def fresh_ledger():
    SHARED_LEDGER.clear()
    yield
    SHARED_LEDGER.clear()


# --- the arithmetic -------------------------------------------------------------------------


def test_scale_is_the_anchor_plus_growth_rounded_up():
    c = Calibration(3, provider_tokens=800, estimated_tokens=1000)
    assert c.scale(1000) == 800
    assert c.scale(1100) == 880
    assert c.scale(1001) == 801  # 800.8 rounds up
    assert c.scale(900) == 720
    assert c.scale(0) == 0
    assert c.ratio == 0.8 and c.growth_ratio == 0.8


def test_growth_ratio_scales_only_what_differs_from_the_anchored_prompt():
    # 1000 estimated -> 1200 provider, and the last 2000 estimated of growth cost 2000.
    c = Calibration(5, 1200, 1000, growth_tokens=2000, growth_estimate=2000)
    assert c.scale(1500) == 1700
    assert c.scale(800) == 1000
    assert c.amount(300) == 300
    assert Calibration(0, 800, 1000).amount(301) == 241  # 240.8 rounds up
    assert c.report() == {"anchor_index": 5, "provider_tokens": 1200, "ratio": 1.2, "growth_ratio": 1.0}


def test_unscale_is_the_largest_estimate_that_fits():
    c = Calibration(0, 800, 1000)
    for budget in (1, 799, 800, 801, 5000):
        x = c.unscale(budget)
        assert c.scale(x) <= budget < c.scale(x + 1)
    assert c.unscale(0) == 0
    assert c.estimate_of_amount(240) == 300 and c.amount(300) == 240 and c.amount(301) == 241


def test_apportion_sums_to_the_scaled_total():
    c = Calibration(0, 800, 1000)
    parts = [333, 333, 334, 0]
    scaled = c.apportion(parts)
    assert sum(scaled) == c.scale(1000) == 800
    assert scaled == [267, 266, 267, 0]  # ties of the remainder go to the first part
    g = Calibration(0, 1500, 1000, 1000, 1000)  # 1,500 shared 1:9
    assert g.apportion([100, 900]) == [150, 1350]
    low = Calibration(0, 800, 1000, 1000, 1000)  # a negative fixed part never makes a part negative
    assert low.apportion([10, 990]) == [8, 792] and sum(low.apportion([0, 0, 1000])) == 800


# --- the anchor -----------------------------------------------------------------------------


def test_provider_prompt_tokens_reads_input_and_both_cache_counters():
    assert provider_prompt_tokens(assistant("a", {"input": 10, "cache_read": 5, "cache_write": 2, "output": 9})) == 17
    assert provider_prompt_tokens(assistant("a", {"output": 9})) == 0
    assert provider_prompt_tokens(assistant("a")) == 0
    assert provider_prompt_tokens(user("u")) == 0


def test_the_latest_plausible_anchor_wins_and_implausible_ones_are_skipped():
    messages = [user("u"), assistant("a", {"input": 90}), user("u"), assistant("a", {"input": 10**9})]
    sizes = [100, 100, 100, 100]
    c = choose_calibration(messages, range(4), sizes, fixed_tokens=0)
    # Index 3 claims 10^9 for a 300-token prefix: ignored; index 1 anchors (90 / 100).
    assert (c.anchor_index, c.provider_tokens, c.estimated_tokens) == (1, 90, 100)


def test_no_anchor_without_usage():
    assert choose_calibration([user("u"), assistant("a")], range(2), [10, 10], 5) is None


def test_an_anchor_that_would_count_below_the_added_content_is_ignored():
    # Ratio 0.25 on a prefix of 100 while 1000 estimated tokens were added: 25 + 250 < 1000.
    messages = [user("u"), assistant("a", {"input": 25}), user("big")]
    assert choose_calibration(messages, range(3), [100, 0, 1000], 0) is None


def test_growth_ratio_comes_from_the_nearest_anchor_far_enough_back():
    # prefix estimates 2000 (index 1) and 4000 (index 3); the provider counted 3000 and 5000.
    messages = [user("u"), assistant("a", {"input": 3000}), user("u"), assistant("a", {"input": 5000}), user("u")]
    c = choose_calibration(messages, range(5), [2000, 1000, 1000, 500, 500], 0)
    assert (c.anchor_index, c.provider_tokens, c.estimated_tokens) == (3, 5000, 4000)
    assert (c.growth_tokens, c.growth_estimate) == (2000, 2000)
    assert c.scale(5000) == 6000


def test_growth_ratio_is_never_below_the_smaller_of_the_ratio_and_one():
    # Growth measured at 0.5 while the whole ratio is 1.25: growth counts 1.0.
    messages = [user("u"), assistant("a", {"input": 4000}), user("u"), assistant("a", {"input": 5000}), user("u")]
    c = choose_calibration(messages, range(5), [2000, 1000, 1000, 0, 1000], 0)
    assert c.growth_ratio == 1.0
    assert c.scale(5000) == 6000


def test_a_lone_anchor_with_a_tokenizer_counts_growth_at_one_when_its_ratio_is_above_one():
    # P / E = 1500 / 1000 with no earlier anchor: with the heuristic growth counts 1.5; with a
    # tokenizer the ratio above 1 is taken as the provider's fixed part, so growth counts 1.0.
    messages = [user("u"), assistant("a", {"input": 1500}), user("u")]
    sizes = [1000, 0, 400]
    heuristic = choose_calibration(messages, range(3), sizes, 0)
    assert heuristic.growth_ratio == 1.5 and heuristic.scale(1400) == 2100
    exact = choose_calibration(messages, range(3), sizes, 0, exact=True)
    assert (exact.anchor_index, exact.provider_tokens, exact.estimated_tokens) == (1, 1500, 1000)
    assert exact.ratio == 1.5 and exact.growth_ratio == 1.0
    assert exact.scale(1400) == 1900  # never below the estimate: P + (x - E) >= x
    assert exact.report() == {"anchor_index": 1, "provider_tokens": 1500, "ratio": 1.5, "growth_ratio": 1.0}


def test_a_lone_anchor_with_a_tokenizer_keeps_a_ratio_below_one():
    messages = [user("u"), assistant("a", {"input": 800}), user("u")]
    c = choose_calibration(messages, range(3), [1000, 0, 400], 0, exact=True)
    assert c.growth_ratio == 0.8 and c.scale(1400) == 1120


def test_a_lone_anchor_this_worker_reduced_keeps_its_ratio_with_a_tokenizer():
    # Growth from what was sent (600) is mostly the history left out: it stays at P / E.
    messages = [user("u"), assistant("a", {"input": 900}), user("u")]
    c = choose_calibration(messages, range(3), [1000, 0, 400], 0, lambda index, estimate: 600,
                           exact=True)
    assert (c.estimated_tokens, c.growth_ratio) == (600, 1.5)
    assert c.scale(1400) == 2100


def test_with_a_tokenizer_a_measured_growth_ratio_still_wins_over_the_lone_rule():
    messages = [user("u"), assistant("a", {"input": 3000}), user("u"), assistant("a", {"input": 5400}), user("u")]
    c = choose_calibration(messages, range(5), [2000, 1000, 1000, 500, 500], 0, exact=True)
    assert (c.growth_tokens, c.growth_estimate) == (2400, 2000)
    assert c.growth_ratio == 1.2 and c.scale(5000) == 6600


def test_custom_messages_are_not_part_of_the_anchored_prefix():
    messages = [user("u"), {"role": "custom"}, assistant("a", {"input": 50})]
    # view: request indices 0 and 2 only
    c = choose_calibration(messages, [0, 2], [100, 100], 0)
    assert c.estimated_tokens == 100


# --- count-tokens ---------------------------------------------------------------------------


def history() -> list[dict[str, Any]]:
    return [user("x" * 400), assistant("y" * 400, {"input": 120, "cache_read": 30, "output": 5}),
            user("z" * 800)]


def test_count_tokens_off_is_unchanged_and_usage_anchors():
    messages = history()
    request = {"model": MODEL, "system_prompt": "s" * 400, "messages": messages}
    plain = call("context::count-tokens", request)
    assert "calibration" not in plain
    sizes = [size(m) for m in messages]
    prefix = 100 + sizes[0]
    assert plain["tokens"] == prefix + sizes[1] + sizes[2]
    calibrated = call("context::count-tokens", request, config=USAGE)
    ratio = 150 / prefix
    expected = 150 + -(-(sizes[1] + sizes[2]) * 150 // prefix)
    assert calibrated["tokens"] == expected
    assert calibrated["calibration"] == {"anchor_index": 1, "provider_tokens": 150,
                                         "ratio": round(ratio, 4), "growth_ratio": round(ratio, 4)}
    assert sum(calibrated["by_role"].values()) <= calibrated["tokens"]


def test_count_tokens_with_the_tokenizer_counts_growth_after_a_lone_anchor_at_one():
    # ``estimator: auto`` on gpt-4o counts with o200k_base: what was added since the anchor
    # counts its own estimate, the anchor counts what the provider said.
    model = {"id": "gpt-4o", "limits": MODEL["limits"]}
    auto = {"estimator": "auto"}
    head = [user("x " * 300)]
    prefix = call("context::count-tokens", {"model": model, "system_prompt": "s " * 200,
                                             "messages": head}, config=auto)["tokens"]
    provider = prefix * 3 // 2
    messages = [*head, assistant("y " * 200, {"input": provider}), user("z " * 400)]
    request = {"model": model, "system_prompt": "s " * 200, "messages": messages}
    whole = call("context::count-tokens", request, config=auto)["tokens"]
    calibrated = call("context::count-tokens", request, config=auto | USAGE)
    assert calibrated["estimator"] == "tokenizer"
    assert calibrated["tokens"] == provider + whole - prefix
    assert calibrated["calibration"] == {"anchor_index": 1, "provider_tokens": provider,
                                         "ratio": round(provider / prefix, 4), "growth_ratio": 1.0}


def test_count_tokens_without_an_anchor_reports_no_calibration():
    request = {"model": MODEL, "messages": [user("hello"), assistant("a")]}
    assert call("context::count-tokens", request, config=USAGE) == call("context::count-tokens", request)


@pytest.mark.parametrize("usage", [{"input": -1}, {"input": "12"}, {"input": 1.5}, {"cache_read": True}])
def test_a_malformed_usage_is_the_usual_decoding_error(usage):
    request = {"model": MODEL, "messages": [user("u"), assistant("a", usage), user("v")]}
    with pytest.raises(CallError) as plain:
        call("context::count-tokens", request)
    with pytest.raises(CallError) as calibrated:
        call("context::count-tokens", request, config=USAGE)
    assert calibrated.value.message == plain.value.message
    assert calibrated.value.message.startswith("serialization error:")


def test_an_absurd_usage_is_ignored_as_an_anchor():
    request = {"model": MODEL, "messages": [user("u"), assistant("a", {"input": 2**63}), user("v")]}
    assert call("context::count-tokens", request, config=USAGE) == call("context::count-tokens", request)


# --- assemble -------------------------------------------------------------------------------


def test_assemble_reports_calibrated_counts_that_add_up():
    messages = history()
    request = {"model": MODEL, "system_prompt": "s" * 400, "messages": messages,
               "options": {"request_overhead_tokens": 7}}
    plain = call("context::assemble", request)
    answer = call("context::assemble", request, config=USAGE)
    sizes = [size(m) for m in messages]
    prefix = 100 + sizes[0]
    content = 150 + -(-(sizes[1] + sizes[2]) * 150 // prefix)
    assert plain["token_count"] == prefix + sizes[1] + sizes[2] + 7
    assert answer["token_count"] == content + 7
    b = answer["breakdown"]
    assert b["system_prompt_tokens"] + b["tools_tokens"] + sum(b["by_role"].values()) + 7 == answer["token_count"]
    assert b["calibration"]["anchor_index"] == 1 and b["calibration"]["provider_tokens"] == 150
    assert answer["applied"]["initial_token_count"] == answer["token_count"]
    assert answer["messages"] == plain["messages"]
    assert "calibration" not in plain["breakdown"]


def test_the_budget_is_compared_in_provider_units():
    # Estimates 1019, 38, 1019, 33, 20 (2,129): over a usable budget of 1,800, but the provider
    # counted the first message's prompt at 815, so the request counts 815 + ceil(1110 * 815 / 1019).
    filler = "w" * 4000
    messages = [user(filler), assistant("a", {"input": 815}), user(filler), assistant("b"), user("q")]
    assert [size(m) for m in messages] == [1019, 38, 1019, 33, 20]
    small = {"id": "m", "limits": {"context_window": 1900, "max_output_tokens": 100}}
    request = {"model": small, "messages": messages, "options": {"reserved_tokens": 0}}
    with pytest.raises(CallError) as plain:
        call("context::assemble", request, config={"max_result_tokens": 0})
    assert plain.value.message == ("handler error: context/overflow: assembled context requires 2129 "
                                   "tokens but usable budget is 1800")
    answer = call("context::assemble", request, config={**USAGE, "max_result_tokens": 0})
    assert (answer["token_count"], answer["usable"]) == (1703, 1800)
    assert answer["messages"] == messages
    assert answer["applied"] == {"initial_token_count": 1703, "pruned": False, "pruned_tokens": 0,
                                 "capped_parts": 0, "capped_tokens": 0, "compacted": False}
    assert answer["breakdown"]["by_role"] == {"user": 1646, "assistant": 57, "function_result": 0, "custom": 0}
    assert answer["breakdown"]["calibration"] == {"anchor_index": 1, "provider_tokens": 815,
                                                  "ratio": 0.7998, "growth_ratio": 0.7998}


def test_an_overflow_reports_the_calibrated_count():
    filler = "w" * 4000
    messages = [user(filler), assistant("a", {"input": 815}), user(filler), assistant("b"), user("q")]
    small = {"id": "m", "limits": {"context_window": 1700, "max_output_tokens": 100}}
    request = {"model": small, "messages": messages, "options": {"reserved_tokens": 0}}
    with pytest.raises(CallError) as err:
        call("context::assemble", request, config={**USAGE, "max_result_tokens": 0})
    assert "requires 1703 tokens but usable budget is 1600" in err.value.message


def test_a_context_this_worker_reduced_anchors_on_what_it_returned():
    filler = "w" * 2000
    base = [user(filler), assistant("a"), user(filler), assistant("b"), user(filler)]
    small = {"id": "m", "limits": {"context_window": 1400, "max_output_tokens": 100}}
    config = {**USAGE, "overflow_fallback": "drop_oldest", "max_result_tokens": 0}
    request = {"model": small, "messages": base, "options": {"reserved_tokens": 0}}
    first = call("context::assemble", request, config=config)
    assert first["applied"]["dropped_messages"] > 0
    sent_estimate = first["token_count"]  # no anchor yet: estimator units
    # The provider counted what was sent at 10% more than our estimate of it.
    provider = sent_estimate * 11 // 10
    follow = base + [assistant("c", {"input": provider}), user("next")]
    second = call("context::assemble", {**request, "messages": follow}, config=config)
    calibration = second["breakdown"]["calibration"]
    assert calibration["anchor_index"] == 5
    assert calibration["ratio"] == round(provider / sent_estimate, 4)
    # Without the record, the raw prefix before the anchor (over the usable budget, so it was
    # not sent as it is) cannot be the anchored prompt: its ratio would be that of a smaller
    # prompt, an under-count. The call counts as without calibration.
    SHARED_LEDGER.clear()
    third = call("context::assemble", {**request, "messages": follow}, config=config)
    assert "calibration" not in third["breakdown"]
    SHARED_LEDGER.clear()
    assert third == call("context::assemble", {**request, "messages": follow},
                         config={**config, "count_calibration": "off"})


def test_a_reduced_context_is_never_counted_below_its_estimate_at_the_smaller_ratio():
    # Growth measured at 1.2 over an anchor observed at 0.8: a context reduced far below the
    # anchored prompt counts at least its estimate at 0.8, never the affine count (here below 0).
    calibration = Calibration(7, 80_000, 100_000, 12_000, 10_000)
    assert calibration.scale(100_000) == 80_000
    assert calibration.scale(110_000) == 92_000
    assert calibration.scale(20_000) == 16_000  # affine: 80,000 - 96,000 < 0
    assert calibration.scale(90_000) == 72_000  # affine 68,000 is lower
    # A budget's estimate is the largest whose count fits it, under either bound.
    for budget in (1, 15_999, 16_000, 60_000, 79_999, 80_000, 95_000):
        estimate = calibration.unscale(budget)
        assert calibration.scale(estimate) <= budget < calibration.scale(estimate + 1)
    # With growth below the observed ratio the affine count is the larger: kept.
    slow = Calibration(7, 80_000, 100_000, 6_000, 10_000)
    assert slow.scale(90_000) == 74_000


def test_ledger_is_bounded_and_keys_ignore_member_order():
    ledger = SentLedger(capacity=2)
    for n in range(3):
        ledger.remember(bytes([n]), n)
    assert len(ledger) == 2 and ledger.recall(bytes([0])) is None and ledger.recall(bytes([2])) == 2
    a = InputDigests(("heuristic", "m"), [{"role": "user", "x": 1}]).whole(5)
    b = InputDigests(("heuristic", "m"), [{"x": 1, "role": "user"}]).whole(5)
    c = InputDigests(("heuristic", "m2"), [{"x": 1, "role": "user"}]).whole(5)
    d = InputDigests(("heuristic", "m"), [{"x": 1, "role": "user"}]).whole(6)
    assert a == b != c and b != d


def test_ledger_counts_the_shapes_it_holds_through_eviction_and_forget():
    ledger = SentLedger(capacity=2)
    messages = [{"role": "user", "x": 1}, {"role": "user", "x": 2}]
    first = InputDigests(("heuristic", "m"), messages).prefix(1, 7)
    twin = InputDigests(("heuristic", "m2"), messages).prefix(1, 7)
    second = InputDigests(("heuristic", "m"), messages).prefix(2, 9)
    assert first[:16] == twin[:16] == input_shape(1, 7) and first != twin
    ledger.remember(first, 3)
    ledger.remember(twin, 4)
    ledger.remember(first, 5)  # a key remembered again is counted once
    assert ledger.holds_shape(input_shape(1, 7)) and not ledger.holds_shape(input_shape(2, 9))
    ledger.forget(twin)
    assert ledger.holds_shape(input_shape(1, 7))
    ledger.remember(second, 6)
    ledger.remember(bytes(16), 0)  # evicts `first`, the least recently used
    assert ledger.recall(first) is None and not ledger.holds_shape(input_shape(1, 7))
    assert ledger.holds_shape(input_shape(2, 9)) and ledger.recall(second) == 6
    ledger.clear()
    assert len(ledger) == 0 and not ledger.holds_shape(input_shape(2, 9))


def test_an_input_over_the_budget_sent_as_it_is_is_remembered_for_the_next_anchor():
    small = {"id": "m", "limits": {"context_window": 1700, "max_output_tokens": 100}}
    history = [user("w" * 4000), assistant("a", {"input": 800}), user("w" * 2800), assistant("b"), user("q")]
    request = {"model": small, "messages": history, "options": {"reserved_tokens": 0}}
    SHARED_LEDGER.clear()
    first = call("context::assemble", request, config=USAGE)
    # Estimated over the 1,600 budget, calibrated within it: sent as it is.
    assert (first["usable"], first["token_count"], first["messages"] == history) == (1600, 1436, True)
    follow = history + [assistant("c", {"input": 1436}), user("next")]
    second = call("context::assemble", {**request, "messages": follow}, config=USAGE)
    assert second["breakdown"]["calibration"] == {"anchor_index": 5, "provider_tokens": 1436,
                                                  "ratio": 0.7851, "growth_ratio": 0.7851}
    # Without the record the newest anchor's prompt (over the budget) is not trusted: the one
    # before it, whose prompt fits, is the anchor.
    SHARED_LEDGER.clear()
    third = call("context::assemble", {**request, "messages": follow}, config=USAGE)
    assert third["breakdown"]["calibration"]["anchor_index"] == 1


# --- plausibility: an anchor whose prompt is not this request's prefix is not used ----------


def test_the_ratio_band_is_the_estimators_measured_band():
    messages = [user("u"), assistant("a", {"input": 1950}), user("u")]
    sizes = [1000, 0, 400]
    # Heuristic band [0.5, 1.95]: 1,950 / 1,000 is its top and anchors; 1,951 does not.
    assert choose_calibration(messages, range(3), sizes, 0).ratio == 1.95
    over = [user("u"), assistant("a", {"input": 1951}), user("u")]
    assert choose_calibration(over, range(3), sizes, 0) is None
    under = [user("u"), assistant("a", {"input": 499}), user("u")]
    assert choose_calibration(under, range(3), sizes, 0) is None
    # Tokenizer band [0.7, 2.25].
    assert choose_calibration(over, range(3), sizes, 0, exact=True).ratio == 1.951
    assert choose_calibration(under, range(3), sizes, 0, exact=True) is None
    tokenizer_over = [user("u"), assistant("a", {"input": 2251}), user("u")]
    assert choose_calibration(tokenizer_over, range(3), sizes, 0, exact=True) is None


def test_a_tail_whose_usage_counted_a_far_longer_prompt_counts_uncalibrated():
    # A round trip's tail: the provider counted the whole history before the compaction (3,000)
    # for a prefix estimated at 1,019 here. Ratio 2.94, over the band's top (1.95): no anchor.
    messages = [user("w" * 4000), assistant("a", {"input": 3000}), user("q")]
    request = {"model": MODEL, "messages": messages}
    assert call("context::count-tokens", request, config=USAGE) == call("context::count-tokens", request)
    with_summary = {**request, "options": {"previous_summary": "## Goal\n- the task"}}
    answer = call("context::assemble", with_summary, config=USAGE)
    assert "calibration" not in answer["breakdown"]
    assert answer == call("context::assemble", with_summary)


def test_with_a_previous_summary_an_anchor_counted_over_the_budget_predates_it():
    # Both anchors' ratios lie in the band. The newest counted 1,700 (over a limit of 1,600):
    # with a summary that prompt held the history the summary replaced, so the one before it,
    # counted within the limit, anchors.
    messages = [user("u"), assistant("a", {"input": 900}), user("u"), assistant("a", {"input": 1700}),
                user("u")]
    sizes = [1000, 0, 100, 0, 100]
    latest = choose_calibration(messages, range(5), sizes, 0)
    assert (latest.anchor_index, latest.provider_tokens, latest.estimated_tokens) == (3, 1700, 1100)
    earlier = choose_calibration(messages, range(5), sizes, 0, summarized_limit=1600)
    assert (earlier.anchor_index, earlier.provider_tokens, earlier.estimated_tokens) == (1, 900, 1000)
    assert choose_calibration(messages, range(5), sizes, 0, summarized_limit=899) is None


def test_assemble_with_a_previous_summary_skips_an_anchor_counted_over_its_budget():
    # Estimates 1019, 38, 1019, 33, 20 (2,129) within a usable budget of 2,900. The anchor
    # counted 3,000 for a prefix of 2,071 (ratio 1.45, in the band), over the budget.
    messages = [user("w" * 4000), assistant("a"), user("w" * 4000), assistant("b", {"input": 3000}), user("q")]
    small = {"id": "m", "limits": {"context_window": 3000, "max_output_tokens": 100}}
    prompts: list[str] = []

    def summarizer(system_prompt: str, user_prompt: str, model: dict[str, Any]) -> str:
        prompts.append(user_prompt)
        return "## Goal\n- the task"

    config = {**USAGE, "max_result_tokens": 0}
    # With a summary that prompt predates it: no anchor, nothing to compact.
    request = {"model": small, "messages": messages,
               "options": {"reserved_tokens": 0, "previous_summary": "earlier work"}}
    answer = call("context::assemble", request, config=config, summarizer=summarizer)
    assert prompts == [] and "calibration" not in answer["breakdown"]
    assert answer == call("context::assemble", request, config={"max_result_tokens": 0})
    # Without one the anchor counts: 3,000 + growth is over the budget, so the head is compacted.
    plain = {**request, "options": {"reserved_tokens": 0}}
    answer = call("context::assemble", plain, config=config, summarizer=summarizer)
    assert len(prompts) == 1
    assert (answer["token_count"], answer["applied"]["compacted"], answer["applied"]["tail_start_index"]) \
        == (1575, True, 2)
    assert answer["breakdown"]["calibration"] == {"anchor_index": 3, "provider_tokens": 3000,
                                                  "ratio": 1.4486, "growth_ratio": 1.4486}


def test_an_earlier_anchor_that_counted_more_than_a_later_one_predates_a_reduction():
    # The newest anchor (800 for 2,000: ratio 0.4, out of the band) counted less than the one
    # before it (1,800 for 1,000): the history was reduced between them, so the older one's
    # prompt is not this request's prefix either. No anchor.
    messages = [user("u"), assistant("a", {"input": 1800}), user("u"), assistant("a", {"input": 800}),
                user("u")]
    sizes = [1000, 0, 1000, 0, 100]
    assert choose_calibration(messages, range(5), sizes, 0) is None
    # A plausible newest anchor stays a lone anchor: the larger older count gives no growth.
    messages[3] = assistant("a", {"input": 1700})
    c = choose_calibration(messages, range(5), sizes, 0)
    assert (c.anchor_index, c.provider_tokens, c.estimated_tokens, c.growth_estimate) == (3, 1700, 2000, 0)
    assert c.growth_ratio == 0.85


def test_anchors_whose_ratios_disagree_wildly_leave_the_count_uncalibrated():
    # Newest 3,600 / 2,000 = 1.8, the one before 800 / 1,000 = 0.8: 2.25 apart (over 2).
    messages = [user("u"), assistant("a", {"input": 800}), user("u"), assistant("a", {"input": 3600}),
                user("u")]
    sizes = [1000, 0, 1000, 0, 100]
    assert choose_calibration(messages, range(5), sizes, 0) is None
    # 0.95 and 1.8 agree (1.89 apart); 1,000 estimated tokens apart is no growth span: lone.
    messages[1] = assistant("a", {"input": 950})
    c = choose_calibration(messages, range(5), sizes, 0)
    assert (c.anchor_index, c.provider_tokens, c.growth_estimate) == (3, 3600, 0)


def test_an_anchor_that_overflows_what_fits_uncalibrated_is_answered_uncalibrated():
    # Estimates 1019, 38, 1019, 33, 20 (2,129) within a usable budget of 2,900. The anchor's
    # ratio 1.9 (in the band) counts 1,936 + ceil(1,110 * 1.9) = 4,045: over. Calibration never
    # turns a fitting request into an overflow: the answer is the uncalibrated one.
    filler = "w" * 4000
    messages = [user(filler), assistant("a", {"input": 1936}), user(filler), assistant("b"), user("q")]
    small = {"id": "m", "limits": {"context_window": 3000, "max_output_tokens": 100}}
    request = {"model": small, "messages": messages, "options": {"reserved_tokens": 0}}
    config = {**USAGE, "max_result_tokens": 0}
    assert call("context::count-tokens", request, config=config)["tokens"] == 4045
    answer = call("context::assemble", request, config=config)
    assert (answer["token_count"], answer["usable"]) == (2129, 2900)
    assert answer["messages"] == messages and "calibration" not in answer["breakdown"]
    assert answer == call("context::assemble", request, config={"max_result_tokens": 0})


def test_a_pinned_anchor_that_fits_uncalibrated_is_never_refused_for_a_calibration():
    # anchor_messages 1 pins 1,019 estimated tokens; the usage anchor (ratio 1.9) puts the
    # calibrated budget below them, the uncalibrated budget (1,900) holds them: uncalibrated.
    messages = [user("w" * 4000), assistant("a", {"input": 1936}), user("q")]
    small = {"id": "m", "limits": {"context_window": 2000, "max_output_tokens": 100}}
    request = {"model": small, "messages": messages, "options": {"reserved_tokens": 0, "anchor_messages": 1}}
    answer = call("context::assemble", request, config=USAGE)
    assert (answer["token_count"], answer["usable"]) == (1077, 1900)
    assert answer == call("context::assemble", request)


def _compacting_request() -> dict[str, Any]:
    # Estimates 1019, 38, 1019, 33, 1019, 33, 20 (3,181): over the usable budget of 2,900.
    filler = "w" * 4000
    messages = [user(filler), assistant("a", {"input": 1936}), user(filler), assistant("b"),
                user(filler), assistant("c"), user("q")]
    small = {"id": "m", "limits": {"context_window": 3000, "max_output_tokens": 100}}
    return {"model": small, "messages": messages, "options": {"reserved_tokens": 0}}


def test_the_summariser_budget_is_never_below_the_uncalibrated_one():
    # The anchor (ratio 1.9) puts the calibrated budget at 1,526 estimated tokens; the
    # summariser still gets the uncalibrated 2,900, so the head goes in one request (2,321
    # tokens), as without calibration, not in two of at most 1,526.
    prompts: list[int] = []

    def summarizer(system_prompt: str, user_prompt: str, model: dict[str, Any]) -> str:
        prompts.append((len(system_prompt.encode()) + len(user_prompt.encode())) // 4)
        return "## Goal\n- the task"

    config = {**USAGE, "max_result_tokens": 0}
    answer = call("context::assemble", _compacting_request(), config=config, summarizer=summarizer)
    assert prompts == [2321]
    assert (answer["token_count"], answer["applied"]["compacted"], answer["applied"]["tail_start_index"]) \
        == (2056, True, 4)
    assert answer["breakdown"]["calibration"]["provider_tokens"] == 1936
    prompts.clear()
    call("context::assemble", _compacting_request(), config={"max_result_tokens": 0}, summarizer=summarizer)
    assert prompts == [2321]


def test_a_calibrated_run_that_overflows_is_answered_by_the_uncalibrated_run():
    # The summariser fails once: the calibrated run cannot compact and ends over even the
    # uncalibrated budget, so the call runs again without the anchor, compacts, and fits.
    replies = iter([RuntimeError("busy"), "## Goal\n- the task", "## Goal\n- the task"])

    def summarizer(system_prompt: str, user_prompt: str, model: dict[str, Any]) -> str:
        reply = next(replies)
        if isinstance(reply, Exception):
            raise reply
        return reply

    answer = call("context::assemble", _compacting_request(), config={**USAGE, "max_result_tokens": 0},
                  summarizer=summarizer)
    assert (answer["token_count"], answer["applied"]["compacted"]) == (1082, True)
    assert "calibration" not in answer["breakdown"]
    assert answer == call("context::assemble", _compacting_request(), config={"max_result_tokens": 0},
                          summarizer=summarizer)


def test_count_tokens_of_a_context_with_a_summary_skips_an_anchor_counted_over_the_whole():
    # The system prompt holds this worker's summary section: the messages start at a compaction's
    # tail. The anchor counted 1,900 for a prefix of 1,019 (ratio 1.86, in the band), more than
    # our estimate of the whole request (1,019 + 38 + 20 + the prompt): it held the replaced
    # history, and the count is uncalibrated.
    from context_manager.core.compaction.prompts import render_system_prompt

    messages = [user("w" * 4000), assistant("a", {"input": 1900}), user("q")]
    summarized = {"model": MODEL, "system_prompt": render_system_prompt("s" * 40, "earlier work"),
                  "messages": messages}
    assert call("context::count-tokens", summarized, config=USAGE) == call("context::count-tokens", summarized)
    # Without the section the same anchor counts.
    plain = {**summarized, "system_prompt": "s" * 40}
    assert call("context::count-tokens", plain, config=USAGE)["calibration"]["provider_tokens"] == 1900
    # The section placed as a message (summary_placement: message) says the same.
    from context_manager.core.compaction.prompts import summary_message

    placed = {**plain, "messages": [summary_message("earlier work", messages[0]), *messages]}
    assert "calibration" not in call("context::count-tokens", placed, config=USAGE)


def test_carries_summary_reads_only_the_rendered_section():
    from context_manager.core.compaction.prompts import carries_summary, render_system_prompt, summary_message

    assert carries_summary(render_system_prompt("base", "s"), [])
    assert carries_summary(render_system_prompt(None, "s"), [])
    assert not carries_summary(render_system_prompt("base", None), [])
    assert not carries_summary("talk about # Conversation summary here", [])
    assert carries_summary(None, [summary_message("s", None), user("u")])
    assert not carries_summary(None, [user("u"), summary_message("s", None)])
