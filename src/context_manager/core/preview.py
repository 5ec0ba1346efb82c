"""``options.preview_only``: an assemble call that changes nothing outside its answer.

A preview (a console showing what a switch to another model would send) must not change what
later calls get. Its answer is the one the same request with ``allow_compaction: false``
returns, and it runs with :func:`read_only` deps: the one place where everything a call could
leave behind is withheld.

Withheld:

* the summariser and the lease store: nothing is summarised and no lease is taken (compaction is
  off as well; without the ports it cannot happen);
* the job runner (``compact_ahead_at``): a preview never starts a summary ahead of time;
* writes to the session store (``summary_reuse``'s remembered compactions, in this process or in
  the engine's state store): records are read with ``peek`` (no recency refreshed, no expired
  record deleted) and nothing is put;
* writes to the calibration ledger (``count_calibration: usage``): records are read without
  refreshing their recency and nothing is remembered.

Kept as they are, because what they hold are pure results any call may read and fill: the model
resolver (the router's limits and their cache), the router's token counter and its cache, the
tokenizers; and the configuration, the clock and the log. The memo of decoded messages travels
with the call's reuse (``core.reuse``) and is pure as well.

Every member of ``core.assemble.AssembleDeps`` is a field of :class:`ReadOnlyDeps`, sorted into
kept or withheld here; a test compares the two lists, so a member added later is sorted too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from context_manager.core.counting.calibration import Ledger, SentLedger
from context_manager.core.settings import WorkerConfig
from context_manager.ports import JobRunner, RememberedCompaction, SessionStore, TokenCounter, TokenizerSource

# The members of AssembleDeps a preview uses as they are.
KEPT = ("config", "resolver", "clock", "log", "tokenizers", "token_counter")
# The members that keep state: absent or read-only in a preview.
WITHHELD = ("summarizer", "lease_store", "session_store", "sent_ledger", "ahead_runner")


class ReadOnlySessions:
    """A ``SessionStore`` as a preview sees it: ``get`` peeks, ``put`` keeps nothing."""

    __slots__ = ("_store",)

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    async def get(self, key: str) -> RememberedCompaction | None:
        return await self._store.peek(key)

    async def peek(self, key: str) -> RememberedCompaction | None:
        return await self._store.peek(key)

    async def put(self, key: str, record: RememberedCompaction) -> None:
        return None


class ReadOnlyLedger:
    """A ``SentLedger`` as a preview sees it: records read without a use, nothing remembered
    (what a preview returns is never sent)."""

    __slots__ = ("_ledger",)

    def __init__(self, ledger: SentLedger) -> None:
        self._ledger = ledger

    def __len__(self) -> int:
        return len(self._ledger)

    def holds_shape(self, shape: bytes) -> bool:
        return self._ledger.holds_shape(shape)

    def recall(self, digest: bytes) -> int | None:
        return self._ledger.peek(digest)

    def remember(self, digest: bytes, estimate: int) -> None:
        return None


@dataclass(slots=True)
class ReadOnlyDeps:
    """``core.assemble.AssembleDeps`` for a preview (see the module docstring)."""

    config: WorkerConfig
    resolver: Any
    clock: Any
    log: logging.Logger
    tokenizers: TokenizerSource | None
    token_counter: TokenCounter | None
    session_store: SessionStore | None
    sent_ledger: Ledger | None
    summarizer: Any = None
    lease_store: Any = None
    ahead_runner: JobRunner | None = None


def read_only(deps: Any) -> ReadOnlyDeps:
    """``deps`` (an ``AssembleDeps``) with every member that keeps state withheld."""
    store = deps.session_store
    ledger = deps.sent_ledger
    return ReadOnlyDeps(
        config=deps.config,
        resolver=deps.resolver,
        clock=deps.clock,
        log=deps.log,
        tokenizers=deps.tokenizers,
        token_counter=deps.token_counter,
        session_store=None if store is None else ReadOnlySessions(store),
        sent_ledger=None if ledger is None else ReadOnlyLedger(ledger),
    )
