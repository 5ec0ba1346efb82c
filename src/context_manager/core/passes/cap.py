"""The per-result cap: an unconditional ceiling on the size of any single function result.

A result whose result tokens exceed the threshold keeps roughly 90% of the threshold as a
head (60%) and a tail (40%) of its text around a marker naming what was cut; every non-text
block of that result is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from context_manager.core.counting.estimate import result_tokens
from context_manager.core.memo import remembered
from context_manager.core.reuse import NO_REUSE, CallReuse
from context_manager.ports import Estimator
from context_manager.wire import codec
from context_manager.wire.codec import utf8_len
from context_manager.wire.messages import (
    Block,
    Message,
    resolve_inline_function_ids,
    text_block,
    text_of,
    with_block,
    with_content,
)

UNRESOLVED_NAME = "the function"
# Large details on a capped result are replaced: they travel between workers, not to the model.
MAX_CAPPED_DETAILS_BYTES = 2048
_FALLBACK_MARKERS = ("[cap]", "\u2026", "")


@dataclass(frozen=True, slots=True)
class CapStats:
    capped_parts: int = 0
    capped_tokens: int = 0


# One rewritten message: (index, size before, size after, the function id when one result was cut).
CapChange = tuple[int, int, int, "str | None"]


@dataclass(frozen=True, slots=True)
class CapResult:
    messages: list[Message]
    sizes: list[int]
    stats: CapStats
    changes: tuple[CapChange, ...] = ()


def full_marker(tokens: int, name: str) -> str:
    return (
        f"\n[\u2026result capped: was ~{tokens} tokens; middle omitted; "
        f"re-call {name} with narrower arguments if the omitted middle is needed]\n"
    )


def choose_marker(tokens: int, name: str, threshold: int, estimator: Estimator) -> str:
    """The first marker, longest first, whose own estimate fits within the threshold."""
    for marker in (full_marker(tokens, name), *_FALLBACK_MARKERS):
        if estimator.text(marker) <= threshold:
            return marker
    return ""


def _floor_boundary(data: bytes, index: int) -> int:
    if index >= len(data):
        return len(data)
    while index > 0 and (data[index] & 0xC0) == 0x80:
        index -= 1
    return index


def _ceil_boundary(data: bytes, index: int) -> int:
    if index >= len(data):
        return len(data)
    while index < len(data) and (data[index] & 0xC0) == 0x80:
        index += 1
    return index


def capped_text(text: str, tokens: int, threshold: int, marker: str) -> str:
    """Head + marker + tail of `text`, cut on byte budgets and moved onto character boundaries."""
    data = text.encode("utf-8")
    size = len(data)
    target = (size * threshold * 9) // (tokens * 10)
    keep = max(0, target - utf8_len(marker))
    head_budget = (keep * 6) // 10
    tail_budget = keep - head_budget
    head_end = _floor_boundary(data, head_budget)
    tail_start = max(_ceil_boundary(data, max(0, size - tail_budget)), head_end)
    return data[:head_end].decode("utf-8") + marker + data[tail_start:].decode("utf-8")


def _cap_content(
    content: list[Block], name: str, threshold: int, estimator: Estimator
) -> tuple[list[Block], int] | None:
    """The capped content and the pre-cap result tokens, or None when within the threshold."""
    tokens = result_tokens(content, estimator)
    if tokens <= threshold:
        return None
    marker = choose_marker(tokens, name, threshold, estimator)
    return [text_block(capped_text(text_of(content), tokens, threshold, marker))], tokens


def _is_denied_envelope(details: Any) -> bool:
    return isinstance(details, dict) and details.get("status") == "denied"


def _capped_details(details: Any, tokens: int) -> Any:
    if _is_denied_envelope(details) or len(codec.dumps(details)) <= MAX_CAPPED_DETAILS_BYTES:
        return details
    return {"context_capped": {"original_estimated_tokens": tokens}}


def cap_results(
    messages: list[Message],
    sizes: list[int],
    threshold: int,
    estimator: Estimator,
    function_ids: dict[tuple[int, int], str] | None = None,
    known_tokens: dict[int, tuple[Message, int]] | None = None,
    *,
    reuse: CallReuse = NO_REUSE,
) -> CapResult:
    """Cap every result over `threshold`, oldest to newest; returns new lists.

    `sizes` is the per-message estimate memo; every rewritten host message is re-estimated.
    A threshold of 0 disables the pass. `function_ids` is `resolve_inline_function_ids(messages)`
    when the caller already has it; `known_tokens`, when given, receives `id(m) -> (m, result
    tokens)` of every message-level result measured (the prune pass reuses them). Measures and
    rewrites of messages held by `reuse.memo` are remembered there.
    """
    capped = list(messages)
    new_sizes = list(sizes)
    if threshold == 0:
        return CapResult(capped, new_sizes, CapStats())
    if function_ids is None:
        function_ids = resolve_inline_function_ids(messages)
    memo = reuse.memo
    tokens_key = ("result-tokens", estimator)
    cap_key = ("cap", threshold, estimator)
    parts_total = 0
    tokens_total = 0
    changes: list[CapChange] = []
    for index, message in enumerate(messages):
        if message["role"] == "function_result":
            # Depends on the message, the threshold and the estimator only: remembered.
            tokens = remembered(memo, message, tokens_key,
                                lambda: result_tokens(message["content"], estimator))
            if known_tokens is not None:
                known_tokens[id(message)] = (message, tokens)
            if tokens <= threshold:
                continue
            capped[index], size = remembered(
                memo, message, cap_key, lambda: _capped_result_message(message, tokens, threshold, estimator)
            )
            parts = 1
            name: str | None = message["function_id"]
        else:
            rewritten, names = _cap_message(index, message, function_ids, threshold, estimator)
            parts = len(names)
            if parts == 0:
                continue
            capped[index] = rewritten
            size = estimator.message(rewritten)
            name = names[0] if len(set(names)) == 1 else None
        before = new_sizes[index]
        new_sizes[index] = size
        tokens_total += max(0, before - size)
        parts_total += parts
        changes.append((index, before, size, name))
    return CapResult(capped, new_sizes, CapStats(parts_total, tokens_total), tuple(changes))


def _capped_result_message(
    message: Message, tokens: int, threshold: int, estimator: Estimator
) -> tuple[Message, int]:
    """(the capped rewrite of a message-level result over the threshold, its estimate)."""
    marker = choose_marker(tokens, message["function_id"], threshold, estimator)
    content = [text_block(capped_text(text_of(message["content"]), tokens, threshold, marker))]
    rewritten = with_content(message, content)
    rewritten["details"] = _capped_details(message["details"], tokens)
    return rewritten, estimator.message(rewritten)


def _cap_message(
    index: int,
    message: Message,
    function_ids: dict[tuple[int, int], str],
    threshold: int,
    estimator: Estimator,
) -> tuple[Message, list[str]]:
    """The rewrite of a message and the function ids of the results it cut (none: unchanged)."""
    if message["role"] == "function_result":
        outcome = _cap_content(message["content"], message["function_id"], threshold, estimator)
        if outcome is None:
            return message, []
        content, tokens = outcome
        rewritten = with_content(message, content)
        rewritten["details"] = _capped_details(message["details"], tokens)
        return rewritten, [message["function_id"]]
    names: list[str] = []
    for block_index, block in enumerate(message["content"]):
        if block["type"] != "function_result":
            continue
        name = function_ids.get((index, block_index), UNRESOLVED_NAME)
        outcome = _cap_content(block["content"], name, threshold, estimator)
        if outcome is None:
            continue
        message = with_block(message, block_index, with_content(block, outcome[0]))
        names.append(name)
    return message, names
