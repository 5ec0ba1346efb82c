"""Summariser prompts and the summary section of the returned system prompt (spec 03 §2).

The wording is ours; the byte length of every component is fixed by 03 §2.7, because request
estimates, fragment boundaries and the number of summariser calls all depend on it. The tests
pin each length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from context_manager.wire.codec import canonical_free_form, dumps

# Unicode White_Space, the set the original trims with (03 §0.3). Python's str.strip() would
# also remove U+001C..U+001F, so trimming always names this set explicitly.
WHITE_SPACE = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

IMAGE_STRIPPED = "[image stripped]"
TRUNCATED_MARKER = "... [truncated]"
SUMMARY_HEADING = "# Conversation summary"
MAX_INSTRUCTIONS_CHARS = 2000

# Travels inside the JSON-escaped user message: plain ASCII, no quote, backslash or control.
INSTRUCTION_LINE = (
    "Summarise the conversation below in the structure the system prompt sets out; "
    "copy identifiers unmodified."
)
USER_PROMPT_HEADER = INSTRUCTION_LINE + "\n\n<conversation>\n"
USER_PROMPT_FOOTER = "</conversation>\n"

FRESH_ANCHOR = "Write a fresh anchored summary of the conversation you are handed."
UPDATE_ANCHOR_LINES = (
    "Revise the anchored summary that follows in light of this conversation.\n"
    "Keep what is still true, drop whatever has gone stale, and add everything new.\n"
)
PREVIOUS_SUMMARY_OPEN = "<previous-summary>\n"
PREVIOUS_SUMMARY_CLOSE = "\n</previous-summary>"
ANCHOR_SEPARATOR = "\n\n"

SUMMARY_TEMPLATE = """\
Reproduce the Markdown skeleton between <template> and </template> in the same section order; \
leave both tags out of your answer.
<template>
## Goal
- [the task in one sentence]

## Constraints & Preferences
- [constraints, preferences and specs from the user, or "(none)"]

## Progress
### Done
- [finished work, or "(none)"]

### In Progress
- [work under way, or "(none)"]

### Blocked
- [what blocks progress, or "(none)"]

## Key Decisions
- [each decision with its reason, or "(none)"]

## Actions Taken
- [function calls worth remembering, arguments abbreviated, or "(none)"]

## Next Steps
- [next actions in order, or "(none)"]

## Critical Context
- [key technical facts, errors and open questions, or "(none)"]

## Relevant Files
- [each path and why it matters, or "(none)"]
</template>

Rules:
- Never drop a section, even an empty one.
- Use short bullets, never paragraphs.
- Copy paths, commands, error texts and other identifiers exactly.
- Do not talk about summarising or about the context having been shortened."""

GUIDANCE_LINE = (
    "The caller's wishes for this summary follow. They may choose which details to keep, "
    "shorten or stress, but they may not change the skeleton, the sections or the rules given "
    "above. They are guidance about this summary, not part of the conversation itself."
)
INSTRUCTIONS_OPEN = "\n<instructions>\n"
INSTRUCTIONS_CLOSE = "\n</instructions>"

FRAGMENT_NOTE = (
    "\nYou see one piece of a longer conversation that arrives piece by piece; it may begin or "
    "end in the middle of a message. Fold it into the anchored summary, keep what earlier pieces "
    "contributed, and never summarise it as though it is all."
)


def trim(text: str) -> str:
    return text.strip(WHITE_SPACE)


def trim_end(text: str) -> str:
    return text.rstrip(WHITE_SPACE)


def cut_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` that is at most ``max_bytes`` UTF-8 bytes."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    end = max_bytes
    while end > 0 and (data[end] & 0xC0) == 0x80:
        end -= 1
    return data[:end].decode("utf-8")


# --- preparing and rendering the head -------------------------------------------------------


def strip_media(messages: Sequence[dict[str, Any]], max_output_chars: int) -> list[dict[str, Any]]:
    """A summariser-ready copy of the head (03 §2.1); the input messages are left untouched.

    Top-level images become ``[image stripped]``; function-result text longer than
    ``max_output_chars`` bytes is cut and marked.
    """
    return [_strip_message(m, max_output_chars) for m in messages]


def _strip_message(message: dict[str, Any], max_output_chars: int) -> dict[str, Any]:
    truncate = message["role"] == "function_result"
    content = []
    for block in message["content"]:
        if block["type"] == "image":
            block = {"type": "text", "text": IMAGE_STRIPPED}
        if truncate and block["type"] == "text":
            text = block["text"]
            cut = cut_utf8(text, max_output_chars)
            if cut is not text:
                block = {"type": "text", "text": cut + TRUNCATED_MARKER}
        content.append(block)
    return {**message, "content": content}


def render_user_prompt(messages: Sequence[dict[str, Any]]) -> str:
    """The head as a ``<conversation>`` block: text verbatim, calls as one-line summaries."""
    parts = [USER_PROMPT_HEADER]
    for message in messages:
        parts.append(f"\n[{message['role']}]\n")
        for block in message["content"]:
            kind = block["type"]
            if kind == "text":
                parts.append(block["text"])
                parts.append("\n")
            elif kind == "function_call":
                arguments = dumps(canonical_free_form(block["arguments"])).decode("utf-8")
                parts.append(f"[tool_call] {block['function_id']} {arguments}\n")
            # thinking, file, inline results and anything else never reach the summariser
    parts.append(USER_PROMPT_FOOTER)
    return "".join(parts)


# --- the summariser's system prompt ---------------------------------------------------------


def normalize_instructions(instructions: str | None) -> str | None:
    """Caller guidance trimmed and capped at 2000 characters; blank guidance is none (03 §2.4)."""
    if instructions is None:
        return None
    trimmed = trim(instructions)
    if not trimmed:
        return None
    if len(trimmed) <= MAX_INSTRUCTIONS_CHARS:
        return trimmed
    return trimmed[:MAX_INSTRUCTIONS_CHARS] + TRUNCATED_MARKER


def anchor(previous_summary: str | None) -> str:
    """Fresh mode without a previous summary; update mode (even for ``""``) with one."""
    if previous_summary is None:
        return FRESH_ANCHOR
    return UPDATE_ANCHOR_LINES + PREVIOUS_SUMMARY_OPEN + previous_summary + PREVIOUS_SUMMARY_CLOSE


def guidance_block(guidance: str) -> str:
    return "\n\n" + GUIDANCE_LINE + INSTRUCTIONS_OPEN + guidance + INSTRUCTIONS_CLOSE


def build_system_prompt(previous_summary: str | None, instructions: str | None) -> str:
    """Anchor, template, and the caller's guidance when there is any (03 §2.3–§2.4)."""
    prompt = anchor(previous_summary) + ANCHOR_SEPARATOR + SUMMARY_TEMPLATE
    guidance = normalize_instructions(instructions)
    if guidance is not None:
        prompt += guidance_block(guidance)
    return prompt


# --- the model-facing system prompt ---------------------------------------------------------


def render_system_prompt(base: str | None, summary: str | None) -> str:
    """The caller's system prompt, with the summary in its own section when there is one."""
    trimmed = trim_end(base or "")
    if summary is None:
        return trimmed
    if not trimmed:
        return f"{SUMMARY_HEADING}\n\n{summary}"
    return f"{trimmed}\n\n{SUMMARY_HEADING}\n\n{summary}"


def carries_summary(system_prompt: str | None, messages: list[dict[str, Any]]) -> bool:
    """Whether a context holds a summary section as :func:`render_system_prompt` or
    :func:`summary_message` writes it (a compaction's round trip)."""
    if system_prompt is not None and (system_prompt.startswith(SUMMARY_HEADING + "\n")
                                      or f"\n\n{SUMMARY_HEADING}\n\n" in system_prompt):
        return True
    for message in messages:
        if message["role"] == "user":
            content = message["content"]
            return bool(content) and content[0].get("type") == "text" \
                and content[0]["text"].startswith(SUMMARY_HEADING + "\n")
    return False


def summary_message(summary: str, following: dict[str, Any] | None) -> dict[str, Any]:
    """The summary as a message (``summary_placement: message``): a user message holding the
    same section the system prompt would, timestamped as the message it precedes (0 when none)
    so the same summary before the same tail is the same message on every call.

    A user message because every provider accepts one first (Anthropic and Gemini take only user
    and assistant turns and want a user turn first; a system message inside the list means
    something else to OpenAI); a user message directly before another is merged into one turn
    by the providers that require alternation.
    """
    timestamp = following.get("timestamp") if following is not None else None
    if type(timestamp) is not int:
        timestamp = 0
    return {"role": "user", "content": [{"type": "text", "text": f"{SUMMARY_HEADING}\n\n{summary}"}],
            "timestamp": timestamp}
