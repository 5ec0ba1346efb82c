"""Lease records in the engine's state store (spec 03 §6.7): one lock for every process and host
that shares an engine.

Records are the ``{nonce, ts}`` objects of §6.1 under the caller's scope (``context_lease``) and
key, each call bounded by 5000 ms:

- ``get``: ``state::get``; no result (or ``null``) is free, and so is a value that is not a record.
- ``set``: ``state::set`` with the record; ``set(None)`` is ``state::delete``.
- ``swap``: ``state::update`` with one ``set`` op at path ``""``; the engine runs it atomically.
  Its reply must be an object whose ``old_value`` is ``null`` (no prior) or a record (anything
  else stored there reads as free); a ``null`` or malformed reply is an error, never a win.

This is a plain :class:`~context_manager.ports.LeaseStore`, not a ``ClaimingLeaseStore``: the
documented update ops (set, merge, increment, decrement, append, remove) all write
unconditionally, so no single call can check a claim before writing. The lease protocol
therefore takes a key with ``swap`` and gives a racer's claim back with ``set`` (§6.3), which
still lets exactly one racer win.

Any failure (no state worker, a timeout, an error body, a malformed reply) raises
:class:`~context_manager.ports.LeaseStoreError`, which the protocol reads as busy. The first
failure is logged once as a warning; later ones are marked as already reported until a call
succeeds again.
"""

from __future__ import annotations

import logging
from typing import Any

from context_manager.adapters.state_calls import TIMEOUT_MS, BadStateReply, StateCalls, StateUnavailable
from context_manager.ports import Invoke, LeaseRecord, LeaseStoreError


class StateLeaseStore:
    def __init__(self, invoke: Invoke, log: logging.Logger, timeout_ms: int = TIMEOUT_MS) -> None:
        self._calls = StateCalls(
            invoke, log,
            "state store unusable for compaction leases; every compaction reads as busy until it answers",
            "state store answering again; compaction leases are taken normally", timeout_ms)

    async def get(self, scope: str, key: str) -> LeaseRecord | None:
        return LeaseRecord.from_value(await self._call("state::get", {"scope": scope, "key": key}))

    async def set(self, scope: str, key: str, record: LeaseRecord | None) -> None:
        if record is None:
            await self._call("state::delete", {"scope": scope, "key": key})
        else:
            await self._call("state::set", {"scope": scope, "key": key, "value": record.as_value()})

    async def swap(self, scope: str, key: str, record: LeaseRecord) -> LeaseRecord | None:
        op = {"type": "set", "path": "", "value": record.as_value()}
        reply = await self._call("state::update", {"scope": scope, "key": key, "ops": [op]},
                                 check=_check_update_reply)
        return LeaseRecord.from_value(reply["old_value"])

    async def _call(self, function_id: str, payload: dict[str, Any], check: Any = None) -> Any:
        try:
            return await self._calls.call(function_id, payload, check)
        except StateUnavailable as exc:
            # The warning is logged (once): the protocol adds none of its own per call.
            raise LeaseStoreError(str(exc), reported=True) from None


def _check_update_reply(reply: Any) -> None:
    if reply is None:
        raise BadStateReply("no reply value")
    if type(reply) is not dict or "old_value" not in reply:
        raise BadStateReply("the reply is not an {old_value, new_value} object")
