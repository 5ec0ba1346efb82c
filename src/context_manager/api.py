"""In-process entry: run one function with no engine (library use and the `call` command)."""

from __future__ import annotations

import logging
from typing import Any

import anyio

from context_manager.adapters.callable_summarizer import SyncSummarizer
from context_manager.config.model import DEFAULT_CONFIG, WorkerConfig
from context_manager.core.errors import INVOCATION_FAILED, CallError, ContextManagerError
from context_manager.handlers.context import HandlerContext
from context_manager.handlers.registry import FUNCTIONS

log = logging.getLogger("context_manager")



class UnknownFunction(LookupError):
    pass


def _config_from(config: dict[str, Any] | WorkerConfig | None) -> WorkerConfig:
    if config is None:
        return DEFAULT_CONFIG
    if isinstance(config, WorkerConfig):
        return config
    from context_manager.config.parse import parse_config_value

    return parse_config_value(config)


def build_context(config: WorkerConfig, summarizer: SyncSummarizer | None) -> HandlerContext:
    ctx = HandlerContext(config=config)
    if summarizer is not None:
        from context_manager.adapters.callable_summarizer import CallableSummarizer

        ctx.summarizer = CallableSummarizer(summarizer)
    if ctx.summarizer is not None:
        from context_manager.config.paths import resolve_lease_dir
        from context_manager.leases.fs_store import FsLeaseStore

        # No directory is created until a lease is actually taken.
        ctx.lease_store = FsLeaseStore(resolve_lease_dir(config.lease_dir), create=False)
    return ctx


async def call_async(function_id: str, payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    handler = FUNCTIONS.get(function_id)
    if handler is None:
        raise UnknownFunction(function_id)
    try:
        return await handler(payload, ctx)
    except ContextManagerError as exc:
        raise CallError(exc.code, exc.wire_message) from None


def call(
    function_id: str,
    payload: Any,
    config: dict[str, Any] | WorkerConfig | None = None,
    summarizer: SyncSummarizer | None = None,
) -> dict[str, Any]:
    """Run ``function_id`` on ``payload`` and return the response as a dict.

    Raises :class:`CallError` with the code and message an engine caller would receive,
    :class:`UnknownFunction` for an id this worker does not serve, and ``ValueError``
    (``ConfigError``) for a ``config`` that does not validate.
    """
    if function_id not in FUNCTIONS:
        raise UnknownFunction(function_id)
    try:
        ctx = build_context(_config_from(config), summarizer)
    except ContextManagerError as exc:
        raise CallError(exc.code, exc.wire_message) from None
    try:
        return anyio.run(call_async, function_id, payload, ctx)
    except CallError:
        raise
    except Exception as exc:  # a defect must still answer with the envelope, never a traceback
        log.exception("unexpected failure in %s", function_id)
        raise CallError(INVOCATION_FAILED, f"internal error: {exc}") from None
