"""Where the summarised head ends and the verbatim tail begins (spec 03 §1).

The boundary only ever falls on a *safe cut*, so a function call and its result are never split
between the summary and the tail. Pure: works on a message list and its size memo.

A window without any user message has no turn. With ``user_less_compaction`` (the default) such a
window is walked by *rounds* instead: an assistant message plus the messages after it up to the
next assistant message, where an assistant message that sits between a call and a result
answering that call does not start a round. Rounds go through the same walk as turns. A window
with fewer than two rounds stays a whole-head selection, as without the option.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from context_manager.wire.messages import calls_answered, calls_made


@dataclass(frozen=True, slots=True)
class Selection:
    """``head_len`` leading messages are summarised; the tail starts at ``tail_start_index``.

    ``tail_start_index`` is ``None`` when the whole history is head; otherwise it equals
    ``head_len``. ``head_len == 0`` means there is nothing to summarise.
    """

    head_len: int
    tail_start_index: int | None


def turns(messages: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
    """Half-open ranges, each starting at a user message and running to the next one."""
    starts = [i for i, m in enumerate(messages) if m["role"] == "user"]
    ends = starts[1:] + [len(messages)]
    return list(zip(starts, ends))


def is_safe_cut(message: dict[str, Any]) -> bool:
    """May the tail start here without separating a call from its result?"""
    role = message["role"]
    if role == "assistant":
        return True
    if role == "user":
        return not any(block["type"] == "function_result" for block in message["content"])
    return False


def rounds(messages: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
    """Half-open ranges, each starting at an assistant message that no call/result pair spans.

    Messages ahead of the first such assistant message belong to no round.
    """
    spanned = [0] * (len(messages) + 1)
    called_at: dict[str, int] = {}
    for index, message in enumerate(messages):
        for call_id in calls_answered(message):
            origin = called_at.get(call_id)
            if origin is not None:
                # Positions origin+1 .. index would separate this call from its answer.
                spanned[origin + 1] += 1
                spanned[index + 1] -= 1
        for call_id in calls_made(message):
            called_at[call_id] = index
    starts: list[int] = []
    open_pairs = 0
    for index, message in enumerate(messages):
        open_pairs += spanned[index]
        if message["role"] == "assistant" and open_pairs == 0:
            starts.append(index)
    ends = starts[1:] + [len(messages)]
    return list(zip(starts, ends))



def select(
    messages: Sequence[dict[str, Any]],
    sizes: Sequence[int],
    budget: int,
    tail_turns: int,
    *,
    user_less_compaction: bool = True,
) -> Selection:
    """Keep as many recent turns verbatim as fit ``budget``; see 03 §1.4 for every case.

    ``user_less_compaction`` lets a window without any user message keep its recent rounds
    (``tail_turns`` then counts rounds); when false such a window is always whole head.
    """
    whole_head = Selection(len(messages), None)
    if tail_turns == 0:
        return whole_head
    all_turns = turns(messages)
    if all_turns:
        return _walk(all_turns, prefix_sums(sizes), budget, tail_turns,
                     lambda index: is_safe_cut(messages[index]))
    if not user_less_compaction:
        return whole_head
    all_rounds = rounds(messages)
    if len(all_rounds) < 2:
        return whole_head  # a lone round is never compacted away from itself
    round_starts = {start for start, _end in all_rounds}
    return _walk(all_rounds, prefix_sums(sizes), budget, tail_turns,
                 round_starts.__contains__)


def stepped_head(messages: Sequence[dict[str, Any]], sizes: Sequence[int], head_len: int,
                 step: int) -> int:
    """``head_len`` moved forward to the first grid point of ``core.passes.steps`` that covers it.

    The candidate cuts are the positions a tail may start at (safe cuts; round starts in a
    window without a user message), never past the newest user message when ``head_len`` kept
    it, and never the last message's position or beyond, so the tail keeps that message and
    only shrinks: it still fits the budget ``select`` met. ``head_len`` is returned unchanged
    when no grid point lies in that range, or ``step`` is 0.
    """
    if step <= 0 or head_len <= 0:
        return head_len
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if users:
        starts = [i for i in range(1, len(messages) - 1) if is_safe_cut(messages[i])]
        if head_len <= users[-1]:
            starts = [i for i in starts if i <= users[-1]]
    else:
        starts = [start for start, _end in rounds(messages) if 0 < start < len(messages) - 1]
    prefix = prefix_sums(sizes)
    needed = prefix[head_len]
    target = step
    for start in starts:
        removed = prefix[start]
        if removed < target:
            continue
        if removed >= needed and start >= head_len:
            return start
        while target <= removed:
            target += step
    return head_len


def prefix_sums(sizes: Sequence[int]) -> list[int]:
    """``prefix[e] - prefix[s]`` is the cost of the range ``[s, e)``."""
    return [0, *accumulate(sizes)]


def _walk(
    units: list[tuple[int, int]],
    prefix: list[int],
    budget: int,
    tail_units: int,
    safe: Callable[[int], bool],
) -> Selection:
    """The newest-first walk over turns or rounds; ``safe(i)``: may the tail start at ``i``?"""
    recent = units[-tail_units:] if tail_units < len(units) else units

    total = 0
    keep: int | None = None
    for start, end in reversed(recent):
        size = prefix[end] - prefix[start]
        if total + size <= budget:
            total += size
            # An unsafe unit start rides along in the tail but cannot be the boundary.
            if safe(start):
                keep = start
            continue
        cut = _split_unit(prefix, start, end, budget - total, safe)
        if cut is not None:
            keep = cut
        break

    if keep is not None:
        return Selection(keep, keep)

    # Nothing fits: keep at least the newest unit that can start a tail, whatever its size.
    for start, _end in reversed(units):
        if start > 0 and safe(start):
            return Selection(start, start)
    return Selection(0, 0)


def _split_unit(
    prefix: list[int],
    start: int,
    end: int,
    remaining: int,
    safe: Callable[[int], bool],
) -> int | None:
    """The oldest safe position inside the unit (never its first message) whose suffix fits."""
    if remaining == 0 or end - start <= 1:
        return None
    for position in range(start + 1, end):
        if not safe(position):
            continue
        if prefix[end] - prefix[position] > remaining:
            continue
        return position
    return None
