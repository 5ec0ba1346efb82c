"""How a peer asks the deterministic summariser for a summary.

The peer's head is rendered as the replay summariser reads a conversation (``[user]``,
``[assistant]`` with ``[tool_call] <function> <arguments>`` lines, ``[function_result]``), the
summary being updated goes in the system prompt between ``<previous-summary>`` tags, and the
request's tokens are the bytes of both prompts / 4, the reply's its bytes / 4 — as
``RecordingSummarizer`` counts the worker's requests. Each peer's own instruction text is not
reproduced: every peer sends the same one-line instruction, so the input measured is the
conversation the peer's policy hands over.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.kit.summariser import summarize

Message = dict[str, Any]
INSTRUCTION = "Summarise the conversation below for the agent that continues it."


def _text(blocks: Sequence[dict[str, Any]]) -> str:
    return "\n".join(b["text"] for b in blocks if b["type"] in ("text", "thinking"))


def render(messages: Sequence[Message], limit_chars: int | None = None) -> str:
    """The conversation as the summariser reads it; each message cut to ``limit_chars``."""
    parts = []
    for m in messages:
        role = m["role"]
        if role == "custom":
            continue
        body = _text(m["content"])
        if role == "assistant":
            calls = [f"[tool_call] {b['function_id']} {json.dumps(b.get('arguments'), sort_keys=True)}"
                     for b in m["content"] if b["type"] == "function_call"]
            body = "\n".join([body, *calls]) if body else "\n".join(calls)
        if limit_chars is not None and len(body) > limit_chars:
            body = body[:limit_chars]
        parts.append(f"[{role}]\n{body}")
    return "Conversation:\n" + "\n".join(parts)


@dataclass(frozen=True)
class Summary:
    text: str
    input_tokens: int
    output_tokens: int


def summarise(head: Sequence[Message], previous: str | None, limit_chars: int | None = None) -> Summary:
    system = INSTRUCTION if previous is None else f"{INSTRUCTION}\n<previous-summary>\n{previous}\n</previous-summary>"
    user = render(head, limit_chars)
    reply = summarize(system, user, None)
    return Summary(reply, (len(system.encode()) + len(user.encode())) // 4, len(reply.encode()) // 4)


def user_message(text: str, timestamp: int) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def assistant_message(text: str, timestamp: int) -> Message:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "stop_reason": "end",
            "model": "summary", "provider": "summary", "timestamp": timestamp}
