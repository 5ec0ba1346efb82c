"""``core.compaction.carry_cost``: the growth per call read from a request, and whether an early
compaction under a history ceiling saves more cache reads than the re-send it costs."""

from __future__ import annotations

from context_manager.core.compaction.carry_cost import (
    early_compaction_saves,
    growth_per_round,
    summarizer_call_tokens,
)
from context_manager.core.compaction.prompts import build_system_prompt
from context_manager.core.counting.estimate import HEURISTIC


def view(*roles: str) -> list[dict[str, str]]:
    return [{"role": role} for role in roles]


def test_the_growth_is_the_mean_of_the_last_eight_rounds():
    roles = ["user"] + ["assistant", "function_result"] * 10
    sizes = [500] + [100, 300] * 10
    # the last eight rounds start at index 5: 8 x 400 tokens
    assert growth_per_round(view(*roles), sizes) == 400.0
    assert growth_per_round(view("user", "assistant", "user", "assistant"), [9, 10, 20, 30]) == 30.0


def test_fewer_than_two_rounds_or_no_tokens_measure_nothing():
    assert growth_per_round(view("user", "assistant", "user"), [10, 20, 30]) is None
    assert growth_per_round(view("user"), [10]) is None
    assert growth_per_round(view("assistant", "assistant"), [0, 0]) is None


def test_an_early_compaction_saves_when_the_reads_it_spares_exceed_what_is_re_sent():
    sizes = [4000, 4000, 1000]  # the head is the first two
    # 0.1 x 8000 x (6000 / 400) = 12000 against 1000 + a summary of 2000 (usable 16000)
    assert early_compaction_saves(sizes, 2, 6000, 16000, 400.0) is True
    # 0.1 x 8000 x (300 / 400) = 600 against 3000
    assert early_compaction_saves(sizes, 2, 300, 16000, 400.0) is False
    # at the boundary: 0.1 x 8000 x (1500 / 400) = 3000 against 3000 saves
    assert early_compaction_saves(sizes, 2, 1500, 16000, 400.0) is True


def test_the_summariser_call_an_early_compaction_adds_is_weighed_with_the_re_send():
    sizes = [4000, 4000, 1000]
    # at the boundary above (3000 against 3000) one token of summariser call tips it
    assert early_compaction_saves(sizes, 2, 1500, 16000, 400.0, summarizer_tokens=0) is True
    assert early_compaction_saves(sizes, 2, 1500, 16000, 400.0, summarizer_tokens=1) is False
    # 0.1 x 8000 x (6000 / 400) = 12000 against 3000 + 8000 still saves
    assert early_compaction_saves(sizes, 2, 6000, 16000, 400.0, summarizer_tokens=8000) is True


def test_a_summariser_call_costs_its_prompt_the_previous_summary_and_the_new_one():
    # summary budget at 16000: 2000; the template alone, then with standing instructions
    prompt = HEURISTIC.text(build_system_prompt(None, None))
    assert summarizer_call_tokens(HEURISTIC, 16000, None) == prompt + 4000
    guided = HEURISTIC.text(build_system_prompt(None, "Keep every file path."))
    assert summarizer_call_tokens(HEURISTIC, 16000, "Keep every file path.") == guided + 4000 > prompt + 4000
