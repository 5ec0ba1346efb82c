"""Property (2,000 generated growing sessions, marked slow): with ``reduce_to`` below 1, two
consecutive calls on a history grown by one round choose the same cut unless the smaller call was
already at the boundary (its cut no longer fits the grown history)."""

import random

import pytest
from helpers import assistant, result, user

from context_manager.core.budget import preserve_recent
from context_manager.core.compaction.selection import select, stepped_head
from context_manager.core.passes.drop_oldest import drop_oldest
from context_manager.core.passes.steps import step_tokens

pytestmark = pytest.mark.slow

SESSIONS = 2000


def _round(rng: random.Random, n: int) -> tuple[list, list[int]]:
    messages = [assistant(calls=[{"id": f"c{n}", "function_id": "f"}]), result(f"c{n}", "f", "x")]
    return messages, [rng.randint(5, 200), rng.randint(10, 4000)]


def _session(rng: random.Random) -> tuple[list, list[int]]:
    view, sizes = [user("task")], [rng.randint(5, 500)]
    for n in range(rng.randint(1, 40)):
        if rng.random() < 0.1:
            view.append(user(f"follow-up {n}"))
            sizes.append(rng.randint(5, 500))
        messages, round_sizes = _round(rng, n)
        view += messages
        sizes += round_sizes
    return view, sizes


def _cases():
    rng = random.Random(20261201)
    for _ in range(SESSIONS):
        view, sizes = _session(rng)
        grown, grown_sizes = _round(rng, 999)
        usable = rng.randint(2000, 40000)
        reduce_to = rng.choice((0.3, 0.5, 0.6, 0.75, 0.9))
        yield view, sizes, view + grown, sizes + grown_sizes, usable, reduce_to


def test_drop_oldest_keeps_its_cut_until_it_no_longer_fits():
    stepped = kept = 0
    for view, sizes, grown, grown_sizes, usable, reduce_to in _cases():
        step = step_tokens(usable, reduce_to)
        before = drop_oldest(view, sizes, list(range(len(view))), sum(sizes) - usable, step)
        after = drop_oldest(grown, grown_sizes, list(range(len(grown))), sum(grown_sizes) - usable, step)
        at_boundary = sum(before.sizes) + sum(grown_sizes[len(view):]) > usable
        if at_boundary:
            stepped += 1
            assert after.dropped_messages >= before.dropped_messages
        else:
            kept += 1
            assert after.dropped_ranges == before.dropped_ranges
            assert after.messages[:len(before.messages)] == before.messages
        # whatever the cut, the newest user message (the task in force) stays
        newest_user = max(i for i, m in enumerate(grown) if m["role"] == "user")
        assert any(m is grown[newest_user] for m in after.messages)
    # both branches are exercised in quantity
    assert stepped > 200 and kept > 200


def test_compaction_head_keeps_its_grid_point_until_select_passes_it():
    same = moved = 0
    for view, sizes, grown, grown_sizes, usable, reduce_to in _cases():
        step = step_tokens(usable, reduce_to)
        budget = preserve_recent(usable, None)
        head = select(view, sizes, budget, 2).head_len
        grown_head = select(grown, grown_sizes, budget, 2).head_len
        if head == 0 or head >= len(view) or grown_head == 0:
            continue
        before = stepped_head(view, sizes, head, step)
        after = stepped_head(grown, grown_sizes, grown_head, step)
        assert before >= head and after >= grown_head
        # only the tail shrinks: the grid head never cuts into the last message
        assert after < len(grown)
        # `before > head`: the smaller call's head is a grid point (not select's head kept for
        # want of one) and covers the grown call's select head; `head <= grown_head`: select
        # itself did not fall back to an earlier tail start (a new round larger than the budget)
        if head < before and head <= grown_head <= before:
            same += 1
            assert after == before
        else:
            moved += 1
    assert same > 200 and moved > 50
