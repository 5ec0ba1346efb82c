"""Tail selection (spec 03 §1) and the selection side of the worked examples of §8."""

from __future__ import annotations

import pytest
from compaction_support import AC, FR, A, C, U, U_inline_result, X, decoded

from context_manager.core.budget import preserve_recent
from context_manager.core.compaction.selection import Selection, is_safe_cut, select, turns
from context_manager.core.counting.estimate import HEURISTIC


def sizes_of(messages):
    return [HEURISTIC.message(m) for m in messages]


def run(messages, budget, tail_turns=2):
    return select(messages, sizes_of(messages), budget, tail_turns)


EXAMPLE_2 = decoded(U(X(9000)), A("r1"), U("q2"), A("r2"), U("q3"), A("r3"))


def test_turns_start_at_every_user_message():
    messages = decoded(A("hello"), U("q1"), A("a1"), C("note"), U_inline_result("c"), U("q2"))
    assert turns(messages) == [(1, 4), (4, 5), (5, 6)]
    assert turns([]) == []


def test_safe_cuts():
    assert is_safe_cut(decoded(A("a"))[0])
    assert is_safe_cut(decoded(AC("c", "f"))[0])
    assert is_safe_cut(decoded(U("q"))[0])
    assert not is_safe_cut(decoded(U_inline_result("c"))[0])
    assert not is_safe_cut(decoded(FR("c", "f", "out"))[0])
    assert not is_safe_cut(decoded(C("note"))[0])


def test_example_1_everything_fits():
    messages = decoded(U("q1"), A("a1"), U("q2"), A("a2"))
    assert sizes_of(messages) == [17, 33, 17, 33]
    assert run(messages, 8000) == Selection(0, 0)


def test_example_2_two_recent_turns_fit():
    assert sizes_of(EXAMPLE_2) == [9016, 33, 17, 33, 17, 33]
    assert preserve_recent(172000, None) == 8000
    assert run(EXAMPLE_2, 8000) == Selection(2, 2)


def test_example_3_tail_turns_and_zero_budget():
    assert run(EXAMPLE_2, 8000, tail_turns=1) == Selection(4, 4)
    assert run(EXAMPLE_2, 8000, tail_turns=0) == Selection(6, None)
    assert run(EXAMPLE_2, 0) == Selection(4, 4)  # no split with 0 left: fallback A


def test_example_4_call_and_result_stay_together():
    messages = decoded(U(X(3000)), A("r0"), U("follow up"), AC("c2", "shell::run"),
                       FR("c2", "shell::run", X(2100)), A("done"))
    assert sizes_of(messages) == [3016, 33, 19, 51, 2140, 33]
    assert run(messages, 2000) == Selection(5, 5)


def test_example_5_unsafe_newest_turn_defers_to_an_older_safe_turn():
    messages = decoded(U(X(4000)), A("r0"), U("follow up"), AC("c7", "coder::search"),
                       U_inline_result("c7"), A("done"))
    assert sizes_of(messages) == [4016, 33, 19, 52, 35, 33]
    assert run(messages, 2000) == Selection(2, 2)


def test_example_6_oversized_final_turn_is_kept():
    messages = decoded(U(X(3000)), A("r0"), U(X(3000)))
    assert sizes_of(messages) == [3016, 33, 3016]
    assert run(messages, 2000) == Selection(2, 2)


@pytest.mark.parametrize(("budget", "expected"), [(200, 1), (60, 3), (49, 4), (10, 3)])
def test_example_7_leading_messages_outside_every_turn(budget, expected):
    messages = decoded(A("hello"), U("q1"), A("a1"), U("q2"), A("a2"))
    assert sizes_of(messages) == [34, 17, 33, 17, 33]
    assert run(messages, budget) == Selection(expected, expected)


@pytest.mark.parametrize(("budget", "expected"), [
    (50, Selection(0, 0)), (10_000, Selection(0, 0)),
    (49, Selection(1, 1)), (33, Selection(1, 1)),
    (32, Selection(0, 0)), (0, Selection(0, 0)),
])
def test_example_8_degenerate_selections(budget, expected):
    messages = decoded(U("a"), A("b"))
    assert sizes_of(messages) == [17, 33]
    assert run(messages, budget) == expected
    assert run(messages, budget, tail_turns=0) == Selection(2, None)


def test_example_8_no_user_message_is_whole_head():
    messages = decoded(AC("c1", "coder::read-file"), FR("c1", "coder::read-file", X(6000)))
    assert sizes_of(messages) == [52, 6041]
    assert run(messages, 2000) == Selection(2, None)
    assert run([], 2000) == Selection(0, None)


def test_example_9_compact_selects_over_the_request_with_customs():
    request = decoded(C("ui_marker"), U(X(3000)), A("r0"), C("ui_marker"), U(X(3000)), A("r1"),
                      U("latest question"), A("latest answer"))
    assert sizes_of(request) == [29, 3016, 33, 29, 3016, 33, 20, 36]
    assert turns(request) == [(1, 4), (4, 6), (6, 8)]
    assert run(request, 2000) == Selection(5, 5)
    assert sum(sizes_of(request)[:5]) == 6123


def test_example_9_assemble_view_maps_back_to_request_indices():
    request = decoded(C("ui_marker"), U(X(3000)), A("r0"), C("ui_marker"), U(X(3000)), A("r1"),
                      U("latest question"), A("latest answer"))
    view_to_orig = [i for i, m in enumerate(request) if m["role"] != "custom"]
    view = [request[i] for i in view_to_orig]
    assert view_to_orig == [1, 2, 4, 5, 6, 7]
    assert sizes_of(view) == [3016, 33, 3016, 33, 20, 36]
    selection = run(view, 2000)
    assert selection == Selection(3, 3)
    assert view_to_orig[selection.tail_start_index] == 5
    assert sum(sizes_of(view)[:3]) == 6065


def test_comparisons_at_the_edges():
    messages = decoded(U("q1"), A("a1"), U("q2"), A("a2"))
    # total + size == budget fits; a suffix equal to what remains fits too
    assert run(messages, 100) == Selection(0, 0)
    assert run(messages, 99) == Selection(1, 1)
    assert run(messages, 83) == Selection(1, 1)  # remaining 33, suffix 33: not greater, fits
    assert run(messages, 82) == Selection(2, 2)  # remaining 32: no split, the newest turn stays

def test_walk_stops_at_the_first_turn_that_does_not_fit():
    # The middle turn is too big; the oldest would fit but is never examined.
    messages = decoded(U("q1"), A("a1"), U(X(1000)), U("q3"), A("a3"))
    assert run(messages, 100, tail_turns=3) == Selection(3, 3)


def test_custom_messages_are_never_a_boundary():
    messages = decoded(U(X(3000)), A("r0"), U(X(3000)), C("note"), A("after"))
    sizes = sizes_of(messages)
    # split of the newest turn: the custom (unsafe) is skipped, the assistant fits
    assert select(messages, sizes, sizes[4], 2) == Selection(4, 4)


def test_fallback_b_when_no_safe_start_beyond_zero():
    messages = decoded(U(X(3000)), A("r0"), U_inline_result("c1"))
    assert run(messages, 10) == Selection(0, 0)


def test_tail_turns_beyond_the_number_of_turns():
    messages = decoded(U("q1"), A("a1"), U("q2"), A("a2"))
    assert run(messages, 8000, tail_turns=50) == Selection(0, 0)
    assert run(messages, 60, tail_turns=50) == Selection(2, 2)
