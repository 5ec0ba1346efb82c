"""Cutting one payload to a token size: text keeps its head, tail or both ends around a marker;
JSON arguments are cut inside their string values, so they stay valid JSON of the same shape.

A cut is accepted only when the result fits the target in the estimator's tokens; a payload that
fits is never touched, so cutting what was already cut changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from context_manager.core.retention_policy import KeepEnds
from context_manager.ports import Estimator
from context_manager.wire import codec

Path = tuple[Any, ...]
# Shorter markers tried, in order, when the full one cannot fit the target.
SHORT_MARKER = "[\u2026]"


def result_marker(elided: int, tokens: int, function_id: str | None) -> str:
    name = function_id if function_id else "the function"
    return (
        f"\n[\u2026result truncated: ~{elided} of ~{tokens} tokens elided; "
        f"re-call {name} with narrower arguments if the elided part is needed]\n"
    )


def argument_marker(elided: int, function_id: str) -> str:
    return f"[\u2026argument truncated: ~{elided} tokens elided from this {function_id} call]"


def text_marker(elided: int, tokens: int) -> str:
    return f"\n[\u2026message truncated: ~{elided} of ~{tokens} tokens elided]\n"


def _floor_boundary(data: bytes, index: int) -> int:
    index = min(index, len(data))
    while 0 < index < len(data) and (data[index] & 0xC0) == 0x80:
        index -= 1
    return index


def _ceil_boundary(data: bytes, index: int) -> int:
    index = max(0, min(index, len(data)))
    while index < len(data) and (data[index] & 0xC0) == 0x80:
        index += 1
    return index


def compose(data: bytes, budget: int, keep: KeepEnds, marker: str) -> str:
    """``budget`` bytes of ``data`` (fewer, to stay on character boundaries) around ``marker``."""
    size = len(data)
    if keep == "head":
        return data[:_floor_boundary(data, budget)].decode("utf-8") + marker
    if keep == "tail":
        return marker + data[_ceil_boundary(data, size - budget):].decode("utf-8")
    tail_budget = budget // 2
    head_end = _floor_boundary(data, budget - tail_budget)
    tail_start = max(_ceil_boundary(data, size - tail_budget), head_end)
    return data[:head_end].decode("utf-8") + marker + data[tail_start:].decode("utf-8")


def cut_text(text: str, keep: KeepEnds, markers: tuple[str, ...], fits: Callable[[str], bool]) -> str | None:
    """The longest cut of ``text`` that ``fits``, with the first marker that can fit; else None.

    The byte budget is found by bisection (sizes grow with the budget for every estimator
    here); the chosen cut is checked again, so a result that does not fit is never returned.
    """
    if fits(text):
        return None
    data = text.encode("utf-8")
    for marker in markers:
        if not fits(compose(data, 0, keep, marker)):
            continue
        low, high = 0, len(data) - 1  # ``low`` always fits; the whole text never does
        while low < high:
            middle = (low + high + 1) // 2
            if fits(compose(data, middle, keep, marker)):
                low = middle
            else:
                high = middle - 1
        candidate = compose(data, low, keep, marker)
        if candidate != text and fits(candidate):
            return candidate
    return None


def markers_for(full: str, marked: bool) -> tuple[str, ...]:
    return (full, SHORT_MARKER, "") if marked else ("",)


def _string_leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, str]]:
    if type(value) is str:
        yield path, value
    elif type(value) is dict:
        for key, member in value.items():
            yield from _string_leaves(member, (*path, key))
    elif type(value) is list:
        for index, member in enumerate(value):
            yield from _string_leaves(member, (*path, index))


def _replace(value: Any, path: Path, leaf: str) -> Any:
    if not path:
        return leaf
    head, rest = path[0], path[1:]
    if type(value) is dict:
        return {**value, head: _replace(value[head], rest, leaf)}
    copy = list(value)
    copy[head] = _replace(value[head], rest, leaf)
    return copy


def _shortest_cut(text: str, keep: KeepEnds, markers: tuple[str, ...]) -> str | None:
    """The first marker alone, when it is shorter than ``text``."""
    data = text.encode("utf-8")
    for marker in markers:
        candidate = compose(data, 0, keep, marker)
        if codec.utf8_len(candidate) < len(data):
            return candidate
    return None


def arguments_tokens(arguments: Any, estimator: Estimator) -> int:
    return estimator.text(codec.dumps(arguments).decode("utf-8"))


def cut_arguments(arguments: Any, to: int, keep: KeepEnds, marker: Callable[[int], str], marked: bool,
                  estimator: Estimator) -> Any | None:
    """``arguments`` with string values cut, longest first, until the whole fits ``to``; or None.

    Keys, numbers, booleans and the nesting stay as they are. ``marker(elided)`` words the marker
    of one value. When cutting every string cannot make the whole fit, nothing is cut.
    """
    total = arguments_tokens(arguments, estimator)
    leaves = sorted(_string_leaves(arguments), key=lambda leaf: -codec.utf8_len(leaf[1]))
    current = arguments
    for path, text in leaves:
        if arguments_tokens(current, estimator) <= to:
            break
        base = current

        def fits(candidate: str, base: Any = base, path: Path = path) -> bool:
            return arguments_tokens(_replace(base, path, candidate), estimator) <= to

        candidates = markers_for(marker(max(0, total - to)), marked)
        leaf = cut_text(text, keep, candidates, fits)
        if leaf is None:
            # This value alone cannot make the whole fit: keep as little of it as goes, if shorter.
            leaf = _shortest_cut(text, keep, candidates)
            if leaf is None:
                continue
        current = _replace(base, path, leaf)
    if current is arguments or arguments_tokens(current, estimator) > to:
        return None
    return current
