"""Published policies in the engine's state store (``session_store: state``), shared by every
process and host on one engine.

Under scope ``context_policy``:

- ``index``: ``{"stamp": n, "active": {scope key: version | null}}``, changed only by one
  ``state::update`` that merges the scope's entry and increments the stamp, so the two change
  together or not at all;
- ``counters``: ``{scope key: last version}``, each number taken by one ``state::update``
  ``increment`` (atomic in the engine), so concurrent publishes to a scope get distinct, strictly
  increasing versions.

Each version is ``{version, created_at, document}`` under scope ``context_policy|<scope key>``
and its number as the key, written before it is activated: a publish that fails at any step
leaves the previous active version in force. Any failure raises ``PolicyStoreError``; the first
is logged once as a warning until a call succeeds again. After a read of the index timed out, it
is not asked for again for ``RETRY_AFTER_S`` (the caller keeps the last index it read), so a
state store that hangs delays one context call per second, not every one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from context_manager.adapters.state_calls import TIMEOUT_MS, BadStateReply, StateCalls, StateUnavailable
from context_manager.ports import EMPTY_POLICY_INDEX, Invoke, PolicyIndex, PolicyRecord, PolicyStoreError

SCOPE = "context_policy"
INDEX = "index"
COUNTERS = "counters"
RETRY_AFTER_S = 1.0


def versions_scope(scope: str) -> str:
    return f"{SCOPE}|{scope}"


def _record(value: Any) -> PolicyRecord | None:
    if type(value) is not dict:
        return None
    version, created_at = value.get("version"), value.get("created_at")
    if type(version) is not int or type(created_at) is not str or "document" not in value:
        return None
    return PolicyRecord(version, created_at, value["document"])


def _check_update(reply: Any) -> None:
    if type(reply) is not dict or "new_value" not in reply:
        raise BadStateReply("the reply is not an {old_value, new_value} object")
    if reply.get("errors"):
        raise BadStateReply(f"update errors: {reply['errors']}")


class StatePolicyStore:
    """Implements the ``PolicyStore`` port over ``state::*``."""

    def __init__(self, invoke: Invoke, log: logging.Logger, timeout_ms: int = TIMEOUT_MS,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._index_failed_at: float | None = None  # when a read of the index last timed out
        self._calls = StateCalls(
            invoke, log,
            "state store unusable for policies; the last policies read stay in force and none can be changed",
            "state store answering again; policies are read and changed normally", timeout_ms)

    async def _call(self, function_id: str, payload: dict[str, Any], check: Any = None) -> Any:
        try:
            return await self._calls.call(function_id, payload, check)
        except StateUnavailable as exc:
            raise PolicyStoreError(str(exc)) from None

    async def index(self) -> PolicyIndex:
        if self._index_failed_at is not None and self._monotonic() - self._index_failed_at < RETRY_AFTER_S:
            raise PolicyStoreError("state::get: the policy index timed out less than a second ago")
        try:
            value = await self._call("state::get", {"scope": SCOPE, "key": INDEX})
        except PolicyStoreError as exc:
            if "timed out" in str(exc):
                self._index_failed_at = self._monotonic()
            raise
        self._index_failed_at = None
        if value is None:
            return EMPTY_POLICY_INDEX
        if type(value) is not dict or type(value.get("stamp")) is not int:
            raise PolicyStoreError("state::get: the policy index is not a {stamp, active} object")
        active = value.get("active")
        if type(active) is not dict:
            active = {}
        return PolicyIndex(value["stamp"], {key: version for key, version in active.items()
                                            if type(version) is int})

    async def allocate(self, scope: str) -> int:
        reply = await self._call("state::update", {"scope": SCOPE, "key": COUNTERS,
                                                   "ops": [{"type": "increment", "path": scope, "by": 1}]},
                                 check=_check_update)
        counters = reply["new_value"]
        number = counters.get(scope) if type(counters) is dict else None
        if type(number) is not int or number < 1:
            raise PolicyStoreError("state::update: the version counter is not a positive integer")
        return number

    async def put(self, scope: str, record: PolicyRecord) -> None:
        await self._call("state::set", {"scope": versions_scope(scope), "key": str(record.version),
                                        "value": {"version": record.version, "created_at": record.created_at,
                                                  "document": record.document}})

    async def get(self, scope: str, version: int) -> PolicyRecord | None:
        return _record(await self._call("state::get", {"scope": versions_scope(scope), "key": str(version)}))

    async def versions(self, scope: str) -> list[PolicyRecord]:
        values = await self._call("state::list", {"scope": versions_scope(scope)})
        if type(values) is not list:
            return []
        return [record for record in map(_record, values) if record is not None]

    async def activate(self, scope: str, version: int | None) -> None:
        ops = [{"type": "merge", "path": "active", "value": {scope: version}},
               {"type": "increment", "path": "stamp", "by": 1}]
        await self._call("state::update", {"scope": SCOPE, "key": INDEX, "ops": ops}, check=_check_update)

    async def scopes(self) -> dict[str, int]:
        value = await self._call("state::get", {"scope": SCOPE, "key": COUNTERS})
        if value is None:
            return {}
        if type(value) is not dict:
            raise PolicyStoreError("state::get: the version counters are not a {scope key: number} object")
        return {key: number for key, number in value.items() if type(number) is int and number > 0}
