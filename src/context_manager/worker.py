"""The worker process: boot against the engine, serve the seven functions, hot-reload the
configuration, stop cleanly on SIGINT/SIGTERM (spec 04 §1.5–§1.10, §2.5–§2.12).

Boot order: configuration schema registered (seeded only when nothing is stored) -> the
authoritative value fetched -> lease directory opened -> public functions -> models-changed
flush and its binding -> console UI -> on-config-change and its binding. Any failure before the
functions are registered is fatal (one log line, exit status 1): a supervisor restarts the
worker. After boot, a configuration that cannot be fetched or parsed keeps the last good one.

With ``processes`` above 1 the public functions are served by that many child processes
(``processes.pool``): this process keeps the engine connection, the configuration and the
three internal functions, and hands the public calls' frames over undecoded.
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
from context_manager.adapters.otel_telemetry import telemetry_from_environment
from context_manager.config.seed import load_seed
from context_manager.core.settings import WorkerConfig
from context_manager.engine.client import (
    EngineClient,
    RegistrationRejected,
    invoke_callable,
    worker_metadata,
)
from context_manager.engine.history_reader import frame_reader
from context_manager.handlers.context import HandlerContext
from context_manager.ports import NO_TELEMETRY, LeaseStore, Telemetry
from context_manager.processes.pool import ProcessPool
from context_manager.schemas import PUBLIC_FUNCTION_IDS, function_definitions, policy_function_definitions
from context_manager.services import Services
from context_manager.wire.errors import Error

WORKER_NAME = "context-manager"
DEFAULT_CONFIG_ID = "context-manager"
MODELS_CHANGED_TRIGGER = "router::models::changed"
UI_ASSETS = (
    ("console:script", "context-manager/page.js"),
    ("console:style", "context-manager/styles.css"),
)
# How long a stopping worker with serving processes waits for the calls they hold.
DRAIN_SECONDS = 30.0

log = logging.getLogger("context_manager.worker")


class BootError(Error):
    """A fatal boot step: ``step`` names it, ``cause`` says why."""

    def __init__(self, step: str, cause: BaseException | str) -> None:
        super().__init__(f"{step}: {cause}")
        self.step = step
        self.cause = cause


def config_id(environ: Mapping[str, str] | None = None) -> str:
    """``III_CONFIG_NAME`` (trimmed) when non-empty, else ``context-manager`` (spec 04 §2.5)."""
    env = os.environ if environ is None else environ
    return env.get("III_CONFIG_NAME", "").strip() or DEFAULT_CONFIG_ID


class _FlushEverywhere:
    """The models-changed flush of this process's cache and of every serving process's."""

    def __init__(self, services: Services, pool: ProcessPool) -> None:
        self._services = services
        self._pool = pool

    def flush(self) -> None:
        self._services.model_cache.flush()
        self._pool.flush_models()


class Worker:
    """The live worker: per-call snapshots of the configuration and the lease store."""

    def __init__(self, client: EngineClient, source: ConfigurationSource,
                 telemetry: Telemetry = NO_TELEMETRY, pool: ProcessPool | None = None) -> None:
        self.client = client
        self.source = source
        self.telemetry = telemetry
        self.pool = pool
        self.services = Services(invoke_callable(client), client.url, telemetry)
        self.services.on_config_change = self.reload
        if pool is not None:
            self.services.flushed_on_models_changed = _FlushEverywhere(self.services, pool)
        self._reload_lock = anyio.Lock()

    @property
    def config(self) -> WorkerConfig:
        return self.services.config

    @property
    def lease_store(self) -> LeaseStore | None:
        return self.services.lease_store

    @property
    def session_store(self) -> Any:
        return self.services.session_store

    @property
    def model_cache(self) -> Any:
        return self.services.model_cache

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
            config = await self.source.fetch()
        except Exception as exc:
            raise BootError("loading context-manager configuration", exc) from exc
        try:
            self.services.adopt(config)
        except LeaseDirError as exc:
            raise BootError("opening the compaction lease directory", exc) from exc
        if self.pool is not None:
            self.pool.configure(config)
        await self.register_functions()

    async def register_functions(self) -> None:
        """Register every function and binding (spec order); without a connection they wait
        for the next one."""
        definitions = {d["id"]: d for d in function_definitions()}
        for function_id in PUBLIC_FUNCTION_IDS:
            await self._register(definitions[function_id], forwarded=self.pool is not None)
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
        # Served here, not by the pool: a change is answered once its store has it, and every
        # process reads the store's index on its next call.
        for definition in policy_function_definitions():
            await self._register(definition)
        if self.pool is None:
            log.info("worker ready (public functions=%d)", len(PUBLIC_FUNCTION_IDS))
        else:
            log.info("worker ready (public functions=%d, processes=%d)", len(PUBLIC_FUNCTION_IDS), self.pool.size)

    async def _register(self, definition: dict[str, Any], forwarded: bool = False) -> None:
        function_id = definition["id"]
        describe = {
            "description": definition["description"],
            "request_format": definition["request_schema"],
            "response_format": definition["response_schema"],
            "metadata": definition["metadata"],
        }
        if forwarded:
            assert self.pool is not None
            await self.client.register_function(function_id, None, forward=self.pool.forward, **describe)
        else:
            await self.client.register_function(function_id, self.services.served(function_id), **describe)

    def context(self) -> HandlerContext:
        """The snapshot one call works with; a reload never changes a snapshot already taken."""
        return self.services.context()

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
            if not self.services.readopt(config):
                return
            if self.pool is not None:
                self.pool.configure(config)
            log.info("configuration reloaded")


async def serve(url: str, config_path: str | None, processes: int = 1) -> int:
    """Run the worker until SIGINT/SIGTERM; the exit status."""
    client = EngineClient(url, worker_metadata(WORKER_NAME, __version__), reader=frame_reader())
    telemetry = telemetry_from_environment()
    if processes == 1:
        worker = Worker(client, ConfigurationSource(client, config_id()), telemetry)
        status = await _serve(client, worker, config_path)
    else:
        async with ProcessPool(processes, url, client.invoke) as pool:
            worker = Worker(client, ConfigurationSource(client, config_id()), telemetry, pool)
            status = await _serve(client, worker, config_path)
    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
        await worker.services.aclose()
        await client.close()
    telemetry.shutdown()
    return status


async def _serve(client: EngineClient, worker: Worker, config_path: str | None) -> int:
    status = 0

    async def watch_signals(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                log.info("stopping")
                if worker.pool is not None and worker.pool.calls_in_hand:
                    log.info("waiting for %d calls in hand", worker.pool.calls_in_hand)
                    left = await worker.pool.drain(DRAIN_SECONDS)
                    if left:
                        log.warning("stopping with %d calls still in hand", left)
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
    return status


def run_worker(url: str, config_path: str | None, processes: int = 1) -> int:
    """Entry point of ``python -m context_manager [--url] [--config] [--processes]``: the exit
    status."""
    try:
        return anyio.run(serve, url, config_path, processes)
    except KeyboardInterrupt:
        return 0
