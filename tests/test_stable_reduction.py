"""`reduce_to`: grid steps, drop_oldest and compaction's head on the grid, and assemble's use."""

import pytest

from context_manager import call
from context_manager.core.compaction.selection import stepped_head
from context_manager.core.passes.drop_oldest import drop_oldest
from context_manager.core.passes.steps import grid_cut, step_tokens, stepped_amount
from helpers import assistant, result, user

from test_drop_oldest import _session, call_round


def test_step_tokens():
    assert step_tokens(10_000, 1.0) == 0
    assert step_tokens(10_000, 0.6) == 4000
    assert step_tokens(8000, 0.75) == 2000
    assert step_tokens(7, 0.5) == 4  # floor(3.5) = 3 kept, 4 removed


@pytest.mark.parametrize("needed,expected", [
    (0, 0),     # nothing needed
    (1, 2),     # grid point 1 (>= 100) is k=2 (150)
    (150, 2),
    (151, 4),   # grid point 2 (first >= 200) is k=4 (320); k=3 (190) is none
    (400, 5),
    (10_000, 5),  # nothing frees enough: everything
])
def test_grid_cut_takes_the_first_grid_point_that_frees_enough(needed, expected):
    removable = [0, 40, 150, 190, 320, 460]
    # grid points for step 100: j=1 -> k=2 (150), j=2 -> k=4 (320, first >= 200),
    # j=3 -> k=4 (320 >= 300), j=4 -> k=5 (460 >= 400)
    assert grid_cut(removable, needed, 100) == expected


def test_stepped_amount():
    assert stepped_amount(0, 100) == 0
    assert stepped_amount(1, 100) == 100
    assert stepped_amount(100, 100) == 100
    assert stepped_amount(101, 100) == 200
    assert stepped_amount(37, 0) == 37


def test_drop_oldest_on_the_grid_drops_a_whole_step():
    view = [user("task"), *call_round("a"), *call_round("b"), *call_round("c"), *call_round("d")]
    sizes = [10, 5, 95, 5, 95, 5, 95, 5, 95]
    just_enough = drop_oldest(view, sizes, list(range(9)), excess=50)
    assert just_enough.dropped_ranges == [[1, 3]]
    stepped = drop_oldest(view, sizes, list(range(9)), excess=50, step=200)
    assert stepped.dropped_ranges == [[1, 5]]  # the first grid point: 200 tokens of rounds
    # the same cut while the excess stays within the step
    assert drop_oldest(view, sizes, list(range(9)), excess=200, step=200).dropped_ranges == [[1, 5]]
    assert drop_oldest(view, sizes, list(range(9)), excess=201, step=200).dropped_ranges == [[1, 9]]


def test_stepped_head_moves_the_head_to_the_grid():
    view = [user("task"), *call_round("a"), *call_round("b"), *call_round("c"), *call_round("d")]
    sizes = [10, 5, 95, 5, 95, 5, 95, 5, 95]
    assert stepped_head(view, sizes, 3, 0) == 3
    # cuts at assistants 1,3,5,7 remove 10,110,210,310 tokens: with a step of 200 the first
    # grid point is 5 (210), which covers a head of 3
    assert stepped_head(view, sizes, 3, 200) == 5
    assert stepped_head(view, sizes, 5, 200) == 5
    # the next grid point (>= 400) would pass the last message: the head stays
    assert stepped_head(view, sizes, 7, 200) == 7


def test_stepped_head_keeps_the_newest_user_message_when_select_kept_it():
    view = [user("old"), *call_round("a"), user("newest"), *call_round("b"), *call_round("c")]
    sizes = [10, 5, 300, 10, 5, 300, 5, 300]
    assert stepped_head(view, sizes, 1, 100) == 3  # 315 covers 10; never beyond index 3


def test_assemble_with_reduce_to_leaves_room_after_a_drop():
    payload = _session(12, "ok")
    plain = call("context::assemble", payload, config={"overflow_fallback": "drop_oldest"})
    stepped = call("context::assemble", payload,
                   config={"overflow_fallback": "drop_oldest", "reduce_to": 0.6})
    assert plain["usable"] == stepped["usable"] == 8000
    # each round is 842 tokens; the step is 3,200: the first grid point is 4 rounds (3,368)
    assert (plain["applied"]["dropped_ranges"], plain["token_count"]) == ([[1, 7]], 7590)
    assert (stepped["applied"]["dropped_ranges"], stepped["token_count"]) == ([[1, 9]], 6749)
    # one more round: the stepped answer keeps its cut and only appends; the plain one drops more
    config = {"overflow_fallback": "drop_oldest", "reduce_to": 0.6}
    again = call("context::assemble", _session(13, "ok"), config=config)
    assert again["applied"]["dropped_ranges"] == [[1, 9]]
    assert again["messages"][:len(stepped["messages"])] == stepped["messages"]
    assert call("context::assemble", _session(13, "ok"),
                config={"overflow_fallback": "drop_oldest"})["applied"]["dropped_ranges"] == [[1, 9]]
    # when the cut no longer fits, the next grid point leaves about reduce_to * usable
    stepped_again = call("context::assemble", _session(14, "ok"), config=config)
    assert (stepped_again["applied"]["dropped_ranges"], stepped_again["token_count"]) == ([[1, 17]], 5069)
