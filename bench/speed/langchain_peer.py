"""The peer: LangChain's ``trim_messages`` and ``count_tokens_approximately`` on the same history.

Wire messages become LangChain message objects the way an agent framework would hold them:
user turns are ``HumanMessage`` (images as data-URL parts), assistant turns ``AIMessage`` with
their tool calls, function results ``ToolMessage``. Custom messages never reach a model, so
they are left out, as assemble leaves them out of its view.
"""

from __future__ import annotations

import os
from typing import Any, cast

try:
    if os.environ.get("BENCH_NO_PEER"):
        raise ImportError("peer disabled by BENCH_NO_PEER")
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage, trim_messages
    from langchain_core.messages.utils import count_tokens_approximately
except ImportError:  # pragma: no cover - the peer is optional (extra `bench`)
    AVAILABLE = False
else:
    AVAILABLE = True


def _parts(blocks: list[dict[str, Any]]) -> list[Any]:
    parts: list[Any] = []
    for block in blocks:
        kind = block["type"]
        if kind == "text":
            parts.append({"type": "text", "text": block["text"]})
        elif kind == "thinking":
            parts.append({"type": "reasoning", "reasoning": block["text"]})
        elif kind == "image":
            parts.append({"type": "image_url",
                          "image_url": {"url": f"data:{block['mime']};base64,{block['data']}"}})
    return parts


def _text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(b["text"] for b in blocks if b["type"] == "text")


def to_langchain(messages: list[dict[str, Any]]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for m in messages:
        role = m["role"]
        if role == "user":
            blocks = m["content"]
            if len(blocks) == 1 and blocks[0]["type"] == "text":
                out.append(HumanMessage(content=blocks[0]["text"]))
            else:
                out.append(HumanMessage(content=_parts(blocks)))
        elif role == "assistant":
            calls = [{"name": b["function_id"], "args": b.get("arguments") or {}, "id": b["id"],
                      "type": "tool_call"} for b in m["content"] if b["type"] == "function_call"]
            out.append(AIMessage(content=_parts(m["content"]), tool_calls=calls))
        elif role == "function_result":
            out.append(ToolMessage(content=_text(m["content"]), tool_call_id=m["function_call_id"],
                                   name=m["function_id"], status="error" if m.get("is_error") else "success"))
    return out


def trim(lc_messages: list[BaseMessage], max_tokens: int) -> list[BaseMessage]:
    return trim_messages(lc_messages, strategy="last", start_on="human",
                         token_counter=count_tokens_approximately, max_tokens=max_tokens)


def count(lc_messages: list[BaseMessage], tools: list[dict[str, Any]] | None = None) -> int:
    return count_tokens_approximately(lc_messages, tools=cast("list[Any] | None", tools))
