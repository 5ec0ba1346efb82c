"""The suites' one cost model (bench/kit/ledger) and the replay's economy table."""

from __future__ import annotations

import pytest
from helpers import assistant, user

from bench.kit.ledger import Ledger, cached_prefix_tokens
from bench.replay.__main__ import main
from bench.replay.replay import MODES_BY_NAME, ReplayStats, replay, shipped_sessions
from bench.replay.tables import economy_rows
from context_manager.core.counting.estimate import HEURISTIC


def test_the_cached_prefix_is_the_prompt_and_the_leading_equal_messages():
    a, b, c = user("a" * 40), assistant("b" * 80), user("c" * 120)
    prompt = "p" * 400  # 100 tokens
    assert cached_prefix_tokens(None, (prompt, [a])) == 0
    assert cached_prefix_tokens((prompt, [a, b]), (prompt, [a, b, c])) == (
        100 + HEURISTIC.message(a) + HEURISTIC.message(b))
    assert cached_prefix_tokens((prompt, [a, c]), (prompt, [a, b, c])) == 100 + HEURISTIC.message(a)
    assert cached_prefix_tokens((prompt, [a]), ("other", [a])) == 0


def test_the_ledger_prices_every_request_alike():
    ledger = Ledger(sent=2200, cached=1000)
    ledger.summarise(300, 50)
    assert (ledger.input, ledger.input_cached, ledger.summarizer_tokens) == (2500, 1000, 350)
    assert ledger.billed_automatic == pytest.approx(0.1 * 1000 + 1500 + 50)
    # the summariser's input is written like any request's, its reply paid at 1
    assert ledger.billed_anthropic == pytest.approx(0.1 * 1000 + 1.25 * 1500 + 50)
    ledger.summarise(400, 10, cached=300)  # a request that repeats the context sent before it
    assert ledger.billed_automatic == pytest.approx(0.1 * 1300 + 1600 + 60)
    assert ledger.billed_anthropic == pytest.approx(0.1 * 1300 + 1.25 * 1600 + 60)


def test_economy_rows_sum_over_sessions():
    first = ReplayStats("a", "32k", "m", compacted=2, prompt_changed_at_compaction=2,
                        bill=Ledger(calls=3, rewrites=1, sent=2_000_000, cached=1_000_000))
    second = ReplayStats("b", "32k", "m", compacted=1,
                         bill=Ledger(calls=2, sent=1_000_000, summarizer_calls=2, summarizer_input=10_000))
    assert economy_rows([("32k", "m", first), ("32k", "m", second)]) == [
        ("32k", "m", "5", "3.00 M", "1", "0", "3", "2", "2", "0.01 M", "2.11 M", "2.61 M")]


@pytest.mark.slow
def test_reuse_gives_a_non_persisting_harness_the_round_trip_bill():
    session = next(s for s in shipped_sessions() if s.name.startswith("single-"))
    round_trip = replay(session, "32k", MODES_BY_NAME["summariser"])
    plain = replay(session, "32k", MODES_BY_NAME["summariser-nopersist"])
    reused = replay(session, "32k", MODES_BY_NAME["summariser-nopersist+reuse"])
    assert reused.bill == round_trip.bill and reused.cache_busts == round_trip.cache_busts
    assert reused.overflows == 0
    assert plain.bill.summarizer_calls > 5 * round_trip.bill.summarizer_calls


@pytest.mark.slow
def test_economy_flag_prints_one_row_per_budget_and_mode(capsys):
    assert main(["--economy", "--sessions", "multi-api-pagination", "--budgets", "16k,32k",
                 "--modes", "none,none+drop_oldest+reduce"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| budget | mode ")
    assert [line.split("|")[1:3] for line in lines[2:6]] == [
        [" 16k    ", " none                    "], [" 16k    ", " none+drop_oldest+reduce "],
        [" 32k    ", " none                    "], [" 32k    ", " none+drop_oldest+reduce "]]
    assert lines[6] == ""


@pytest.mark.slow
def test_message_placement_keeps_the_system_prompt_through_every_compaction():
    session = next(s for s in shipped_sessions() if s.name.startswith("single-"))
    default = replay(session, "32k", MODES_BY_NAME["summariser"])
    placed = replay(session, "32k", MODES_BY_NAME["summariser+message"])
    assert placed.compacted == default.compacted > 0
    assert default.prompt_changed_at_compaction == default.compacted
    assert placed.prompt_changed_at_compaction == 0
    assert placed.overflows == 0
