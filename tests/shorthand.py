"""The message shorthand of the reduction-pass worked examples (spec 02 §11), as canonical dicts."""

from __future__ import annotations

from typing import Any

from context_manager.core.counting.estimate import HEURISTIC
from context_manager.wire.decode import decode_message

PNG = {"type": "image", "mime": "image/png", "data": "AAAA"}


def U(text: str, ts: int) -> dict[str, Any]:
    return decode_message({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})


def A(text: str, ts: int) -> dict[str, Any]:
    return decode_message({"role": "assistant", "content": [{"type": "text", "text": text}],
                           "stop_reason": "end", "model": "m", "provider": "p", "timestamp": ts})


def C(call_id: str, function_id: str, ts: int) -> dict[str, Any]:
    return decode_message({"role": "assistant",
                           "content": [{"type": "function_call", "id": call_id,
                                        "function_id": function_id, "arguments": {}}],
                           "stop_reason": "function_call", "model": "m", "provider": "p",
                           "timestamp": ts})


def R(call_id: str, function_id: str, text: str, ts: int, **extra: Any) -> dict[str, Any]:
    return decode_message({"role": "function_result", "function_call_id": call_id,
                           "function_id": function_id,
                           "content": [{"type": "text", "text": text}],
                           "details": None, "is_error": False, "timestamp": ts, **extra})


def M(value: dict[str, Any]) -> dict[str, Any]:
    """Any message written as raw JSON, decoded to its canonical form."""
    return decode_message(value)


def sizes(messages: list[dict[str, Any]]) -> list[int]:
    return [HEURISTIC.message(m) for m in messages]
