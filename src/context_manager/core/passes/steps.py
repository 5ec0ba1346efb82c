"""Stable reduction steps (``reduce_to``): cut points that depend only on the content.

A pass that rewrites earlier history to fit (``drop_oldest``, compaction's head, emergency
reduction) normally removes just enough, so the next, slightly longer call must remove a little
more and the prompt prefix a provider caches changes on nearly every call. With ``reduce_to < 1``
such a pass removes whole steps of ``step = usable - floor(reduce_to * usable)`` tokens instead.

The cut points of a step grid are counted from the oldest content: grid point ``j`` is the first
candidate cut at which the removable tokens before it reach ``j * step``. Appending to a history
does not move any of them, so consecutive calls on a growing history choose the same grid point
until the content after it no longer fits, and then the next one, which leaves about
``reduce_to * usable``. Every worker process computes the same cut from the same request.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import floor


def step_tokens(usable: int, reduce_to: float) -> int:
    """The grid spacing in tokens; 0 means "reduce just enough" (``reduce_to`` 1, the original)."""
    if reduce_to >= 1.0:
        return 0
    return usable - floor(reduce_to * usable)


def grid_cut(removable: Sequence[int], needed: int, step: int) -> int:
    """How many leading units to remove: the first grid point that frees at least ``needed``.

    ``removable[k]`` is the tokens freed by removing the first ``k`` units (``removable[0] == 0``,
    non-decreasing). When no grid point frees enough, every unit goes (``len(removable) - 1``).
    """
    if needed <= 0:
        return 0
    last = len(removable) - 1
    target = step
    for k in range(1, last + 1):
        if removable[k] < target:
            continue
        # k is a grid point: the first cut whose removed tokens reach `target`.
        if removable[k] >= needed:
            return k
        while target <= removable[k]:
            target += step
    return last


def stepped_amount(needed: int, step: int) -> int:
    """``needed`` rounded up to a whole number of steps (the amount-based passes' grid)."""
    if needed <= 0 or step <= 0:
        return max(needed, 0)
    return -(-needed // step) * step
