"""A byte-bounded LRU of token counts.

A conversation is recounted on every turn, almost entirely unchanged, so a message's count is
remembered under a digest of its serialized content (and the encoding). The bound is on the
memory the entries hold, not on their number. One lock guards the table; counting happens
outside it, so concurrent callers only ever contend for a dictionary operation.
"""

from __future__ import annotations

import hashlib
import threading

from context_manager.wire.lru import ByteLRU, BytesBounded

DIGEST_SIZE = 16
# Rough resident cost of one entry besides its key: the int, the OrderedDict node and its links.
ENTRY_OVERHEAD_BYTES = 100
DEFAULT_MAX_BYTES = 16 * 1024 * 1024


def content_key(namespace: bytes, content: bytes) -> bytes:
    """A fixed-size key: ``namespace`` (encoding and what was counted) + a digest of the bytes."""
    return namespace + hashlib.blake2b(content, digest_size=DIGEST_SIZE).digest()


class TokenCountCache(BytesBounded):
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._lru: ByteLRU[bytes, int] = ByteLRU(max_bytes)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def cost(key: bytes) -> int:
        return len(key) + ENTRY_OVERHEAD_BYTES

    def get(self, key: bytes) -> int | None:
        with self._lock:
            count = self._lru.get(key)
            if count is None:
                self.misses += 1
                return None
            self._lru.move_to_end(key)
            self.hits += 1
            return count

    def put(self, key: bytes, count: int) -> None:
        """Remember ``count`` (an entry costlier than the whole budget is not kept). The cost
        depends on the key alone, so replacing a count leaves ``size_bytes`` as it was."""
        with self._lock:
            self._lru.put(key, count, self.cost(key))

    def clear(self) -> None:
        with self._lock:
            self._lru.clear()
            self.hits = 0
            self.misses = 0

