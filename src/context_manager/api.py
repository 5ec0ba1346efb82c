"""In-process entry: run one function with no engine (library use and the `call` command)."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import orjson

from context_manager.adapters.callable_summarizer import SyncSummarizer
from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.handlers.context import HandlerContext
from context_manager.handlers.registry import FUNCTIONS
from context_manager.wire.errors import INVOCATION_FAILED, CallError, ContextManagerError, error_envelope
from context_manager.wire.plain import plain_answer, watching_fragments

log = logging.getLogger("context_manager")

# Every library call of this process shares one bounded store of remembered compactions.
LIBRARY_SESSIONS = MemorySessionStore()


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
    ctx = HandlerContext(config=config, tokenizers=PACKAGED_TOKENIZERS, payload_from_json=True,
                         session_store=LIBRARY_SESSIONS)
    if summarizer is not None:
        from context_manager.adapters.callable_summarizer import CallableSummarizer

        ctx.summarizer = CallableSummarizer(summarizer)
    if ctx.summarizer is not None:
        from context_manager.adapters.fs_lease_store import FsLeaseStore
        from context_manager.config.paths import resolve_lease_dir

        # No directory is created until a lease is actually taken. There is no engine here, so
        # `lease_store: state` falls back to these files and `session_store: state` to the
        # process's memory: the same config works in a library call and in the worker.
        ctx.lease_store = FsLeaseStore(resolve_lease_dir(config.lease_dir), create=False)
    return ctx


_LOOPS = threading.local()


def run_handler(function_id: str, payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    """Run one function to completion on this thread's private, reused event loop.

    ``anyio.run`` builds a loop per call and its runner installs then restores a SIGINT handler;
    restoring formats the repr of the handler's task, which alone costs ~0.7 ms per call.
    """
    loop = getattr(_LOOPS, "loop", None)
    if loop is None or loop.is_closed():
        loop = _LOOPS.loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(call_async(function_id, payload, ctx))
    finally:
        leftovers = asyncio.all_tasks(loop)
        if leftovers:  # as asyncio.run does: nothing from one call survives into the next
            for task in leftovers:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))


async def call_async(function_id: str, payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    handler = FUNCTIONS.get(function_id)
    if handler is None:
        raise UnknownFunction(function_id)
    try:
        return await handler(payload, ctx)
    except ContextManagerError as exc:
        raise CallError(*error_envelope(exc)) from None


def _refuse_what_json_cannot_carry(payload: Any) -> None:
    """A Python caller can pass what no JSON caller could send (lone surrogates, non-string keys,
    bytes): refuse it as the decoder would refuse a malformed payload."""
    try:
        orjson.dumps(payload)
    except orjson.JSONEncodeError as exc:
        if "Recursion limit" in str(exc):
            return  # depth is the decoder's to judge: it accepts up to MAX_DEPTH levels
        raise CallError(INVOCATION_FAILED, f"serialization error: {exc}") from None


def call(
    function_id: str,
    payload: Any,
    config: dict[str, Any] | WorkerConfig | None = None,
    summarizer: SyncSummarizer | None = None,
) -> dict[str, Any]:
    """Run ``function_id`` on ``payload`` and return the response as a dict of plain JSON values
    (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``).

    Raises :class:`CallError` with the code and message an engine caller would receive,
    :class:`UnknownFunction` for an id this worker does not serve, and ``ValueError``
    (``ConfigError``) for a ``config`` that does not validate.
    """
    if function_id not in FUNCTIONS:
        raise UnknownFunction(function_id)
    try:
        ctx = build_context(_config_from(config), summarizer)
    except ContextManagerError as exc:
        raise CallError(*error_envelope(exc)) from None
    # The returned dicts are the caller's to keep and change: none of them may be shared with
    # later calls, so library calls decode afresh.
    ctx.memo = None
    ctx.payload_from_json = False
    _refuse_what_json_cannot_carry(payload)
    try:
        with watching_fragments() as watch:
            response = run_handler(function_id, payload, ctx)
        # Plain values, nothing json.dumps cannot write: only an answer holding fragments changes.
        return plain_answer(response, watch)
    except CallError:
        raise
    except Exception as exc:  # a defect must still answer with the envelope, never a traceback
        log.exception("unexpected failure in %s", function_id)
        raise CallError(*error_envelope(exc)) from None
