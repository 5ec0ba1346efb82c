"""In-process plumbing shared by the reliability tests: calling a handler with a chosen
context, port fakes (summariser, lease stores) and helpers to read messages."""

from __future__ import annotations

import asyncio
import errno
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.api import call_async
from context_manager.config.parse import parse_config_value
from context_manager.handlers.context import HandlerContext
from context_manager.ports import InvokeError, LeaseRecord, LeaseStoreError, SummarizeRequest


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


def record_outcomes(section: str, outcomes: Mapping[tuple[str, str], int]) -> None:
    """Record a property suite's ``(property, outcome) -> count`` tally, grouped by property,
    under the suite's own ``section`` of the figures."""
    by_property: dict[str, dict[str, int]] = {}
    for (name, outcome), count in sorted(outcomes.items()):
        by_property.setdefault(name, {})[outcome] = count
    record(section, outcomes=by_property)


# ---------------------------------------------------------------- the engine's state store, in process

class MemoryState:
    """The ``Invoke`` port over the test engine's ``state::*`` functions, without a socket (what
    ``lease_store: state`` and ``session_store: state`` call). ``down_after`` = n: the first n
    state calls answer, every later one fails as an absent state worker does, until it is reset
    to None."""

    def __init__(self) -> None:
        from testengine.state import StateStore

        self.store = StateStore()
        self.calls = 0
        self.down_after: int | None = None

    async def __call__(self, function_id: str, payload: dict[str, Any], timeout_ms: int) -> Any:
        self.calls += 1
        if self.down_after is not None and self.calls > self.down_after:
            raise InvokeError(f"remote error (function_not_found): Function {function_id} not found in namespace default.")
        body = self.store.call(function_id, payload)
        if "error" in body:
            raise InvokeError(f"remote error ({body['error']['code']}): {body['error']['message']}")
        return body.get("result")


def stateful_context(config: dict[str, Any], summarizer: Any, state: MemoryState | None = None,
                     **ports: Any) -> HandlerContext:
    """A context whose stores are the ones ``config`` names (``state`` ones over ``state``, a
    file lease store as an in-memory one) and whose calibration ledger and session memory are
    its own, so that two contexts made alike answer alike."""
    from context_manager.adapters.memory_session_store import MemorySessionStore
    from context_manager.adapters.stores import build_lease_store, build_session_store
    from context_manager.core.counting.calibration import SentLedger

    cfg = parse_config_value(config)
    state = state or MemoryState()
    lease_store = build_lease_store(cfg, state) if cfg.lease_store == "state" else MemoryLeaseStore()
    session_store = build_session_store(cfg, state) if cfg.session_store == "state" else MemorySessionStore()
    return HandlerContext(config=cfg, tokenizers=PACKAGED_TOKENIZERS, summarizer=summarizer,
                          lease_store=lease_store, session_store=session_store, sent_ledger=SentLedger(),
                          **ports)
