"""The opt-in last resort (`overflow_fallback: drop_oldest`): drop the oldest history.

When every other pass has run and the context is still over budget, whole units of the
model-facing copy are dropped, oldest first, until it fits:

* before the newest user message a unit is a whole turn (a user message and what follows it up to
  the next user message; messages ahead of the first user message form a unit of their own);
* after the newest user message, and everywhere in a window without any user message, a unit is
  a round: an assistant message and what follows it up to the next assistant message.

A unit boundary that would separate a function call from a result answering it is not a
boundary, so a call and its result are dropped together or kept together. The unit holding the
newest user message is never dropped (the task of a single-task session stays), and in a window
without a user message the newest unit stays, so the list is never emptied.

With a ``step`` (``reduce_to`` below 1, ``core.passes.steps``) the units dropped are the first
ones up to a grid point of the droppable units' tokens, counted from the oldest: consecutive
calls on a growing history drop the same units until the rest no longer fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from context_manager.core.passes.steps import grid_cut
from context_manager.wire.messages import calls_answered, calls_made

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class DropResult:
    messages: list[Message]
    sizes: list[int]
    view_to_orig: list[int]
    dropped_messages: int
    dropped_ranges: list[list[int]]  # [start, end) request indices, ascending


def units(view: list[Message]) -> tuple[list[tuple[int, int]], int | None]:
    """The droppable units of ``view`` as ``[start, end)`` pairs, and the index of the kept one."""
    if not view:
        return [], None
    newest_user = next((i for i in range(len(view) - 1, -1, -1) if view[i]["role"] == "user"), None)
    starts_unit = "user" if newest_user is not None else "assistant"
    cut = [False] * (len(view) + 1)
    for i, message in enumerate(view):
        if newest_user is not None and i > newest_user:
            cut[i] = message["role"] == "assistant"
        else:
            cut[i] = message["role"] == starts_unit
    if newest_user is not None:
        cut[newest_user] = True
    cut[0] = True
    cut[len(view)] = True

    # A boundary strictly after a call and at or before its answer would split the pair.
    blocked = [0] * (len(view) + 2)
    called_at: dict[str, int] = {}
    for i, message in enumerate(view):
        for call_id in calls_answered(message):
            origin = called_at.get(call_id)
            if origin is not None and origin < i:
                blocked[origin + 1] += 1
                blocked[i + 1] -= 1
        for call_id in calls_made(message):
            called_at[call_id] = i
    running = 0
    for i in range(len(view) + 1):
        running += blocked[i]
        if running > 0 and 0 < i < len(view):
            cut[i] = False

    bounds = [i for i in range(len(view) + 1) if cut[i]]
    spans = list(zip(bounds, bounds[1:]))
    if newest_user is not None:
        kept = next(k for k, (s, e) in enumerate(spans) if s <= newest_user < e)
    else:
        kept = len(spans) - 1
    return spans, kept


def drop_oldest(view: list[Message], sizes: list[int], view_to_orig: list[int],
                excess: int, step: int = 0) -> DropResult:
    """Drop the oldest units until at least ``excess`` tokens are gone (or nothing is left to drop);
    with ``step > 0``, up to the first grid point that frees that much."""
    spans, kept = units(view)
    droppable = [span for k, span in enumerate(spans) if k != kept]
    if step > 0:
        removable = [0]
        for start, end in droppable:
            removable.append(removable[-1] + sum(sizes[start:end]))
        count = grid_cut(removable, excess, step)
    else:
        count, freed = 0, 0
        while count < len(droppable) and freed < excess:
            start, end = droppable[count]
            freed += sum(sizes[start:end])
            count += 1
    dropped = [False] * len(view)
    for start, end in droppable[:count]:
        for i in range(start, end):
            dropped[i] = True

    ranges: list[list[int]] = []
    previous = False
    for i, gone in enumerate(dropped):
        if gone:
            if previous:
                ranges[-1][1] = view_to_orig[i] + 1
            else:
                ranges.append([view_to_orig[i], view_to_orig[i] + 1])
        previous = gone
    keep = [i for i in range(len(view)) if not dropped[i]]
    return DropResult(
        messages=[view[i] for i in keep],
        sizes=[sizes[i] for i in keep],
        view_to_orig=[view_to_orig[i] for i in keep],
        dropped_messages=len(view) - len(keep),
        dropped_ranges=ranges,
    )
