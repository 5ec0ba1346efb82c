"""Emergency reduction: the last-resort pass that makes an assembled request fit.

The largest function results are replaced, one by one, by a bounded JSON reference (hash, byte
count, estimate, preview) until the required number of tokens is freed. No window, protection,
verbosity test or minimum saving applies.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from context_manager.core.counting.estimate import result_tokens
from context_manager.core.passes.prune import PruneStats  # emergency work is reported with the same three counters
from context_manager.ports import Estimator
from context_manager.wire import codec
from context_manager.wire.canonical import canonical_block, canonical_message
from context_manager.wire.codec import canonical_free_form
from context_manager.wire.messages import (
    Block,
    Message,
    resolve_inline_function_ids,
    text_block,
    text_of,
    with_block,
    with_content,
)

REFERENCE_KIND = "function_result_reference"
RETRIEVAL_HINT = (
    "The original result remains in the session transcript; retrieve it by function_call_id."
)
RENDER_PREFIX = "[function result reduced for context budget] "
PREVIEW_CHARS = 160

Location = int | tuple[int, int]


# One replacement: (host message index, function id when known, size before, size after).
EmergencyChange = tuple[int, "str | None", int, int]


@dataclass(frozen=True, slots=True)
class EmergencyResult:
    messages: list[Message]
    sizes: list[int]
    stats: PruneStats
    # In the order made; their size drops add up to ``stats.pruned_tokens``.
    changes: tuple[EmergencyChange, ...] = ()


def preview(content: list[Block], details: Any) -> str:
    """The first 160 code points of the result text (or of its details' JSON), then `…` if cut."""
    source = text_of(content) or codec.dumps(canonical_free_form(details)).decode("utf-8")
    if len(source) > PREVIEW_CHARS:
        return source[:PREVIEW_CHARS] + "\u2026"
    return source


def _reference(
    serialized: bytes,
    function_call_id: str,
    function_id: str | None,
    original_tokens: int,
    preview_text: str,
) -> dict[str, Any]:
    # Constructed objects are emitted with sorted keys; insertion order is that order.
    reference: dict[str, Any] = {"function_call_id": function_call_id}
    if function_id is not None:
        reference["function_id"] = function_id
    reference["kind"] = REFERENCE_KIND
    reference["original_bytes"] = len(serialized)
    reference["original_estimated_tokens"] = original_tokens
    reference["preview"] = preview_text
    reference["retrieval_hint"] = RETRIEVAL_HINT
    reference["sha256"] = hashlib.sha256(serialized).hexdigest()
    return reference


def _rendered(reference: dict[str, Any]) -> str:
    return RENDER_PREFIX + codec.dumps(reference).decode("utf-8")


def message_reference(message: Message, original_tokens: int) -> Message:
    """Replacement of a message-level result: same identity fields, reference content and details."""
    reference = _reference(
        codec.dumps(canonical_message(message)),
        message["function_call_id"],
        message["function_id"],
        original_tokens,
        preview(message["content"], message["details"]),
    )
    replacement = with_content(message, [text_block(_rendered(reference))])
    replacement["details"] = {"context_reference": reference}
    return replacement


def inline_reference(block: Block, function_id: str | None, original_tokens: int) -> Block:
    """Replacement of an inline result block; `function_id` only when the call id resolved."""
    reference = _reference(
        codec.dumps(canonical_block(block)),
        block["function_call_id"],
        function_id,
        original_tokens,
        preview(block["content"], None),
    )
    return with_content(block, [text_block(_rendered(reference))])


def emergency_reduce(
    messages: list[Message], sizes: list[int], required: int, estimator: Estimator,
    *, oldest_first: bool = False,
) -> EmergencyResult:
    """Replace the largest results until `required` tokens are freed; returns new lists.

    ``oldest_first`` (stable steps, ``reduce_to`` below 1) replaces them in transcript order
    instead, so a longer history replaces the same results first and only adds newer ones.
    """
    function_ids = resolve_inline_function_ids(messages)
    candidates: list[tuple[Location, int]] = []
    for index, message in enumerate(messages):
        if message["role"] == "function_result":
            candidates.append((index, estimator.message(message)))
            continue
        for block_index, block in enumerate(message["content"]):
            if block["type"] == "function_result":
                candidates.append(((index, block_index), result_tokens(block["content"], estimator)))
    # Largest first; the stable sort keeps transcript order among equal sizes.
    ordered = candidates if oldest_first else sorted(candidates, key=lambda candidate: -candidate[1])

    reduced = list(messages)
    new_sizes = list(sizes)
    freed_total = 0
    parts = 0
    changes: list[EmergencyChange] = []
    for location, original_tokens in ordered:
        if freed_total >= required:
            break
        if isinstance(location, int):
            replacement = message_reference(reduced[location], original_tokens)
            new_size = estimator.message(replacement)
            freed = max(0, original_tokens - new_size)
            if freed == 0:
                continue
            reduced[location] = replacement
            new_sizes[location] = new_size
            changes.append((location, replacement["function_id"], original_tokens, new_size))
        else:
            index, block_index = location
            host = reduced[index]
            block = host["content"][block_index]
            candidate = with_block(
                host,
                block_index,
                inline_reference(block, function_ids.get(location), original_tokens),
            )
            after = estimator.message(candidate)
            freed = max(0, new_sizes[index] - after)
            if freed == 0:
                continue
            changes.append((index, function_ids.get(location), new_sizes[index], after))
            reduced[index] = candidate
            new_sizes[index] = after
        freed_total += freed
        parts += 1
    return EmergencyResult(reduced, new_sizes, PruneStats(freed_total, parts, len(candidates)),
                           tuple(changes))
