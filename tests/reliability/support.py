"""In-process plumbing shared by the reliability tests: calling a handler with a chosen
context, port fakes (summariser, lease stores) and helpers to read messages."""

from __future__ import annotations

import asyncio
import errno
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.api import call_async
from context_manager.config.parse import parse_config_value
from context_manager.handlers.context import HandlerContext
from context_manager.ports import LeaseRecord, LeaseStoreError, SummarizeRequest


def context(config: dict[str, Any] | None = None, **ports: Any) -> HandlerContext:
    cfg = parse_config_value(config or {})
    return HandlerContext(config=cfg, tokenizers=PACKAGED_TOKENIZERS, **ports)


def run(function_id: str, payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    """One call as an engine caller would see it; raises ``CallError``."""
    return anyio.run(call_async, function_id, payload, ctx)


@dataclass
class FakeSummarizer:
    """Answers every summariser call with ``reply(request)``; counts the calls."""

    reply: Callable[[SummarizeRequest], str] = lambda request: "Summary: the work so far."
    calls: int = 0

    async def summarize(self, request: SummarizeRequest) -> str:
        self.calls += 1
        return self.reply(request)


@dataclass
class HangingSummarizer:
    """Never answers (until cancelled)."""

    started: int = 0

    async def summarize(self, request: SummarizeRequest) -> str:
        self.started += 1
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


@dataclass
class MemoryLeaseStore:
    records: dict[tuple[str, str], LeaseRecord] = field(default_factory=dict)

    async def get(self, scope: str, key: str) -> LeaseRecord | None:
        return self.records.get((scope, key))

    async def set(self, scope: str, key: str, record: LeaseRecord | None) -> None:
        if record is None:
            self.records.pop((scope, key), None)
        else:
            self.records[(scope, key)] = record

    async def swap(self, scope: str, key: str, record: LeaseRecord) -> LeaseRecord | None:
        prior = self.records.get((scope, key))
        self.records[(scope, key)] = record
        return prior


class FullDiskLeaseStore(MemoryLeaseStore):
    """Reads work; every write fails as a full disk would."""

    async def set(self, scope: str, key: str, record: LeaseRecord | None) -> None:
        raise LeaseStoreError(f"write {scope}/{key}: {errno.errorcode[errno.ENOSPC]} (os error 28)")

    async def swap(self, scope: str, key: str, record: LeaseRecord) -> LeaseRecord | None:
        raise LeaseStoreError(f"write {scope}/{key}: No space left on device (os error 28)")


# ---------------------------------------------------------------- reading messages

def call_ids(messages: list[dict[str, Any]]) -> set[str]:
    return {b["id"] for m in messages if m["role"] == "assistant"
            for b in m["content"] if b["type"] == "function_call"}


def result_ids(messages: list[dict[str, Any]]) -> list[str]:
    """Call ids answered in ``messages``: result messages and inline result blocks."""
    ids = []
    for m in messages:
        if m["role"] == "function_result":
            ids.append(m["function_call_id"])
        for b in m["content"]:
            if b["type"] == "function_result":
                ids.append(b["function_call_id"])
    return ids


def timestamps(messages: list[dict[str, Any]]) -> list[int]:
    return [m["timestamp"] for m in messages]


def breakdown_total(response: dict[str, Any], overhead: int) -> int:
    b = response["breakdown"]
    return sum(b["by_role"].values()) + b["system_prompt_tokens"] + b["tools_tokens"] + overhead


# ---------------------------------------------------------------- figures for RELIABILITY.md

def record(section: str, **figures: Any) -> None:
    """Append one JSON line of figures when ``RELIABILITY_FIGURES`` names a file (the report
    script sets it); a no-op otherwise."""
    path = os.environ.get("RELIABILITY_FIGURES")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"section": section, **figures}) + "\n")
