"""Remembered compactions (``summary_reuse``) in the engine's state store, shared by every process
and host on one engine.

Each record is a JSON object under scope ``context_session`` and the session key:
``{summary, head_len, head_digest, anchor_len, expires_at}`` (a summary computed ahead of time,
kept under its own key, adds ``retained_items`` when it has them), ``expires_at`` in ms since the
epoch (written as now + ``session_ttl_secs``). A record at or past its expiry, or one that does
not parse, is a miss and is deleted (``peek`` reads it as a miss and leaves it). The store may
forget anything at any time, so a failing state store only costs summariser calls: every
failure is a miss (or a lost write), logged once as a warning until a call succeeds again, and
never raised.
"""

from __future__ import annotations

import logging
from typing import Any

from context_manager.adapters.state_calls import TIMEOUT_MS, StateCalls, StateUnavailable
from context_manager.ports import Clock, Invoke, RememberedCompaction
from context_manager.wire.ints import I64_MAX, U64_MAX

SCOPE = "context_session"


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= U64_MAX


def record_from_value(value: Any, now_ms: int) -> RememberedCompaction | None:
    """The remembered compaction a stored value holds, or ``None`` (malformed or expired)."""
    if type(value) is not dict:
        return None
    summary, digest, expires = value.get("summary"), value.get("head_digest"), value.get("expires_at")
    head_len, anchor_len = value.get("head_len"), value.get("anchor_len")
    if type(summary) is not str or type(digest) is not str or type(expires) is not int:
        return None
    if type(head_len) is not int or type(anchor_len) is not int or now_ms >= expires:
        return None
    if not (_count(head_len) and _count(anchor_len)):
        return None
    retained = value.get("retained_items")
    if retained is not None and not _count(retained):
        return None
    return RememberedCompaction(summary, head_len, digest, anchor_len, retained)


def record_value(record: RememberedCompaction, expires_at: int) -> dict[str, Any]:
    value = {"summary": record.summary, "head_len": record.head_len, "head_digest": record.head_digest,
             "anchor_len": record.anchor_len, "expires_at": expires_at}
    if record.retained_items is not None:  # only a summary computed ahead of time carries it
        value["retained_items"] = record.retained_items
    return value


class StateSessionStore:
    """Implements the ``SessionStore`` port over ``state::*``; ``ttl_secs`` must be positive."""

    def __init__(self, invoke: Invoke, clock: Clock, ttl_secs: int, log: logging.Logger,
                 timeout_ms: int = TIMEOUT_MS) -> None:
        self._clock = clock
        self._ttl_ms = min(ttl_secs * 1000, I64_MAX)
        self._calls = StateCalls(
            invoke, log,
            "state store unusable for remembered compactions; summaries are not reused until it answers",
            "state store answering again; remembered compactions are kept", timeout_ms)

    async def get(self, key: str) -> RememberedCompaction | None:
        value = await self._stored(key)
        if value is None:
            return None
        record = record_from_value(value, self._clock.now_ms())
        if record is None:
            await self._call("state::delete", {"scope": SCOPE, "key": key})  # expired or unreadable
        return record

    async def peek(self, key: str) -> RememberedCompaction | None:
        """``get`` without its clean-up: one ``state::get``, never a write."""
        value = await self._stored(key)
        return None if value is None else record_from_value(value, self._clock.now_ms())

    async def put(self, key: str, record: RememberedCompaction) -> None:
        expires_at = min(self._clock.now_ms() + self._ttl_ms, I64_MAX)
        await self._call("state::set", {"scope": SCOPE, "key": key, "value": record_value(record, expires_at)})

    async def _stored(self, key: str) -> Any:
        """The value stored under ``key``; None when absent, null or unreadable (a failure)."""
        found, value = await self._call("state::get", {"scope": SCOPE, "key": key})
        return value if found else None

    async def _call(self, function_id: str, payload: dict[str, Any]) -> tuple[bool, Any]:
        """``(True, reply)``, or ``(False, None)`` after a failure (logged once)."""
        try:
            return True, await self._calls.call(function_id, payload)
        except StateUnavailable:
            return False, None
