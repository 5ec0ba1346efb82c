"""The in-process session store: remembered compactions in a byte-bounded LRU.

One store serves every call of a process (the worker's handlers, or every library ``call()``),
so it is locked; evicting a record only costs one summariser call later.
"""

from __future__ import annotations

import threading

from context_manager.ports import RememberedCompaction
from context_manager.wire.codec import utf8_len
from context_manager.wire.lru import ByteLRU

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
# Per-record bookkeeping beyond the summary and key text (record, digest, dict slots).
RECORD_OVERHEAD_BYTES = 256


class MemorySessionStore:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._records: ByteLRU[str, RememberedCompaction] = ByteLRU(max_bytes)
        self._lock = threading.Lock()

    async def get(self, key: str) -> RememberedCompaction | None:
        with self._lock:
            record = self._records.get(key)
            if record is not None:
                self._records.move_to_end(key)
            return record

    async def peek(self, key: str) -> RememberedCompaction | None:
        with self._lock:
            return self._records.get(key)

    async def put(self, key: str, record: RememberedCompaction) -> None:
        cost = utf8_len(record.summary) + utf8_len(key) + RECORD_OVERHEAD_BYTES
        with self._lock:
            if not self._records.put(key, record, cost):
                self._records.pop(key)  # too large to keep: never leave an older record behind

    @property
    def size_bytes(self) -> int:
        with self._lock:
            return self._records.size_bytes

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)
