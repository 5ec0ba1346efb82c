"""What one serving process works with: the adapters behind every port, the configuration in
force, and the engine-facing handlers built on them.

The worker builds one set over its engine connection; each process of ``--processes N`` builds
its own over the calls its parent makes for it. A call takes a snapshot (:meth:`context`), so a
reload never changes a call already running.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from context_manager.adapters.fs_lease_store import LeaseDirError
from context_manager.adapters.job_runners import LoopJobRunner
from context_manager.adapters.model_cache import CachingModelResolver
from context_manager.adapters.router_counter import RouterTokenCounter
from context_manager.adapters.router_models import RouterModelResolver
from context_manager.adapters.router_summarizer import RouterSummarizer
from context_manager.adapters.stores import (
    build_lease_store,
    build_policies,
    build_session_store,
    describe_lease_store,
    lease_store_changed,
    policy_store_changed,
    session_store_changed,
)
from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.adapters.traced import TracedModelResolver, TracedSummarizer
from context_manager.core.counting.calibration import SentLedger
from context_manager.core.memo import MessageMemo
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.handlers.context import HandlerContext
from context_manager.handlers.observe import Served, observe
from context_manager.handlers.registry import FUNCTIONS
from context_manager.ports import NO_TELEMETRY, Invoke, LeaseStore, SessionStore, SystemClock, Telemetry

log = logging.getLogger("context_manager.worker")


class Services:
    """The adapters of one process and the configuration they serve with."""

    def __init__(self, invoke: Invoke, engine_url: str, telemetry: Telemetry = NO_TELEMETRY) -> None:
        self.telemetry = telemetry
        self._invoke = invoke
        self.config: WorkerConfig = DEFAULT_CONFIG
        self.lease_store: LeaseStore | None = None
        resolver: Any = RouterModelResolver(invoke)
        self.summarizer: Any = RouterSummarizer(invoke, engine_url, lambda: self.config.summarizer_timeout_ms)
        if telemetry.enabled:
            resolver = TracedModelResolver(resolver, telemetry)
            self.summarizer = TracedSummarizer(self.summarizer, telemetry)
        self.model_cache = CachingModelResolver(resolver, SystemClock())
        # Remembered compactions (`summary_reuse`): one store for the process, kept across
        # reloads that leave `session_store` (and its TTL) alone.
        self.session_store: SessionStore = build_session_store(self.config, invoke)
        # Published policies, kept where the sessions are.
        self.policies = build_policies(self.config, invoke)
        self.token_counter = RouterTokenCounter(invoke, logging.getLogger("context_manager"))
        self.on_config_change: Callable[[], Any] | None = None
        # What the models-changed flush empties (anything with ``flush()``).
        self.flushed_on_models_changed: Any = self.model_cache
        # Shared by every call this process serves: decoded messages, and what was sent for the
        # inputs it reduced (``count_calibration: usage``).
        self.memo = MessageMemo()
        self.sent_ledger = SentLedger()
        # The summaries computed ahead of time (``compact_ahead_at``): tasks of this process's
        # event loop, bounded, cancelled by :meth:`aclose` when the process stops serving.
        self.ahead_runner = LoopJobRunner()

    def adopt(self, config: WorkerConfig) -> None:
        """Serve with ``config`` from now on; a store it changes is opened first, so when that
        fails (``LeaseDirError``) the previous stores and configuration stay in force."""
        replacing = self.lease_store is not None  # False: the first configuration, at boot
        if not replacing or lease_store_changed(self.config, config):
            # Store first, then the snapshot: the snapshot's lease_dir always matches a store.
            self.lease_store = build_lease_store(config, self._invoke, self.telemetry,
                                                 current_config=lambda: self.config)
            if replacing:
                log.info("lease store replaced (%s)", describe_lease_store(config))
        if session_store_changed(self.config, config):
            self.session_store = build_session_store(config, self._invoke)
            if replacing:
                log.info("session store replaced (session_store=%s)", config.session_store)
        if policy_store_changed(self.config, config):
            self.policies = build_policies(config, self._invoke)
        self.config = config

    def readopt(self, config: WorkerConfig) -> bool:
        """:meth:`adopt` for a reload: a store that cannot be opened is logged and the previous
        stores and configuration stay in force (False)."""
        try:
            self.adopt(config)
        except LeaseDirError as exc:
            log.error("new lease store could not be opened; previous store and configuration "
                      "stay in force: %s", exc)
            return False
        return True

    def context(self) -> HandlerContext:
        """The snapshot one call works with; a reload never changes a snapshot already taken."""
        return HandlerContext(
            config=self.config,
            resolver=self.model_cache,
            summarizer=self.summarizer,
            lease_store=self.lease_store,
            clock=SystemClock(),
            tokenizers=PACKAGED_TOKENIZERS,
            log=logging.getLogger("context_manager"),
            model_cache=self.flushed_on_models_changed,
            on_config_change=self.on_config_change,
            payload_from_json=True,
            session_store=self.session_store,
            token_counter=self.token_counter,
            memo=self.memo,
            sent_ledger=self.sent_ledger,
            ahead_runner=self.ahead_runner,
            policies=self.policies,
        )

    async def aclose(self) -> None:
        """Stop serving: the unfinished summaries computed ahead of time are dropped."""
        await self.ahead_runner.aclose()

    def served(self, function_id: str) -> Served:
        """The engine-facing callable of ``function_id``: each call gets a fresh snapshot and is
        observed (span, metrics, one INFO line). Failures propagate to whoever answers the
        frame, which replies (and logs a defect) once."""
        handler = FUNCTIONS[function_id]

        async def serve(payload: Any) -> Any:
            return await handler(payload, self.context())

        return observe(function_id, serve, self.telemetry)
