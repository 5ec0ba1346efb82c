"""Retention probes of the replay: what a compaction's head left in the returned context.

For every compaction, the head's user-message openings (first 100 characters of each user
message's text) and its file paths and URLs (the retention check's own derivation, ``head_texts``:
user text and call arguments; each once, whitespace and case collapsed) are looked up in the
returned system prompt and messages, compared after collapsing whitespace and case. Per session, a call keeps the task when its returned
context holds the first user message's text verbatim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.kit.tally import Share
from context_manager.core.compaction.prompts import trim
from context_manager.core.compaction.retention_check import argument_strings, head_texts, normalize
from context_manager.wire.codec import canonical_free_form, dumps

OPENING_CHARS = 100


@dataclass
class Probes:
    """Of the head's user openings and paths, how many the returned context holds."""

    users: Share = field(default_factory=Share)
    paths: Share = field(default_factory=Share)

    def add(self, other: Probes) -> None:
        self.users.add(other.users)
        self.paths.add(other.paths)


def _texts(content: Sequence[dict[str, Any]]) -> list[str]:
    out = []
    for block in content:
        kind = block["type"]
        if kind == "text":
            out.append(block["text"])
        elif kind == "function_call":
            out.append(dumps(canonical_free_form(block.get("arguments"))).decode("utf-8"))
            out.extend(argument_strings(block.get("arguments")))
        elif kind == "function_result":
            out.extend(_texts(block["content"]))
    return out


def _user_text(message: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in message["content"] if b["type"] == "text")


def context_text(system_prompt: str, messages: Sequence[dict[str, Any]]) -> str:
    """Every text of a returned context, one per line."""
    parts = [system_prompt]
    for message in messages:
        parts.extend(_texts(message["content"]))
    return "\n".join(parts)


def task_text(messages: Sequence[dict[str, Any]]) -> str | None:
    """The first user message's text, or ``None`` when the session has none."""
    for message in messages:
        if message["role"] == "user":
            return _user_text(message) or None
    return None


def head_probes(head: Sequence[dict[str, Any]], returned: str) -> Probes:
    haystack = normalize(returned)
    probes = Probes()
    openings: list[str] = []
    for message in head:
        if message["role"] == "user":
            text = trim(_user_text(message))
            if text:
                openings.append(text[:OPENING_CHARS])
    # The paths are the retention check's own, so a probe counts only what the check would keep.
    paths = [text for _index, text, is_path in head_texts(head) if is_path]
    for opening in dict.fromkeys(openings):
        probes.users.count(normalize(opening) in haystack)
    for path in dict.fromkeys(normalize(path) for path in paths):
        probes.paths.count(path in haystack)
    return probes
