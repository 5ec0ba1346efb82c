"""`reduce_to`: grid steps, drop_oldest and compaction's head on the grid, and assemble's use."""

import pytest
from helpers import user

from context_manager import call
from context_manager.core.compaction.selection import stepped_head
from context_manager.core.passes.drop_oldest import drop_oldest
from context_manager.core.passes.steps import grid_cut, step_tokens, stepped_amount
from tests.core.passes.test_drop_oldest import _session, call_round


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


# --- emergency reduction on stable steps ------------------------------------------------------

from context_manager.core.counting.estimate import HEURISTIC  # noqa: E402
from context_manager.core.passes.emergency import emergency_reduce  # noqa: E402


def _results_session(texts: list[str]) -> list:
    view = [user("task")]
    for n, text in enumerate(texts):
        view += call_round(f"c{n}", text)
    return view


def _replaced(view, reduced) -> list[int]:
    return [i for i, (old, new) in enumerate(zip(view, reduced.messages)) if old is not new]


def test_emergency_oldest_first_replaces_in_transcript_order():
    view = _results_session(["a" * 800, "b" * 4000, "c" * 2000])
    sizes = [HEURISTIC.message(m) for m in view]
    assert _replaced(view, emergency_reduce(view, sizes, 100, HEURISTIC)) == [4]  # the largest
    assert _replaced(view, emergency_reduce(view, sizes, 50, HEURISTIC, oldest_first=True)) == [2]


def _emergency_payload(texts: list[str]) -> dict:
    messages = [{"role": "user", "content": [{"type": "text", "text": "task"}], "timestamp": 1}]
    for n, text in enumerate(texts):
        messages.append({"role": "assistant", "content": [{"type": "function_call", "id": f"c{n}",
                                                           "function_id": "f"}],
                         "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": 2})
        messages.append({"role": "function_result", "function_call_id": f"c{n}", "function_id": "f",
                         "content": [{"type": "text", "text": text}], "timestamp": 3})
    # allow_prune false: only emergency reduction can make room
    return {"model": {"id": "m", "limits": {"context_window": 10000, "max_output_tokens": 1000}},
            "messages": messages, "options": {"allow_prune": False, "max_result_tokens": 0}}


def _replaced_indices(payload: dict, config: dict) -> list[int]:
    answer = call("context::assemble", payload, config=config)
    return [i for i, m in enumerate(answer["messages"])
            if m["role"] == "function_result" and "context_reference" in (m["details"] or {})]


def test_emergency_keeps_the_just_enough_choice_when_it_touches_only_the_newest_round():
    # the newest result alone is the largest and enough: no earlier message changes either way
    payload = _emergency_payload(["x" * 4000] * 6 + ["y" * 16000])
    assert _replaced_indices(payload, {}) == [14]
    assert _replaced_indices(payload, {"reduce_to": 0.6}) == [14]


def test_emergency_steps_oldest_first_when_it_must_rewrite_earlier_history():
    # n results of ~1,000 tokens in 8,000 usable (a step of 3,200): the plain pass replaces one
    # more earlier result on almost every call; the stepped one a step of results at a time
    def replaced(rounds: int, config: dict) -> list[int]:
        return _replaced_indices(_emergency_payload(["x" * 4000] * rounds), config)

    assert [len(replaced(n, {})) for n in range(9, 15)] == [3, 4, 5, 6, 8, 9]
    stepped = [replaced(n, {"reduce_to": 0.6}) for n in range(9, 15)]
    assert [len(indices) for indices in stepped] == [4, 4, 8, 8, 8, 12]
    assert stepped[0] == [2, 4, 6, 8] and stepped[2] == [2, 4, 6, 8, 10, 12, 14, 16]
