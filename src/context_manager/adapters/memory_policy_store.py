"""Published policies in this process's memory (``session_store: memory``, the library and the
command line). Each method runs without awaiting, so on one event loop every call is atomic."""

from __future__ import annotations

from context_manager.ports import PolicyIndex, PolicyRecord


class MemoryPolicyStore:
    """Implements the ``PolicyStore`` port; nothing here fails."""

    def __init__(self) -> None:
        self._stamp = 0
        self._active: dict[str, int] = {}
        self._counters: dict[str, int] = {}
        self._records: dict[str, dict[int, PolicyRecord]] = {}

    async def index(self) -> PolicyIndex:
        return PolicyIndex(self._stamp, self._active)

    async def allocate(self, scope: str) -> int:
        self._counters[scope] = number = self._counters.get(scope, 0) + 1
        return number

    async def put(self, scope: str, record: PolicyRecord) -> None:
        self._records.setdefault(scope, {})[record.version] = record

    async def get(self, scope: str, version: int) -> PolicyRecord | None:
        return self._records.get(scope, {}).get(version)

    async def versions(self, scope: str) -> list[PolicyRecord]:
        return list(self._records.get(scope, {}).values())

    async def activate(self, scope: str, version: int | None) -> None:
        # A new mapping each time: an index already handed out never changes under its reader.
        active = dict(self._active)
        if version is None:
            active.pop(scope, None)
        else:
            active[scope] = version
        self._active = active
        self._stamp += 1

    async def scopes(self) -> dict[str, int]:
        return dict(self._counters)
