"""The summariser port over llm-router: `router::chat` streaming into an engine channel
(spec 03 §3.7).

One call = create a channel, open its reader, trigger `router::chat` with the writer ref, let
the reader drain for a grace period after the call returns (the router may answer before its
last frames arrive), then fold the collected `AssistantMessageEvent` frames into the answer.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio

from context_manager.adapters.invoke import is_unroutable
from context_manager.engine.channels import ChannelReader, ChannelRef, channel_url
from context_manager.engine.protocol import CHANNELS_CREATE
from context_manager.ports import (
    Invoke,
    InvokeError,
    SummarizerEmpty,
    SummarizeRequest,
    SummarizerFailed,
    SummarizerUnavailable,
    SummaryReply,
)

CHAT_FUNCTION = "router::chat"
READER_DRAIN_MS = 2000
CHANNEL_CREATE_TIMEOUT_MS = 30_000

log = logging.getLogger("context_manager.summarizer")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class RouterSummarizer:
    """``timeout_ms`` is read at every call, so a reloaded `summarizer_timeout_ms` applies at once."""

    def __init__(
        self,
        invoke: Invoke,
        engine_url: str,
        timeout_ms: Callable[[], int],
        *,
        now_ms: Callable[[], int] = wall_clock_ms,
        drain_ms: int = READER_DRAIN_MS,
    ) -> None:
        self._invoke = invoke
        self._engine_url = engine_url
        self._timeout_ms = timeout_ms
        self._now_ms = now_ms
        self._drain_ms = drain_ms

    async def summarize(self, request: SummarizeRequest) -> str:
        writer, reader_ref = await self._create_channel()
        reader = ChannelReader(channel_url(self._engine_url, reader_ref, "read"))
        try:
            await reader.open()
        except Exception as exc:  # the router then cannot stream; the call still decides
            log.warning("could not open the summary channel reader: %s", exc)
            reader.finished.set()
        reply: Any = None
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader.read_all)
            try:
                reply = await self._invoke(
                    CHAT_FUNCTION, chat_payload(writer, request, self._now_ms()), self._timeout_ms()
                )
            except Exception as exc:
                failure = exc
            with anyio.move_on_after(self._drain_ms / 1000.0):
                await reader.finished.wait()
            drained = reader.finished.is_set()
            tg.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await reader.close()

        if failure is not None:
            text = str(failure)
            if isinstance(failure, InvokeError) and is_unroutable(text):
                raise SummarizerUnavailable(text)
            raise SummarizerFailed(text)
        if isinstance(reply, dict) and reply.get("ok") is False:
            error = reply.get("error")
            detail = "unknown router error" if "error" not in reply else _compact_json(error)
            raise SummarizerFailed(detail)
        frames = list(reader.texts) + binary_lines(bytes(reader.binary) if drained else b"")
        text = fold_frames(frames)
        if text == "":
            raise SummarizerEmpty()
        return SummaryReply(text, router_usage(reply))

    async def _create_channel(self) -> tuple[ChannelRef, ChannelRef]:
        try:
            reply = await self._invoke(CHANNELS_CREATE, {"buffer_size": None}, CHANNEL_CREATE_TIMEOUT_MS)
            if not isinstance(reply, dict):
                raise ValueError("no channel refs in the reply")
            return ChannelRef.from_value(reply.get("writer")), ChannelRef.from_value(reply.get("reader"))
        except Exception as exc:
            raise SummarizerUnavailable(f"create_channel failed: {exc}") from None


def chat_payload(writer: ChannelRef, request: SummarizeRequest, timestamp_ms: int) -> dict[str, Any]:
    payload: dict[str, Any] = {"writer_ref": writer.to_dict(), "model": request.model}
    if request.provider is not None:
        payload["provider"] = request.provider
    conversation = request.conversation
    if conversation is not None:
        # The conversation as the model last read it, then the instructions: the provider reads
        # everything before them from its prompt cache.
        payload["system_prompt"] = conversation.system_prompt
        payload["messages"] = [*conversation.messages, _user_text(conversation.instructions, timestamp_ms)]
        payload["tools"] = list(conversation.tools)
        return payload
    payload["system_prompt"] = request.system_prompt
    payload["messages"] = [_user_text(request.user_prompt, timestamp_ms)]
    payload["tools"] = []
    return payload


def _user_text(text: str, timestamp_ms: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp_ms}


def router_usage(reply: Any) -> tuple[int, int] | None:
    """(input, output) tokens of a ``router::chat`` reply's ``usage`` (input = ``input +
    cache_read + cache_write``); None when the reply carries no usable one."""
    usage = reply.get("usage") if isinstance(reply, dict) else None
    if not isinstance(usage, dict) or "input" not in usage or "output" not in usage:
        return None
    counts = [usage.get(name, 0) for name in ("input", "cache_read", "cache_write", "output")]
    if not all(type(count) is int and count >= 0 for count in counts):
        return None
    return counts[0] + counts[1] + counts[2], counts[3]


def binary_lines(data: bytes) -> list[str]:
    """Binary stream bytes as frames: one per ``\\n``-separated line, trailing ``\\r`` removed."""
    if not data:
        return []
    lines = data.decode("utf-8", "replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def fold_frames(frames: list[str]) -> str:
    """The answer carried by a stream of `AssistantMessageEvent` frames (spec 03 §3.7.5)."""
    deltas: list[str] = []
    done_text: str | None = None
    for frame in frames:
        try:
            event = json.loads(frame)
        except ValueError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            continue
        kind = event["type"]
        if kind == "text_delta":
            if isinstance(event.get("delta"), str):
                deltas.append(event["delta"])
        elif kind == "done":
            done_text = _text_of(event.get("message"))
        elif kind == "error":
            raise SummarizerFailed("summariser stream error: " + _text_of(event.get("error")))
        elif kind == "stop" and event.get("stop_reason") == "error":
            message = event.get("error_message")
            raise SummarizerFailed(
                "summariser stream error: "
                + (message if isinstance(message, str) else "unknown provider error")
            )
    if done_text:
        return done_text
    return "".join(deltas)


def _text_of(message: Any) -> str:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return ""
    return "\n".join(
        block["text"]
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
