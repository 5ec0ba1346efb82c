"""Remembered compactions (``summary_reuse``) in the engine's state store, shared by every process
and host on one engine.

Each record is a JSON object under scope ``context_session`` and the session key:
``{summary, head_len, head_digest, anchor_len, expires_at}``, ``expires_at`` in ms since the
epoch (written as now + ``session_ttl_secs``). A record at or past its expiry, or one that does
not parse, is a miss and is deleted. The store may forget anything at any time, so a failing
state store only costs summariser calls: every failure is a miss (or a lost write), logged once
as a warning until a call succeeds again, and never raised.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from context_manager.ports import Clock, Invoke, InvokeError, RememberedCompaction
from context_manager.wire.ints import I64_MAX, U64_MAX

SCOPE = "context_session"
TIMEOUT_MS = 5000


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
    return RememberedCompaction(summary, head_len, digest, anchor_len)


def record_value(record: RememberedCompaction, expires_at: int) -> dict[str, Any]:
    return {"summary": record.summary, "head_len": record.head_len, "head_digest": record.head_digest,
            "anchor_len": record.anchor_len, "expires_at": expires_at}


class StateSessionStore:
    """Implements the ``SessionStore`` port over ``state::*``; ``ttl_secs`` must be positive."""

    def __init__(self, invoke: Invoke, clock: Clock, ttl_secs: int, log: logging.Logger,
                 timeout_ms: int = TIMEOUT_MS) -> None:
        self._invoke = invoke
        self._clock = clock
        self._ttl_ms = min(ttl_secs * 1000, I64_MAX)
        self._log = log
        self._timeout_ms = timeout_ms
        self._unusable = False

    async def get(self, key: str) -> RememberedCompaction | None:
        found, value = await self._call("state::get", {"scope": SCOPE, "key": key})
        if not found or value is None:
            return None
        record = record_from_value(value, self._clock.now_ms())
        if record is None:
            await self._call("state::delete", {"scope": SCOPE, "key": key})  # expired or unreadable
        return record

    async def put(self, key: str, record: RememberedCompaction) -> None:
        expires_at = min(self._clock.now_ms() + self._ttl_ms, I64_MAX)
        await self._call("state::set", {"scope": SCOPE, "key": key, "value": record_value(record, expires_at)})

    async def _call(self, function_id: str, payload: dict[str, Any]) -> tuple[bool, Any]:
        """``(True, reply)``, or ``(False, None)`` after a failure (logged once)."""
        try:
            reply = await asyncio.wait_for(self._invoke(function_id, payload, self._timeout_ms),
                                           self._timeout_ms / 1000)
        except (TimeoutError, InvokeError, OSError) as exc:
            reason = f"timed out after {self._timeout_ms}ms" if isinstance(exc, TimeoutError) else str(exc)
            if not self._unusable:
                self._unusable = True
                self._log.warning("state store unusable for remembered compactions; summaries are not "
                                  "reused until it answers: %s: %s", function_id, reason)
            return False, None
        if self._unusable:
            self._unusable = False
            self._log.info("state store answering again; remembered compactions are kept")
        return True, reply
