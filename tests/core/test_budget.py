"""Budget formulas of spec 01 §7.3 with the worked examples W19, W20, W21 and W27."""

from __future__ import annotations

import pytest

from context_manager.core.budget import (
    default_reserved,
    eager_tail_budget,
    preserve_recent,
    usable_budget,
)
from context_manager.core.resolution import ResolvedModel, fallback_model
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.wire.ints import I64_MAX, I64_MIN, U64_MAX, saturating_add, saturating_mul, saturating_sub


def model(cw: int, out: int, input_limit: int | None = None, budgets=None, provenance="inline") -> ResolvedModel:
    vision = "text_only" if provenance == "router" else "unknown"
    return ResolvedModel(cw, out, input_limit, budgets, vision, provenance)


# W19: (context_window, max_output, input_limit, explicit reserve or None, expected reserve, usable)
W19 = [
    (200000, 8000, None, None, 20000, 172000),
    (32000, 16000, None, None, 3200, 12800),
    (10000, 1000, None, None, 1000, 8000),
    (10000, 1000, 5000, None, 1000, 4000),
    (10000, 1000, None, 0, 0, 9000),
    (200000, 8000, 100000, 20000, 20000, 80000),
    (1000, 2000, None, None, 100, 0),
    (8192, 1024, None, 10000, 10000, 0),
    (10000, 1000, 50000, None, 1000, 49000),
    (120000, 8000, None, 4992, 4992, 107008),
]


@pytest.mark.parametrize("cw,out,input_limit,explicit,reserve,usable", W19)
def test_w19_reserve_and_usable(cw, out, input_limit, explicit, reserve, usable):
    reserved = default_reserved(cw, DEFAULT_CONFIG) if explicit is None else explicit
    assert reserved == reserve
    assert usable_budget(model(cw, out, input_limit), reserved, None) == usable


def test_w19_million_token_window_reserve_is_capped():
    assert default_reserved(1000000, DEFAULT_CONFIG) == 20000


def test_w19_fallback_model():
    fallback = fallback_model()
    reserved = default_reserved(fallback.context_window, DEFAULT_CONFIG)
    assert reserved == 819
    assert usable_budget(fallback, reserved, None) == 6349


def test_w19_thinking_budget_row():
    router = model(200000, 8000, budgets={"high": 16000}, provenance="router")
    assert usable_budget(router, 20000, "high") == 156000


def test_w20_thinking_tiers():
    router = model(100000, 10000, budgets={"high": 16000}, provenance="router")
    reserved = default_reserved(100000, DEFAULT_CONFIG)
    assert reserved == 10000
    assert usable_budget(router, reserved, "high") == 64000
    assert usable_budget(router, reserved, "low") == 80000
    assert usable_budget(router, reserved, None) == 80000
    inline = model(10000, 1000)
    assert usable_budget(inline, default_reserved(10000, DEFAULT_CONFIG), "xhigh") == 8000


def test_w21_router_effective_output_cap_in_usable():
    resolved = model(272000, 32000, provenance="router")
    reserved = default_reserved(272000, DEFAULT_CONFIG)
    assert reserved == 20000
    assert usable_budget(resolved, reserved, None) == 220000


@pytest.mark.parametrize("usable,override,expected", [
    (40000, None, 8000),
    (20000, None, 5000),
    (1000, None, 2000),
    (6349, None, 2000),
    (40000, 123, 123),
    (100, 0, 0),
    (100, 999999, 999999),
])
def test_w27_preserve_recent(usable, override, expected):
    assert preserve_recent(usable, override) == expected


def test_reserved_pct_above_hundred_is_not_clamped_but_capped():
    config = WorkerConfig(reserved_pct=150, reserved_tokens_cap=U64_MAX)
    assert default_reserved(1000, config) == 1500
    assert default_reserved(1000, WorkerConfig(reserved_pct=150)) == 1500
    assert default_reserved(1000000, WorkerConfig(reserved_pct=150)) == 20000


def test_reserve_multiplication_saturates_at_u64():
    config = WorkerConfig(reserved_pct=U64_MAX, reserved_tokens_cap=U64_MAX)
    assert default_reserved(U64_MAX, config) == U64_MAX // 100


def test_zero_cap_gives_zero_reserve():
    assert default_reserved(200000, WorkerConfig(reserved_tokens_cap=0)) == 0


def test_input_limit_zero_wins():
    assert usable_budget(model(10000, 1000, 0), 0, None) == 0


def test_reserve_uses_window_even_with_input_limit():
    # 10 % of the window, not of the input limit.
    assert default_reserved(100000, DEFAULT_CONFIG) == 10000
    assert usable_budget(model(100000, 1000, 50000), 10000, None) == 40000


def test_thinking_budget_saturates():
    router = model(10000, 1000, budgets={"high": 100000}, provenance="router")
    assert usable_budget(router, 0, "high") == 0


def test_integer_ranges_are_the_64_bit_ones():
    assert (U64_MAX, I64_MIN, I64_MAX) == (18446744073709551615, -9223372036854775808, 9223372036854775807)


@pytest.mark.parametrize(
    ("a", "b", "difference", "product"),
    [(5, 3, 2, 15), (3, 5, 0, 15), (7, 7, 0, 49), (U64_MAX, 1, U64_MAX - 1, U64_MAX), (U64_MAX, 2, U64_MAX - 2, U64_MAX),
     (1 << 32, 1 << 32, 0, U64_MAX), ((1 << 32) - 1, (1 << 32) + 1, 0, U64_MAX)],
)
def test_saturating_sub_and_mul(a: int, b: int, difference: int, product: int) -> None:
    assert saturating_sub(a, b) == difference
    assert saturating_mul(a, b) == product


def test_saturating_add_sums_any_number_of_terms_up_to_u64_max():
    assert saturating_add() == 0
    assert saturating_add(4) == 4
    assert saturating_add(1, 2, 3) == 6
    assert saturating_add(U64_MAX - 3, 1, 2) == U64_MAX
    assert saturating_add(U64_MAX - 3, 1, 1) == U64_MAX - 1
    assert saturating_add(U64_MAX, 1) == U64_MAX


@pytest.mark.parametrize("usable,eager_at,expected", [
    (28000, 0.8, 1400),   # 7,000 full-window tail less 5,600 headroom
    (12000, 0.9, 1800),   # 3,000 less 1,200
    (12000, 0.8, 1000),   # 3,000 less 2,400 = 600, raised to the floor
    (60000, 0.8, 1000),   # the 12,000 headroom exceeds the 8,000 tail
    (40000, 1.0, 8000),   # no headroom: the full-window tail
    (0, 0.5, 2000),       # no headroom at 0 usable: the 2,000 minimum tail
])
def test_an_early_compaction_keeps_the_full_window_gap_to_the_next(usable, eager_at, expected):
    assert eager_tail_budget(usable, eager_at) == expected
