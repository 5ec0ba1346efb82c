"""Where the summarised head ends and the verbatim tail begins (spec 03 §1).

The boundary only ever falls on a *safe cut*, so a function call and its result are never split
between the summary and the tail. Pure: works on a message list and its size memo.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Sequence


@dataclass(frozen=True, slots=True)
class Selection:
    """``head_len`` leading messages are summarised; the tail starts at ``tail_start_index``.

    ``tail_start_index`` is ``None`` when the whole history is head; otherwise it equals
    ``head_len``. ``head_len == 0`` means there is nothing to summarise.
    """

    head_len: int
    tail_start_index: int | None

    @property
    def is_whole_head(self) -> bool:
        return self.tail_start_index is None


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


def select(
    messages: Sequence[dict[str, Any]],
    sizes: Sequence[int],
    budget: int,
    tail_turns: int,
) -> Selection:
    """Keep as many recent turns verbatim as fit ``budget``; see 03 §1.4 for every case."""
    whole_head = Selection(len(messages), None)
    if tail_turns == 0:
        return whole_head
    all_turns = turns(messages)
    if not all_turns:
        return whole_head

    prefix = [0, *accumulate(sizes)]
    recent = all_turns[-tail_turns:] if tail_turns < len(all_turns) else all_turns

    total = 0
    keep: int | None = None
    for start, end in reversed(recent):
        size = prefix[end] - prefix[start]
        if total + size <= budget:
            total += size
            # An unsafe turn start rides along in the tail but cannot be the boundary.
            if is_safe_cut(messages[start]):
                keep = start
            continue
        cut = _split_turn(messages, prefix, start, end, budget - total)
        if cut is not None:
            keep = cut
        break

    if keep is not None:
        return Selection(keep, keep)

    # Nothing fits: keep at least the newest turn that can start a tail, whatever its size.
    for start, _end in reversed(all_turns):
        if start > 0 and is_safe_cut(messages[start]):
            return Selection(start, start)
    return Selection(0, 0)


def _split_turn(
    messages: Sequence[dict[str, Any]],
    prefix: list[int],
    start: int,
    end: int,
    remaining: int,
) -> int | None:
    """The oldest safe position inside the turn (never its user message) whose suffix fits."""
    if remaining == 0 or end - start <= 1:
        return None
    for position in range(start + 1, end):
        if not is_safe_cut(messages[position]):
            continue
        if prefix[end] - prefix[position] > remaining:
            continue
        return position
    return None

