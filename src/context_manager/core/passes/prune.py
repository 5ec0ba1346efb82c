"""Normal pruning: old or verbose function outputs become a one-line placeholder.

Shared by `context::prune` and `context::assemble`. Outputs are scanned newest to oldest,
subject to recent-turn protection, a newest-outputs token window, protected functions,
verbosity or age eligibility, and an all-or-nothing minimum net saving. Messages and blocks
are never removed; only an output's content is replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from context_manager.core.counting.estimate import result_tokens
from context_manager.core.memo import remembered
from context_manager.core.reuse import NO_REUSE, CallReuse
from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.ports import Estimator
from context_manager.wire.codec import utf8_len
from context_manager.wire.ints import U64_MAX
from context_manager.wire.messages import (
    Block,
    Message,
    has_inline_result,
    resolve_inline_function_ids,
    text_block,
    text_of,
    with_block,
    with_content,
)

_PLACEHOLDER_PREFIX = "[output of "
_PLACEHOLDER_MIDDLE = " pruned: was ~"
_PLACEHOLDER_SUFFIX = " tokens; re-call it if still needed]"

# A message-level output is located by its message index; an inline one by (message, block).
Location = int | tuple[int, int]


@dataclass(frozen=True, slots=True)
class PruneParams:
    # The configuration's thresholds; a handler overrides them per call.
    protect_recent_tokens: int = DEFAULT_CONFIG.protect_recent_tokens
    decay_user_turns: int = DEFAULT_CONFIG.decay_user_turns
    protected_user_turns: int = DEFAULT_CONFIG.protected_user_turns
    min_free_tokens: int = DEFAULT_CONFIG.min_free_tokens
    max_output_chars: int = DEFAULT_CONFIG.max_output_chars
    protected_functions: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class PruneStats:
    pruned_tokens: int = 0
    pruned_parts: int = 0
    scanned_parts: int = 0


class Candidate(NamedTuple):
    location: Location
    tokens: int
    function_id: str
    saving: int  # tokens freed by its placeholder alone


@dataclass(frozen=True, slots=True)
class PruneResult:
    messages: list[Message]
    sizes: list[int] | None
    stats: PruneStats
    # The outputs replaced, oldest last; their savings add up to ``stats.pruned_tokens``.
    replaced: tuple[Candidate, ...] = ()


def placeholder(function_id: str, tokens: int) -> str:
    return f"{_PLACEHOLDER_PREFIX}{function_id}{_PLACEHOLDER_MIDDLE}{tokens}{_PLACEHOLDER_SUFFIX}"


def is_canonical_placeholder(content: list[Block], function_id: str) -> bool:
    """True when `content` is exactly our own placeholder for `function_id`, number canonical."""
    if len(content) != 1 or content[0]["type"] != "text":
        return False
    text = content[0]["text"]
    prefix = f"{_PLACEHOLDER_PREFIX}{function_id}{_PLACEHOLDER_MIDDLE}"
    if not (text.startswith(prefix) and text.endswith(_PLACEHOLDER_SUFFIX)):
        return False
    if len(text) < len(prefix) + len(_PLACEHOLDER_SUFFIX):
        return False
    number = text[len(prefix) : len(text) - len(_PLACEHOLDER_SUFFIX)]
    if not number or not number.isascii() or not number.isdigit():
        return False
    value = int(number)
    # Re-rendering rejects leading zeros and any other non-canonical spelling.
    return value <= U64_MAX and placeholder(function_id, value) == text


def _set_content(messages: list[Message], location: Location, content: list[Block]) -> int:
    """Replace the output at `location` in `messages`; returns the host message index."""
    if isinstance(location, int):
        messages[location] = with_content(messages[location], content)
        return location
    message_index, block_index = location
    host = messages[message_index]
    block = host["content"][block_index]
    messages[message_index] = with_block(host, block_index, with_content(block, content))
    return message_index


def prune(
    messages: list[Message],
    params: PruneParams,
    estimator: Estimator,
    sizes: list[int] | None = None,
    function_ids: dict[tuple[int, int], str] | None = None,
    known_tokens: dict[int, tuple[Message, int]] | None = None,
    *,
    reuse: CallReuse = NO_REUSE,
) -> PruneResult:
    """Run the pass over `messages`; returns new lists (the inputs are not modified).

    When a size memo is given, every rewritten host message is re-estimated into it.
    `function_ids` is `resolve_inline_function_ids(messages)` when the caller already has it;
    `known_tokens` maps `id(m)` to `(m, result tokens)` for message-level results already
    measured in this call (the cap pass fills it). Measures and placeholders of messages held by
    `reuse.memo` are remembered there.
    """
    if function_ids is None:
        function_ids = resolve_inline_function_ids(messages)
    memo = reuse.memo
    tokens_key = ("result-tokens", estimator)
    rest_key = ("prune-facts", estimator)
    scanned = 0
    window = 0
    user_turns = 0
    queue: list[Candidate] = []
    decay_on = params.decay_user_turns > 0

    def consider(
        location: Location, message: Message, function_id: str, content: list[Block],
        tokens: int, rest: Callable[[], tuple[int, int]],
    ) -> None:
        nonlocal scanned, window
        if function_id in params.protected_functions:
            return
        scanned += 1
        window += tokens
        if window <= params.protect_recent_tokens:
            return
        if decay_on and is_canonical_placeholder(content, function_id):
            return
        text_bytes, saving = rest()
        verbose = text_bytes > params.max_output_chars
        aged = decay_on and user_turns >= params.decay_user_turns
        if not verbose and not aged:
            return
        if not verbose and not _replacement_shrinks(message, location, function_id, tokens, estimator):
            return
        queue.append(Candidate(location, tokens, function_id, saving))

    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        role = message["role"]
        if role == "user" and not has_inline_result(message):  # a real user turn
            user_turns += 1
            continue
        if user_turns < params.protected_user_turns:
            continue
        if role == "function_result":
            content = message["content"]
            function_id = message["function_id"]
            known = known_tokens.get(id(message)) if known_tokens else None
            if known is not None and known[0] is message:
                tokens = known[1]
            else:
                tokens = remembered(memo, message, tokens_key, lambda: result_tokens(content, estimator))
            consider(index, message, function_id, content, tokens,
                     lambda: remembered(memo, message, rest_key,
                                        lambda: _output_facts(content, function_id, tokens, estimator)))
            continue
        blocks = message["content"]
        for block_index in range(len(blocks) - 1, -1, -1):
            block = blocks[block_index]
            if block["type"] != "function_result":
                continue
            function_id = function_ids.get((index, block_index))
            if function_id is None:
                continue
            content = block["content"]
            tokens = result_tokens(content, estimator)
            consider((index, block_index), message, function_id, content, tokens,
                     lambda: _output_facts(content, function_id, tokens, estimator))

    net = sum(candidate.saving for candidate in queue)
    pruned = list(messages)
    new_sizes = None if sizes is None else list(sizes)
    if net < params.min_free_tokens:
        return PruneResult(pruned, new_sizes, PruneStats(0, 0, scanned))
    for candidate in queue:
        location = candidate.location
        if isinstance(location, int):
            # A message-level output's placeholder depends on the message and estimator alone.
            original = messages[location]
            pruned[location], size = remembered(
                memo, original, ("pruned", estimator, candidate.tokens),
                lambda: _placeholder_message(original, candidate, estimator),
            )
            if new_sizes is not None:
                new_sizes[location] = size
            continue
        content = [text_block(placeholder(candidate.function_id, candidate.tokens))]
        host = _set_content(pruned, location, content)
        if new_sizes is not None:
            new_sizes[host] = estimator.message(pruned[host])
    return PruneResult(pruned, new_sizes, PruneStats(net, len(queue), scanned), tuple(queue))


def _output_facts(content: list[Block], function_id: str, tokens: int, estimator: Estimator) -> tuple[int, int]:
    """(UTF-8 bytes of the text, tokens its placeholder would free) of an output of `tokens`."""
    saving = max(0, tokens - estimator.text(placeholder(function_id, tokens)))
    return utf8_len(text_of(content)), saving


def _placeholder_message(message: Message, candidate: Candidate, estimator: Estimator) -> tuple[Message, int]:
    rewritten = with_content(
        message, [text_block(placeholder(candidate.function_id, candidate.tokens))]
    )
    return rewritten, estimator.message(rewritten)


def _replacement_shrinks(
    message: Message, location: Location, function_id: str, tokens: int, estimator: Estimator
) -> bool:
    """Would replacing this output alone make its whole host message strictly smaller?"""
    probe = [message]
    local = 0 if isinstance(location, int) else (0, location[1])
    _set_content(probe, local, [text_block(placeholder(function_id, tokens))])
    return estimator.message(probe[0]) < estimator.message(message)
