"""Where an assembled answer stops repeating its request (``report_prefix``).

A provider bills a repeated prompt prefix at a fraction of the price, so a harness wants to know
how much of what it sends is unchanged. The baseline is the request as it would go out untouched:
its system prompt rendered with the ``previous_summary`` it carries, and its model-facing
messages (custom messages left out). ``cache_break_index`` is the first index of the returned
messages that differs from that baseline (``None`` when the lists are equal); when one list is a
strict prefix of the other it is the length of the shorter.
"""

from __future__ import annotations

from typing import Any

from context_manager.wire.messages import Message


def model_facing(messages: list[Message]) -> list[Message]:
    """The messages a model would see: every one but the custom ones."""
    return [m for m in messages if m["role"] != "custom"]


def cache_break_index(baseline: list[Message], returned: list[Message]) -> int | None:
    """The first index at which ``returned`` differs from ``baseline``; ``None`` when equal."""
    # List equality short-circuits on identity, so untouched messages cost one pointer check.
    for index, (before, after) in enumerate(zip(baseline, returned)):
        if before is not after and before != after:
            return index
    if len(baseline) == len(returned):
        return None
    return min(len(baseline), len(returned))


def prefix_report(baseline_prompt: str, baseline: list[Message], prompt: str,
                  returned: list[Message]) -> dict[str, Any]:
    """The two ``applied`` members, in the order they are reported."""
    return {
        "cache_break_index": cache_break_index(baseline, returned),
        "system_prompt_changed": prompt != baseline_prompt,
    }
