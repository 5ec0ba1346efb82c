"""A stand-in for llm-router: model budgets, `router::chat` streaming into a channel, and the
`router::models::changed` trigger type."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from context_manager.engine.channels import ChannelRef, channel_url

from .channel_writer import write_channel

MODELS_CHANGED = "router::models::changed"


class RouterCallError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def assistant(text: str, model: str = "test-model") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end",
        "model": model,
        "provider": "fake",
        "timestamp": 1767225601000,
    }


def stream_for(text: str, model: str = "test-model") -> list[str]:
    """The frames a router writes for one answer: three deltas then `done`."""
    third = max(1, len(text) // 3)
    pieces = [text[:third], text[third : 2 * third], text[2 * third :]]
    frames: list[str] = []
    so_far = ""
    for piece in pieces:
        so_far += piece
        frames.append(
            json.dumps({"type": "text_delta", "partial": assistant(so_far, model), "delta": piece})
        )
    frames.append(json.dumps({"type": "done", "message": assistant(text, model)}))
    return frames


def oracle_count(request: dict[str, Any]) -> int:
    """What the fake provider counts for ``{model, system_prompt?, tools?, messages}``: o200k_base
    tokens of the system prompt, each tool and each message (4 framing tokens per message)."""
    from context_manager.adapters.tokenizers import tokenizer_for_encoding

    tokenizer = tokenizer_for_encoding("o200k_base")
    assert tokenizer is not None
    total = tokenizer.text(request.get("system_prompt") or "")
    total += sum(tokenizer.function(tool) for tool in request.get("tools") or [])
    return total + sum(tokenizer.message(m) for m in request["messages"])


ChatScript = Callable[[dict[str, Any]], Awaitable[tuple[list[str | bytes], Any]]]


@dataclass
class FakeRouter:
    """``summary`` is streamed for every chat; ``chat_script`` overrides it per call."""

    engine_url: str = ""
    budgets: dict[str, Any] = field(default_factory=dict)
    summary: str = "Summary: all tests pass."
    chat_script: ChatScript | None = None
    chat_delay_s: float = 0.0
    # Stream after answering (as the real router often does), and/or keep the writer open.
    write_after_reply_s: float | None = None
    hold_open_s: float = 0.0
    chat_calls: list[dict[str, Any]] = field(default_factory=list)
    # The `usage` every chat reply carries (`{input, output, ...}`); None: the reply has none.
    chat_usage: dict[str, Any] | None = None
    budget_calls: list[dict[str, Any]] = field(default_factory=list)
    # `router::count_tokens`, backed by the o200k_base tokenizer: an exact oracle for tests.
    count_tokens: bool = True
    count_delay_s: float = 0.0
    count_error: tuple[str, str] | None = None
    count_calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def functions(self) -> tuple[str, ...]:
        base = ("router::models::budget", "router::chat")
        return (*base, "router::count_tokens") if self.count_tokens else base

    async def call(self, function_id: str, data: Any) -> Any:
        if function_id == "router::models::budget":
            return self._budget(data)
        if function_id == "router::count_tokens":
            return await self._count_tokens(data)
        return await self._chat(data)

    async def _count_tokens(self, data: Any) -> Any:
        self.count_calls.append(data)
        if self.count_delay_s:
            await anyio.sleep(self.count_delay_s)
        if self.count_error is not None:
            raise RouterCallError(*self.count_error)
        return {"tokens": oracle_count(data), "estimator": "tokenizer", "model": data.get("model")}

    def _budget(self, data: Any) -> Any:
        self.budget_calls.append(data)
        model_id = data.get("id") if isinstance(data, dict) else None
        return self.budgets.get(model_id)

    async def _chat(self, data: Any) -> Any:
        self.chat_calls.append(data)
        try:
            ref = ChannelRef.from_value(data.get("writer_ref"))
        except Exception:
            raise RouterCallError(
                "router/invalid_request", "writer_ref (direction write) is required"
            ) from None
        if self.chat_script is not None:
            frames, result = await self.chat_script(data)
        else:
            frames = list(stream_for(self.summary, str(data.get("model"))))
            result = {"ok": True, "provider": "fake", "model": data.get("model"), "stop_reason": "end"}
            if self.chat_usage is not None:
                result["usage"] = dict(self.chat_usage)
        if self.chat_delay_s:
            await anyio.sleep(self.chat_delay_s)
        url = channel_url(self.engine_url, ref, "write")
        if self.write_after_reply_s is not None:
            asyncio.get_running_loop().create_task(self._write_later(url, frames))
        elif self.hold_open_s:
            sent = anyio.Event()
            asyncio.get_running_loop().create_task(
                write_channel(url, frames, hold_open_s=self.hold_open_s, sent=sent)
            )
            await sent.wait()
        elif frames:
            await write_channel(url, frames)
        return result

    async def _write_later(self, url: str, frames: list[str | bytes]) -> None:
        await anyio.sleep(self.write_after_reply_s or 0.0)
        await write_channel(url, frames, hold_open_s=self.hold_open_s)
