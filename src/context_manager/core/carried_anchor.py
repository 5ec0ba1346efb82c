"""The pinned anchor carried inside the summary, for a caller that sends back only the tail.

After a compaction a caller may send back its messages from ``applied.tail_start_index`` on
without the anchor ahead of them (as the agent harness does); pinning "the first N messages" of
that request would pin the first tail message and lose the task. So a summary written by a call
with a pinned anchor (``applied.summary``, ``context::compact``'s ``summary`` when its
``previous_summary`` carried one) ends with a section holding the anchor's model-facing messages
verbatim, as one line of JSON::

    <summary text>

    <!-- context-manager:anchor -->
    [{"role":"user",...}]
    <!-- /context-manager:anchor -->

When that summary comes back as ``options.previous_summary``, :func:`split_summary` takes the
section off: every use of the previous summary (the rendered system prompt or summary message,
the summariser's update, the retention check's carried items, the extractive update) sees only
the text before it, and the section's messages are the anchor again. A request whose
model-facing messages start with them byte for byte (a caller that re-sends the anchor) is used
as it is; any other request gets them put back first (:func:`restore`). The summary is the only
carrier, so one-shot processes, several worker processes and every session store agree without
shared state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from context_manager.wire.codec import dumps, loads
from context_manager.wire.decode import decode_messages
from context_manager.wire.errors import INVALID_REQUEST, ContextManagerError, HandlerError

Message = dict[str, Any]

OPEN = "<!-- context-manager:anchor -->"
CLOSE = "<!-- /context-manager:anchor -->"
# Between the summary text and the section. JSON written compactly holds no raw line break, so
# the section's three lines are found from the end without ambiguity.
SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class SplitSummary:
    """A previous summary without its anchor section; ``anchor`` is empty when it had none."""

    text: str | None
    anchor: list[Message] = field(default_factory=list)


def with_anchor(summary: str, anchor: Sequence[Message]) -> str:
    """``summary`` followed by the section carrying ``anchor`` (unchanged when it is empty)."""
    if not anchor:
        return summary
    return f"{summary}{SEPARATOR}{OPEN}\n{dumps(list(anchor)).decode('utf-8')}\n{CLOSE}"


def split_summary(summary: str | None) -> SplitSummary:
    """``summary`` as a text and its carried anchor; a summary not ending with a section is all
    text. A section that does not hold a list of model-facing messages is bad input
    (``context/invalid_request``)."""
    if summary is None:
        return SplitSummary(None)
    # Trailing white space may be added by a caller that stores the summary; nothing else may.
    stripped = summary.rstrip()
    if not stripped.endswith("\n" + CLOSE):
        return SplitSummary(summary)
    rest, _, line = stripped[: -len(CLOSE) - 1].rpartition("\n")
    opening = SEPARATOR + OPEN
    if not rest.endswith(opening):
        raise _bad_section("no opening line before the closing one")
    return SplitSummary(rest[: -len(opening)], _messages(line))


def _messages(line: str) -> list[Message]:
    try:
        messages = decode_messages(loads(line))
    except ContextManagerError as exc:
        raise _bad_section(getattr(exc, "detail", str(exc))) from None
    if not messages or any(m["role"] == "custom" for m in messages):
        raise _bad_section("it must hold model-facing messages")
    return messages


def _bad_section(detail: str) -> HandlerError:
    return HandlerError(INVALID_REQUEST,
                        f"options.previous_summary: malformed anchor section ({detail})")


def starts_with(view: Sequence[Message], anchor: Sequence[Message]) -> bool:
    """Do ``view``'s first messages serialise exactly as ``anchor``'s?"""
    return len(view) >= len(anchor) and all(
        a is b or dumps(a) == dumps(b) for a, b in zip(view, anchor))


def restore(view: list[Message], anchor: list[Message]) -> int:
    """How many carried messages go in front of the model-facing ``view``: none when it already
    starts with them (or nothing is carried), else all of them."""
    if not anchor or starts_with(view, anchor):
        return 0
    return len(anchor)
