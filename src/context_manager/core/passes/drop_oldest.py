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

With a ``note`` (``working_set: true``) the dropped messages leave one message in their place,
where the first of them stood: the note is part of what must fit, so units are dropped until the
freed tokens cover the excess and the note's size (recomputed as the dropped set grows); when no
number of units makes room for it, the drop happens without a note. A note is a whole message
between units, so no call is split from its result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from context_manager.core.passes.steps import grid_cut
from context_manager.wire.messages import calls_answered, calls_made

Message = dict[str, Any]
# The note of a dropped range: (message, its size) for the dropped messages, or None.
NoteMaker = Callable[[list[Message]], "tuple[Message, int] | None"]
# Growing the dropped set for a note converges in a step or two; this bounds the search.
NOTE_ROUNDS = 8


@dataclass(frozen=True, slots=True)
class DropResult:
    messages: list[Message]
    sizes: list[int]
    view_to_orig: list[int]
    dropped_messages: int
    dropped_ranges: list[list[int]]  # [start, end) request indices, ascending
    # The note left in place of the dropped messages: its index in ``messages`` and size.
    note_index: int | None = None
    note_size: int = 0


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


def _count(droppable: list[tuple[int, int]], sizes: list[int], excess: int, step: int) -> int:
    """How many of the oldest droppable units go to free ``excess`` tokens."""
    if step > 0:
        removable = [0]
        for start, end in droppable:
            removable.append(removable[-1] + sum(sizes[start:end]))
        return grid_cut(removable, excess, step)
    count, freed = 0, 0
    while count < len(droppable) and freed < excess:
        start, end = droppable[count]
        freed += sum(sizes[start:end])
        count += 1
    return count


def _noted(view: list[Message], sizes: list[int], droppable: list[tuple[int, int]], excess: int,
           step: int, note: NoteMaker) -> tuple[int, tuple[Message, int] | None]:
    """The units to drop and the note that fits with them; (count for ``excess``, None) when
    no count makes room for a note."""
    plain = _count(droppable, sizes, excess, step)
    extra = 0
    for _round in range(NOTE_ROUNDS):
        count = _count(droppable, sizes, excess + extra, step)
        if count == 0:
            break
        gone = [view[i] for start, end in droppable[:count] for i in range(start, end)]
        made = note(gone)
        if made is None:
            break
        freed = sum(sizes[i] for start, end in droppable[:count] for i in range(start, end))
        if freed >= excess + made[1]:
            return count, made
        if made[1] <= extra or count == len(droppable):
            break  # no larger drop makes room
        extra = made[1]
    return plain, None


def drop_oldest(view: list[Message], sizes: list[int], view_to_orig: list[int],
                excess: int, step: int = 0, note: NoteMaker | None = None) -> DropResult:
    """Drop the oldest units until at least ``excess`` tokens are gone (or nothing is left to drop);
    with ``step > 0``, up to the first grid point that frees that much; with ``note``, leave the
    note it makes of the dropped messages in their place."""
    spans, kept = units(view)
    droppable = [span for k, span in enumerate(spans) if k != kept]
    made: tuple[Message, int] | None = None
    if note is not None:
        count, made = _noted(view, sizes, droppable, excess, step, note)
    else:
        count = _count(droppable, sizes, excess, step)
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
    messages = [view[i] for i in keep]
    kept_sizes = [sizes[i] for i in keep]
    origins = [view_to_orig[i] for i in keep]
    note_index: int | None = None
    if made is not None:
        first = dropped.index(True)
        note_index = sum(1 for i in keep if i < first)
        messages.insert(note_index, made[0])
        kept_sizes.insert(note_index, made[1])
        origins.insert(note_index, view_to_orig[first])
    return DropResult(
        messages=messages,
        sizes=kept_sizes,
        view_to_orig=origins,
        dropped_messages=len(view) - len(keep),
        dropped_ranges=ranges,
        note_index=note_index,
        note_size=made[1] if made is not None else 0,
    )
