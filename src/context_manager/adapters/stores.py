"""The worker's lease and session stores, chosen by ``lease_store`` and ``session_store``.

``file`` leases live under ``lease_dir`` (processes on one host); ``memory`` sessions in this
process. ``state`` puts either in the engine's state store, shared by every process and host
connected to one engine. A reload rebuilds a store only when its own settings changed
(:func:`lease_store_changed`, :func:`session_store_changed`); a call keeps the store of its
snapshot either way. Published policies are kept where the sessions are (:func:`build_policies`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from context_manager.adapters.fs_lease_store import FsLeaseStore
from context_manager.adapters.memory_policy_store import MemoryPolicyStore
from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.adapters.policy_codec import ConfigPolicyCodec
from context_manager.adapters.state_lease_store import StateLeaseStore
from context_manager.adapters.state_policy_store import StatePolicyStore
from context_manager.adapters.state_session_store import StateSessionStore
from context_manager.adapters.traced import TracedLeaseStore, TracedSwappingLeaseStore
from context_manager.config.paths import resolve_lease_dir
from context_manager.core.compaction.lease import ttl_ms as lease_ttl_ms
from context_manager.core.policies.room import PolicyRoom
from context_manager.core.settings import WorkerConfig
from context_manager.ports import (
    NO_TELEMETRY,
    Clock,
    Invoke,
    LeaseStore,
    SessionStore,
    SystemClock,
    Telemetry,
)

_LOG = logging.getLogger("context_manager.stores")


def build_lease_store(config: WorkerConfig, invoke: Invoke, telemetry: Telemetry = NO_TELEMETRY,
                      *, current_config: Callable[[], WorkerConfig] | None = None,
                      log: logging.Logger = _LOG) -> LeaseStore:
    """The store ``config`` names, traced when telemetry is on.

    A ``file`` store creates its directory now and raises ``LeaseDirError`` when it cannot;
    a ``state`` store creates nothing. ``current_config`` gives the traced store the live TTL
    (default: ``config``'s).
    """
    store: FsLeaseStore | StateLeaseStore
    if config.lease_store == "state":
        store = StateLeaseStore(invoke, log)
    else:
        store = FsLeaseStore(resolve_lease_dir(config.lease_dir))
    if not telemetry.enabled:
        return store
    live = current_config or (lambda: config)

    def ttl() -> int:
        return lease_ttl_ms(live().lease_ttl_secs)

    now_ms = SystemClock().now_ms
    if isinstance(store, FsLeaseStore):
        return TracedLeaseStore(store, telemetry, ttl, now_ms)
    return TracedSwappingLeaseStore(store, telemetry, ttl, now_ms)


def build_session_store(config: WorkerConfig, invoke: Invoke, clock: Clock | None = None,
                        *, log: logging.Logger = _LOG) -> SessionStore:
    if config.session_store == "state":
        return StateSessionStore(invoke, clock or SystemClock(), config.session_ttl_secs, log)
    return MemorySessionStore()


def build_policies(config: WorkerConfig, invoke: Invoke, *, log: logging.Logger = _LOG) -> PolicyRoom:
    """Published policies where ``session_store`` keeps sessions: this process's memory, or the
    engine's state store (shared by every process and host)."""
    store: MemoryPolicyStore | StatePolicyStore
    store = StatePolicyStore(invoke, log) if config.session_store == "state" else MemoryPolicyStore()
    return PolicyRoom(store, ConfigPolicyCodec())


def policy_store_changed(old: WorkerConfig, new: WorkerConfig) -> bool:
    """Whether ``new`` keeps policies elsewhere than ``old`` (a memory store is kept)."""
    return old.session_store != new.session_store


def lease_store_changed(old: WorkerConfig, new: WorkerConfig) -> bool:
    """Whether ``new`` needs another lease store than ``old``'s."""
    if old.lease_store != new.lease_store:
        return True
    return new.lease_store == "file" and old.lease_dir != new.lease_dir


def session_store_changed(old: WorkerConfig, new: WorkerConfig) -> bool:
    """Whether ``new`` needs another session store than ``old``'s (a memory store is kept)."""
    if old.session_store != new.session_store:
        return True
    return new.session_store == "state" and old.session_ttl_secs != new.session_ttl_secs


def describe_lease_store(config: WorkerConfig) -> str:
    """How log lines name the store (``lease_dir=…`` for files, as before)."""
    if config.lease_store == "state":
        return "lease_store=state"
    return f"lease_dir={config.lease_dir}"
