"""Builders for canonical test messages."""

from __future__ import annotations

from typing import Any

from context_manager.wire.decode import decode_message


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return decode_message({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})


def assistant(text: str | None = None, ts: int = 2, *, calls: list[dict[str, Any]] | None = None,
              model: str = "m", provider: str = "p") -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    for call in calls or []:
        content.append({"type": "function_call", **call})
    return decode_message({"role": "assistant", "content": content,
                           "stop_reason": "function_call" if calls else "end",
                           "model": model, "provider": provider, "timestamp": ts})


def result(call_id: str, function_id: str, text: str, ts: int = 3, **extra: Any) -> dict[str, Any]:
    return decode_message({"role": "function_result", "function_call_id": call_id,
                           "function_id": function_id,
                           "content": [{"type": "text", "text": text}], "timestamp": ts, **extra})
