"""The worker process: boot against the engine, serve the seven functions, hot-reload the
configuration, stop cleanly on SIGINT/SIGTERM (spec 04 §1.5–§1.10, §2.5–§2.12).

Boot order: configuration schema registered (seeded only when nothing is stored) -> the
authoritative value fetched -> lease directory opened -> public functions -> models-changed
flush and its binding -> console UI -> on-config-change and its binding. Any failure before the
functions are registered is fatal (one log line, exit status 1): a supervisor restarts the
worker. After boot, a configuration that cannot be fetched or parsed keeps the last good one.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Mapping
from typing import Any

import anyio

from context_manager._version import __version__
from context_manager.adapters.configuration import ConfigurationSource
from context_manager.adapters.fs_lease_store import LeaseDirError
from context_manager.adapters.model_cache import CachingModelResolver
from context_manager.adapters.otel_telemetry import telemetry_from_environment
from context_manager.adapters.router_counter import RouterTokenCounter
from context_manager.adapters.router_models import RouterModelResolver
from context_manager.adapters.router_summarizer import RouterSummarizer
from context_manager.adapters.stores import (
    build_lease_store,
    build_session_store,
    describe_lease_store,
    lease_store_changed,
    session_store_changed,
)
from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.adapters.traced import TracedModelResolver, TracedSummarizer
from context_manager.config.seed import load_seed
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.engine.client import (
    EngineClient,
    RegistrationRejected,
    invoke_callable,
    worker_metadata,
)
from context_manager.engine.history_reader import HistoryReader
from context_manager.handlers.context import HandlerContext
from context_manager.handlers.observe import observe
from context_manager.handlers.registry import FUNCTIONS
from context_manager.ports import NO_TELEMETRY, SystemClock, Telemetry
from context_manager.schemas import PUBLIC_FUNCTION_IDS, function_definitions

WORKER_NAME = "context-manager"
DEFAULT_CONFIG_ID = "context-manager"
MODELS_CHANGED_TRIGGER = "router::models::changed"
UI_ASSETS = (
    ("console:script", "context-manager/page.js"),
    ("console:style", "context-manager/styles.css"),
)

log = logging.getLogger("context_manager.worker")


def frame_reader() -> HistoryReader:
    """Reads invocation frames, reusing the parse of a history an earlier call sent."""
    return HistoryReader(("data", "messages"))


class BootError(Exception):
    """A fatal boot step: ``step`` names it, ``cause`` says why."""

    def __init__(self, step: str, cause: BaseException | str) -> None:
        super().__init__(f"{step}: {cause}")
        self.step = step
        self.cause = cause


def config_id(environ: Mapping[str, str] | None = None) -> str:
    """``III_CONFIG_NAME`` (trimmed) when non-empty, else ``context-manager`` (spec 04 §2.5)."""
    env = os.environ if environ is None else environ
    return env.get("III_CONFIG_NAME", "").strip() or DEFAULT_CONFIG_ID


class Worker:
    """The live worker: per-call snapshots of the configuration and the lease store."""

    def __init__(self, client: EngineClient, source: ConfigurationSource,
                 telemetry: Telemetry = NO_TELEMETRY) -> None:
        self.client = client
        self.source = source
        self.telemetry = telemetry
        self.config: WorkerConfig = DEFAULT_CONFIG
        self.lease_store: Any = None
        self.invoke = invoke = invoke_callable(client)
        resolver: Any = RouterModelResolver(invoke)
        self.summarizer: Any = RouterSummarizer(invoke, client.url, lambda: self.config.summarizer_timeout_ms)
        if telemetry.enabled:
            resolver = TracedModelResolver(resolver, telemetry)
            self.summarizer = TracedSummarizer(self.summarizer, telemetry)
        self.model_cache = CachingModelResolver(resolver, SystemClock())
        # Remembered compactions (`summary_reuse`): one store for the process, kept across
        # reloads that leave `session_store` (and its TTL) alone.
        self.session_store = build_session_store(self.config, invoke)
        self.token_counter = RouterTokenCounter(invoke, logging.getLogger("context_manager"))
        self._reload_lock = anyio.Lock()

    # ------------------------------------------------------------------ boot

    async def boot(self, seed_path: str | None) -> None:
        seed = load_seed(seed_path, log=log)
        if seed is not None:
            log.info("configuration seed loaded; used only for a first registration (path=%s)", seed_path)
        try:
            await self.source.register(seed)
        except Exception as exc:
            raise BootError("registering context-manager configuration schema", exc) from exc
        try:
            self.config = await self.source.fetch()
        except Exception as exc:
            raise BootError("loading context-manager configuration", exc) from exc
        try:
            self.lease_store = self._lease_store(self.config)
        except LeaseDirError as exc:
            raise BootError("opening the compaction lease directory", exc) from exc
        if session_store_changed(DEFAULT_CONFIG, self.config):
            self.session_store = build_session_store(self.config, self.invoke)
        await self.register_functions()

    async def register_functions(self) -> None:
        """Register every function and binding (spec order); without a connection they wait
        for the next one."""
        definitions = {d["id"]: d for d in function_definitions()}
        for function_id in PUBLIC_FUNCTION_IDS:
            await self._register(definitions[function_id])
        log.info("public functions registered")
        await self._register(definitions["context::on-models-changed"])
        await self.client.register_trigger(MODELS_CHANGED_TRIGGER, "context::on-models-changed", {})
        await self._register(definitions["context-manager::ui-content"])
        for trigger_type, path in UI_ASSETS:
            await self.client.register_trigger(trigger_type, "context-manager::ui-content", {"path": path})
        await self._register(definitions["context::on-config-change"])
        await self.client.register_trigger(
            "configuration",
            "context::on-config-change",
            {"configuration_id": self.source.config_id, "event_types": ["configuration:updated"]},
        )
        log.info("worker ready (public functions=%d)", len(PUBLIC_FUNCTION_IDS))

    async def _register(self, definition: dict[str, Any]) -> None:
        function_id = definition["id"]
        await self.client.register_function(
            function_id,
            self._bind(function_id, FUNCTIONS[function_id]),
            description=definition["description"],
            request_format=definition["request_schema"],
            response_format=definition["response_schema"],
            metadata=definition["metadata"],
        )

    def _bind(self, function_id: str, handler: Any) -> Any:
        """The engine-facing callable: each call gets a fresh snapshot and is observed (span,
        metrics, one INFO line). Failures propagate to the client, which answers (and logs a
        defect) once."""

        async def serve(payload: Any) -> Any:
            return await handler(payload, self.context())

        return observe(function_id, serve, self.telemetry)

    def _lease_store(self, config: WorkerConfig) -> Any:
        return build_lease_store(config, self.invoke, self.telemetry, current_config=lambda: self.config)

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
            model_cache=self.model_cache,
            on_config_change=self.reload,
            payload_from_json=True,
            session_store=self.session_store,
            token_counter=self.token_counter,
        )

    # ------------------------------------------------------------------ hot reload

    async def reload(self) -> None:
        """Re-read the stored value and apply it; failures keep the previous configuration.

        Reloads are serialised so overlapping deliveries converge on the latest stored value.
        """
        async with self._reload_lock:
            try:
                config = await self.source.fetch()
            except Exception as exc:
                log.error("configuration reload failed; the previous configuration stays in force: %s", exc)
                return
            if lease_store_changed(self.config, config):
                try:
                    store = self._lease_store(config)
                except LeaseDirError as exc:
                    log.error(
                        "new lease store could not be opened; previous store and configuration "
                        "stay in force: %s",
                        exc,
                    )
                    return
                # Store first, then the snapshot: the snapshot's lease_dir always matches a store.
                self.lease_store = store
                log.info("lease store replaced (%s)", describe_lease_store(config))
            if session_store_changed(self.config, config):
                self.session_store = build_session_store(config, self.invoke)
                log.info("session store replaced (session_store=%s)", config.session_store)
            self.config = config
            log.info("configuration reloaded")


async def serve(url: str, config_path: str | None) -> int:
    """Run the worker until SIGINT/SIGTERM; the exit status."""
    client = EngineClient(url, worker_metadata(WORKER_NAME, __version__), reader=frame_reader())
    telemetry = telemetry_from_environment()
    worker = Worker(client, ConfigurationSource(client, config_id()), telemetry)
    status = 0

    async def watch_signals(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                log.info("stopping")
                scope.cancel()
                return

    async def run_client(scope: anyio.CancelScope) -> None:
        nonlocal status
        try:
            await client.run()
        except RegistrationRejected as exc:
            log.error("the engine rejected this worker: %s", exc)
            status = 1
            scope.cancel()

    async def boot_then_wait(scope: anyio.CancelScope) -> None:
        nonlocal status
        try:
            await worker.boot(config_path)
        except BootError as exc:
            log.error("boot failed: %s", exc)
            status = 1
            scope.cancel()
            return
        except Exception as exc:
            log.error("boot failed unexpectedly: %r", exc)
            status = 1
            scope.cancel()
            return
        await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_signals, tg.cancel_scope)
        tg.start_soon(run_client, tg.cancel_scope)
        tg.start_soon(boot_then_wait, tg.cancel_scope)
    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
        await client.close()
    telemetry.shutdown()
    return status


def run_worker(url: str, config_path: str | None) -> int:
    """Entry point of ``python -m context_manager [--url] [--config]``: the exit status."""
    try:
        return anyio.run(serve, url, config_path)
    except KeyboardInterrupt:
        return 0
