"""Round-based selection in windows without any user message (`user_less_compaction`)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from compaction_support import AC, FR, A, C, FakeSummarizer, MemoryLeaseStore, U, X, decoded, history

from context_manager.core.compaction.selection import Selection, rounds, select
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.handlers import assemble as assemble_handler
from context_manager.handlers import compact as compact_handler
from context_manager.handlers.context import HandlerContext
from context_manager.ports import ManualClock

ORIGINAL = replace(DEFAULT_CONFIG, user_less_compaction=False)
SMALL = {"id": "small", "limits": {"context_window": 5000, "max_output_tokens": 500}}
SUMMARY = "## Goal\n- keep the build green"


def sizes_of(messages):
    return [HEURISTIC.message(m) for m in messages]


def tool_round(call_id: str, result_units: int) -> tuple[dict[str, Any], dict[str, Any]]:
    return AC(call_id, "shell::run"), FR(call_id, "shell::run", X(result_units))


# Rounds [0,2) 1091, [2,4) 1091, [4,6) 591, [6,7) 33.
WINDOW = decoded(*tool_round("c1", 1000), *tool_round("c2", 1000), *tool_round("c3", 500), A("done"))


def run(messages, budget, tail_turns=2, **flags):
    return select(messages, sizes_of(messages), budget, tail_turns, **flags)


# --- rounds ---------------------------------------------------------------------------------


def test_each_assistant_message_starts_a_round_with_the_results_after_it():
    assert sizes_of(WINDOW) == [51, 1040, 51, 1040, 51, 540, 33]
    assert rounds(WINDOW) == [(0, 2), (2, 4), (4, 6), (6, 7)]
    assert rounds([]) == []


def test_an_assistant_message_between_a_call_and_its_result_joins_the_round():
    interleaved = decoded(AC("c1", "f"), AC("c2", "f"), FR("c1", "f", "one"), FR("c2", "f", "two"),
                          A("done"))
    assert rounds(interleaved) == [(0, 4), (4, 5)]
    commented = decoded(AC("c1", "f"), A("checking"), FR("c1", "f", "one"), AC("c2", "f"),
                        FR("c2", "f", "two"))
    assert rounds(commented) == [(0, 3), (3, 5)]


def test_leading_results_belong_to_no_round_and_customs_ride_in_theirs():
    orphan = decoded(FR("c0", "f", "late"), C("note"), *tool_round("c1", 10), *tool_round("c2", 10))
    assert rounds(orphan) == [(2, 4), (4, 6)]
    custom_inside = decoded(AC("c1", "f"), C("note"), FR("c1", "f", "one"), *tool_round("c2", 10))
    assert rounds(custom_inside) == [(0, 3), (3, 5)]


def test_an_unanswered_call_does_not_hold_the_next_round():
    messages = decoded(AC("c1", "f"), A("gave up"), *tool_round("c2", 10))
    assert rounds(messages) == [(0, 1), (1, 2), (2, 4)]


# --- selection by rounds --------------------------------------------------------------------


@pytest.mark.parametrize(("budget", "tail_turns", "expected"), [
    (2000, 2, Selection(4, 4)),      # 33 + 591 fit
    (2000, 1, Selection(6, 6)),      # tail_turns counts rounds
    (2000, 3, Selection(2, 2)),      # 33 + 591 + 1091 = 1715 fit
    (1715, 3, Selection(2, 2)),      # equal to the budget fits
    (1714, 3, Selection(4, 4)),      # a round is never split: the walk stops
    (10_000, 4, Selection(0, 0)),    # everything fits verbatim: nothing to summarise
    (10_000, 50, Selection(0, 0)),
    (10, 2, Selection(6, 6)),        # nothing fits: the newest round stays, whatever its size
    (0, 2, Selection(6, 6)),
])
def test_recent_rounds_that_fit_stay_verbatim(budget, tail_turns, expected):
    assert run(WINDOW, budget, tail_turns) == expected


def test_tail_turns_zero_is_still_whole_head():
    assert run(WINDOW, 2000, 0) == Selection(7, None)


def test_the_original_keeps_a_user_less_window_whole_head():
    assert run(WINDOW, 2000, user_less_compaction=False) == Selection(7, None)
    assert run(WINDOW, 0, user_less_compaction=False) == Selection(7, None)


def test_a_single_round_is_left_alone():
    lone = decoded(AC("c1", "coder::read-file"), FR("c1", "coder::read-file", X(6000)))
    assert sizes_of(lone) == [52, 6041]
    assert run(lone, 2000) == Selection(2, None)
    assert run([], 2000) == Selection(0, None)
    with_orphan = decoded(FR("c0", "f", "late"), *tool_round("c1", 10))
    assert run(with_orphan, 0) == Selection(3, None)


def test_a_call_and_its_result_stay_on_one_side():
    messages = decoded(AC("c1", "f"), AC("c2", "f"), FR("c1", "f", X(300)), FR("c2", "f", X(300)),
                       *tool_round("c3", 10))
    sizes = sizes_of(messages)
    # The assistant at 1 would fit with everything after it, but c1 is answered at 2.
    assert select(messages, sizes, sum(sizes[1:]), 2) == Selection(4, 4)
    assert select(messages, sizes, sum(sizes), 2) == Selection(0, 0)


def test_leading_results_are_summarised_once_the_rounds_fit():
    messages = decoded(FR("c0", "f", "late"), *tool_round("c1", 10), *tool_round("c2", 10))
    assert run(messages, 10_000) == Selection(1, 1)


def test_histories_with_a_user_message_are_untouched_by_the_flag():
    messages = decoded(U(X(3000)), *tool_round("c1", 1000), *tool_round("c2", 1000), A("done"))
    assert sizes_of(messages) == [3016, 51, 1040, 51, 1040, 33]
    for flag in (True, False):
        # The one turn does not fit: it is split at its oldest assistant whose suffix fits.
        assert run(messages, 2000, user_less_compaction=flag) == Selection(3, 3)


# --- context::compact -----------------------------------------------------------------------


def compact(messages, config=DEFAULT_CONFIG, **options):
    summarizer = FakeSummarizer(replies=[SUMMARY])
    ctx = HandlerContext(config=config, summarizer=summarizer, lease_store=MemoryLeaseStore(),
                         clock=ManualClock(1_000_000))
    payload = {"messages": messages, "model": SMALL, "options": options}
    return asyncio.run(compact_handler.handle(payload, ctx)), summarizer


WIRE_WINDOW = history(*tool_round("c1", 1000), *tool_round("c2", 1000), *tool_round("c3", 500),
                      A("done"))


def test_compact_keeps_the_recent_rounds_of_a_user_less_history():
    response, summarizer = compact(WIRE_WINDOW, preserve_recent_tokens=2000)
    assert response == {"status": "ok", "summary": SUMMARY, "tail_start_index": 4,
                        "tokens_before": 2182, "tokens_after": 7 + 624, "used_prior_summary": False}
    assert summarizer.calls == 1
    assert summarizer.requests[0].user_prompt.count("[tool_call] shell::run") == 2


def test_compact_with_the_flag_off_summarises_everything():
    response, _ = compact(WIRE_WINDOW, config=ORIGINAL, preserve_recent_tokens=2000)
    assert response == {"status": "ok", "summary": SUMMARY, "tail_start_index": None,
                        "tokens_before": 2806, "tokens_after": 7, "used_prior_summary": False}


def test_compact_reports_empty_when_every_round_fits():
    response, summarizer = compact(WIRE_WINDOW, preserve_recent_tokens=10_000, tail_turns=4)
    assert response == {"status": "empty"}
    assert summarizer.calls == 0


# --- context::assemble ----------------------------------------------------------------------


# Five 1091-token rounds and a closing answer (34: two-digit timestamp) against a usable 4000.
FIVE_ROUNDS = history(*(m for k in range(1, 6) for m in tool_round(f"c{k}", 1000)), A("done"))


def assemble(messages, config=DEFAULT_CONFIG, summarizer=None, **options):
    summarizer = summarizer or FakeSummarizer(replies=[SUMMARY] * 4)
    ctx = HandlerContext(config=config, summarizer=summarizer, lease_store=MemoryLeaseStore(),
                         clock=ManualClock(1_000_000))
    payload = {"messages": messages, "model": SMALL, "system_prompt": "Base.", "options": options}
    return asyncio.run(assemble_handler.handle(payload, ctx)), summarizer


def test_assemble_compacts_a_user_less_window_by_rounds():
    response, summarizer = assemble(FIVE_ROUNDS)
    applied = response["applied"]
    assert applied["initial_token_count"] == 5 * 1091 + 34 + 1  # "Base." is 1
    assert (applied["compacted"], applied["tail_start_index"], applied["tokens_before"]) == (True, 8, 4364)
    assert applied["summary"] == SUMMARY
    assert response["messages"] == decoded(*FIVE_ROUNDS)[8:]
    assert response["system_prompt"] == "Base.\n\n# Conversation summary\n\n" + SUMMARY
    assert response["token_count"] == 1091 + 34 + 15  # the prompt with its summary is 15
    assert summarizer.calls == 1


def test_assemble_with_the_flag_off_never_compacts_a_user_less_window():
    response, summarizer = assemble(FIVE_ROUNDS, config=ORIGINAL)
    assert response["applied"]["compacted"] is False
    assert response["applied"]["pruned"] is True  # emergency reduction did the work
    assert summarizer.calls == 0


def test_assemble_keeps_the_customs_in_the_request_index():
    messages = [FIVE_ROUNDS[0], {**C("ui"), "timestamp": 100}, *FIVE_ROUNDS[1:]]
    response, _ = assemble(messages)
    assert response["applied"]["tail_start_index"] == 9
    assert response["messages"] == decoded(*FIVE_ROUNDS)[8:]


def test_a_single_task_session_keeps_compacting_after_its_task_message_is_summarised():
    # First call: the only user message is in the head, so what the caller keeps has no user.
    first_history = history(U("Fix the failing build"),
                            *(m for k in range(1, 6) for m in tool_round(f"c{k}", 1000)))
    first, _ = assemble(first_history)
    tail = first["applied"]["tail_start_index"]
    kept = first_history[tail:]
    assert first["applied"]["compacted"] is True
    assert not any(m["role"] == "user" for m in kept)

    more = [{**m, "timestamp": 100 + i} for i, m in enumerate(
        m for k in range(6, 10) for m in tool_round(f"c{k}", 1000))]
    second, summarizer = assemble(kept + more, previous_summary=first["applied"]["summary"])
    assert second["applied"]["compacted"] is True
    assert "<previous-summary>\n" + SUMMARY + "\n</previous-summary>" in summarizer.requests[0].system_prompt

    assert (second["applied"]["tail_start_index"], second["applied"]["tokens_before"]) == (8, 4364)

    # The original cannot compact again: only emergency reduction stands between it and overflow.
    original, summarizer = assemble(kept + more, config=ORIGINAL,
                                    previous_summary=first["applied"]["summary"])
    assert original["applied"]["compacted"] is False
    assert original["applied"]["pruned_tokens"] == 1712
    assert summarizer.calls == 0
