"""Message builders and port fakes shared by the compaction tests (spec 03 §8 notation)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from context_manager.ports import (
    LeaseRecord,
    LeaseStoreError,
    SummarizeRequest,
)
from context_manager.wire.decode import decode_messages


def X(n: int) -> str:
    """The string of 4n letters x."""
    return "x" * (4 * n)


def U(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def U_inline_result(call_id: str, text: str = "3 hits found") -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "function_result", "function_call_id": call_id,
             "content": [{"type": "text", "text": text}]},
        ],
    }


def A(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}],
            "stop_reason": "end", "model": "test-model", "provider": "test"}


def AC(call_id: str, function_id: str, arguments: Any = None) -> dict[str, Any]:
    """An assistant turn calling ``function_id`` with ``arguments`` (default ``{"arg": "value"}``)."""
    return {"role": "assistant",
            "content": [{"type": "function_call", "id": call_id, "function_id": function_id,
                         "arguments": {"arg": "value"} if arguments is None else arguments}],
            "stop_reason": "function_call", "model": "test-model", "provider": "test"}


def FR(call_id: str, function_id: str, text: str) -> dict[str, Any]:
    return {"role": "function_result", "function_call_id": call_id, "function_id": function_id,
            "content": [{"type": "text", "text": text}], "details": {}, "is_error": False}


def C(custom_type: str, text: str = "a note for the ui only") -> dict[str, Any]:
    return {"role": "custom", "custom_type": custom_type,
            "content": [{"type": "text", "text": text}]}


def history(*messages: dict[str, Any], first_timestamp: int = 1) -> list[dict[str, Any]]:
    """Wire messages with timestamps 1, 2, 3, ... in list order."""
    return [{**m, "timestamp": first_timestamp + i} for i, m in enumerate(messages)]


def decoded(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    """Canonical (decoded) messages with timestamps 1, 2, 3, ..."""
    return decode_messages(history(*messages))


@dataclass
class FakeSummarizer:
    """Replies from a list (or a function of the request); records every request."""

    replies: list[Any] = field(default_factory=lambda: ["## Goal\n- finish the migration"])
    delay: float = 0.0
    requests: list[SummarizeRequest] = field(default_factory=list)
    respond: Callable[[SummarizeRequest], str] | None = None

    async def summarize(self, request: SummarizeRequest) -> str:
        self.requests.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.respond is not None:
            return self.respond(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if isinstance(reply, BaseException):
            raise reply
        return reply

    @property
    def calls(self) -> int:
        return len(self.requests)


@dataclass
class MemoryLeaseStore:
    """An in-process lease store; ``fail`` makes every operation raise."""

    records: dict[tuple[str, str], LeaseRecord] = field(default_factory=dict)
    fail: bool = False
    log: list[tuple[str, str]] = field(default_factory=list)

    def _check(self, op: str, key: str) -> None:
        self.log.append((op, key))
        if self.fail:
            raise LeaseStoreError("store unreadable")

    async def get(self, scope: str, key: str) -> LeaseRecord | None:
        self._check("get", key)
        return self.records.get((scope, key))

    async def set(self, scope: str, key: str, record: LeaseRecord | None) -> None:
        self._check("set", key)
        if record is None:
            self.records.pop((scope, key), None)
        else:
            self.records[(scope, key)] = record

    async def swap(self, scope: str, key: str, record: LeaseRecord) -> LeaseRecord | None:
        self._check("swap", key)
        prior = self.records.get((scope, key))
        self.records[(scope, key)] = record
        return prior

