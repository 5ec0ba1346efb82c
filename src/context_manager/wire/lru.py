"""A least-recently-used table bounded by the bytes its entries cost, and a bounded set of keys
met recently: the bookkeeping every bounded cache of the worker shares.

Six caches use ``ByteLRU``; what sets them apart is expressed as its parameters. Three are
bounded by a count of entries, each entry costing 1: the calibration ledger
(``core.counting.calibration.SentLedger``, whose ``on_evict`` uncounts the shape of a record that
leaves), the provider counts of ``estimator: router`` (``adapters.router_counter``) and the
serving process each session went to last (``processes.routing.Affinity``). The other three are
bounded by bytes:

* the message memo (``core.memo``): an entry's cost is given with each ``put`` (its text plus
  fixed overheads); ``max_entry_bytes`` is the whole budget; a bucket candidate found by
  ``get`` still has to be compared with the raw message, so only a confirmed hit calls
  ``move_to_end``; a ``put`` under a present key replaces that entry; ``on_evict`` drops every
  entry that leaves, evicted or replaced, from the memo's side indexes (by message, by raw
  object).
* the token-count cache (``adapters.tokenizers.cache``): the cost follows from the key alone,
  so replacing a count leaves ``size_bytes`` as it was; every hit calls ``move_to_end``; no
  ``on_evict``.
* the history reader (``engine.history_reader``): keys are ``id(history)`` and never replaced;
  ``max_entry_bytes`` is below the budget (one history may not crowd out all others); it asks
  ``admits`` before listing a history under its fingerprint, because a full fingerprint bucket
  drops its oldest history (``pop``) before the new one is counted and evictions run;
  ``on_evict`` unlists an evicted history from its bucket.

``SeenKeys`` holds the keys of first sightings (the memo's first messages, the reader's first
message hashes and refusals); both forget them all at once when full.

Neither structure locks: each cache holds its own lock around them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, ItemsView, KeysView, ValuesView
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_MISSING = object()


class ByteLRU(Generic[K, V]):
    """Entries in least-recently-used order, evicted oldest first while their costs exceed
    ``max_bytes``.

    A lookup does not count as a use: ``get`` only reads (an owner may still reject what it
    found), and ``move_to_end`` marks an entry as the most recently used. Both are the
    underlying ``OrderedDict``'s own methods, so a hit costs no call through this class.
    """

    __slots__ = ("_bytes", "_costs", "_on_evict", "_order", "get", "max_bytes", "max_entry_bytes",
                 "move_to_end")

    def __init__(self, max_bytes: int, *, max_entry_bytes: int | None = None,
                 on_evict: Callable[[V], object] | None = None) -> None:
        """``max_entry_bytes``: a costlier entry is refused (never more than ``max_bytes``);
        ``on_evict(value)``: called for each value that leaves to make room or is replaced by
        a ``put`` under its key (not for ``pop`` or ``clear``)."""
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_bytes if max_entry_bytes is None else min(max_bytes, max_entry_bytes)
        self._on_evict = on_evict
        order: OrderedDict[K, V] = OrderedDict()
        self._order = order
        self._costs: dict[K, int] = {}
        self._bytes = 0
        self.get = order.get
        self.move_to_end = order.move_to_end

    def admits(self, cost: int) -> bool:
        """Would ``put`` keep an entry of this cost?"""
        return cost <= self.max_entry_bytes

    def put(self, key: K, value: V, cost: int) -> bool:
        """Store ``value`` as the most recently used entry, then evict the least recently used
        ones while over budget. False, and nothing changed, when ``cost`` is not admitted."""
        if cost > self.max_entry_bytes:
            return False
        order = self._order
        costs = self._costs
        old = order.pop(key, _MISSING)
        if old is not _MISSING:
            self._bytes -= costs[key]
            if self._on_evict is not None:
                self._on_evict(old)  # type: ignore[arg-type]  # not _MISSING: a stored V
        order[key] = value
        costs[key] = cost
        self._bytes += cost
        if self._bytes > self.max_bytes:
            on_evict = self._on_evict
            while self._bytes > self.max_bytes:
                evicted_key, evicted = order.popitem(last=False)
                self._bytes -= costs.pop(evicted_key)
                if on_evict is not None:
                    on_evict(evicted)
        return True

    def pop(self, key: K, default: V | None = None) -> V | None:
        """Remove and return the entry under ``key`` (``default`` if none); no ``on_evict``."""
        value = self._order.pop(key, _MISSING)
        if value is _MISSING:
            return default
        self._bytes -= self._costs.pop(key)
        return value  # type: ignore[return-value]  # not _MISSING: a stored V

    def clear(self) -> None:
        """Forget every entry (no ``on_evict``); ``get`` and ``move_to_end`` stay bound."""
        self._order.clear()
        self._costs.clear()
        self._bytes = 0

    @property
    def size_bytes(self) -> int:
        """The summed costs of the entries held."""
        return self._bytes

    def keys(self) -> KeysView[K]:
        """Keys, least recently used first."""
        return self._order.keys()

    def values(self) -> ValuesView[V]:
        """Values, least recently used first."""
        return self._order.values()

    def items(self) -> ItemsView[K, V]:
        """Entries, least recently used first."""
        return self._order.items()

    def __contains__(self, key: object) -> bool:
        return key in self._order

    def __len__(self) -> int:
        return len(self._order)


class SeenKeys(dict[K, V]):
    """Keys met recently, each with a small mark; all forgotten at once when ``max_keys`` are
    held (cheaper than keeping an order, and first sightings need no precision)."""

    __slots__ = ("max_keys",)

    def __init__(self, max_keys: int) -> None:
        super().__init__()
        self.max_keys = max_keys

    def note(self, key: K, mark: V) -> None:
        """Remember ``key`` with ``mark``, first forgetting every key if the set is full."""
        if len(self) >= self.max_keys:
            self.clear()
        self[key] = mark


class BytesBounded:
    """What a cache built on one :class:`ByteLRU` (its ``_lru``) tells about its size."""

    _lru: ByteLRU[Any, Any]

    @property
    def max_bytes(self) -> int:
        return self._lru.max_bytes

    @property
    def size_bytes(self) -> int:
        return self._lru.size_bytes

    def __len__(self) -> int:
        return len(self._lru)
