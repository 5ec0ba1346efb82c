"""In-process entry: run one function with no engine (library use and the `call` command)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import orjson

from context_manager.adapters.callable_summarizer import AsyncSummarizer, SyncSummarizer
from context_manager.adapters.job_runners import LoopJobRunner, ThreadJobRunner
from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.adapters.stores import build_policies
from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.core.counting.calibration import SHARED_LEDGER
from context_manager.core.memo import SHARED_MEMO
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.handlers.context import HandlerContext
from context_manager.handlers.registry import FUNCTIONS
from context_manager.wire.errors import INVOCATION_FAILED, CallError, ContextManagerError, Error, error_envelope
from context_manager.wire.plain import plain_answer, watching_fragments

log = logging.getLogger("context_manager")

# Every library call of this process shares one bounded store of remembered compactions, one
# ledger of what it sent (``count_calibration: usage``) and, for the command line, one memo.
LIBRARY_SESSIONS = MemorySessionStore()
# The summaries computed ahead of time (``compact_ahead_at``) outlive the call that starts them:
# they run on one background thread of the process, started with the first of them.
LIBRARY_AHEAD = ThreadJobRunner()
# acall()'s run on the caller's own event loop instead, where an ``async`` summariser's resources live.
LIBRARY_LOOP_AHEAD = LoopJobRunner()
# ... and one memory store of published policies (``context::policy::*``).
LIBRARY_POLICIES = build_policies(DEFAULT_CONFIG, None)  # type: ignore[arg-type]  # memory: no engine


class UnknownFunction(Error, LookupError):
    pass


def _config_from(config: dict[str, Any] | WorkerConfig | None) -> WorkerConfig:
    if config is None:
        return DEFAULT_CONFIG
    if isinstance(config, WorkerConfig):
        return config
    from context_manager.config.parse import parse_config_value

    return parse_config_value(config)


Summarizer = SyncSummarizer | AsyncSummarizer


def build_context(config: WorkerConfig, summarizer: Summarizer | None) -> HandlerContext:
    ctx = HandlerContext(config=config, tokenizers=PACKAGED_TOKENIZERS, payload_from_json=True,
                         session_store=LIBRARY_SESSIONS, memo=SHARED_MEMO, sent_ledger=SHARED_LEDGER,
                         policies=LIBRARY_POLICIES)
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
        if config.compact_ahead_at is not None:
            ctx.ahead_runner = LIBRARY_AHEAD
    return ctx


_LOOPS = threading.local()
T = TypeVar("T")


def _on_private_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion on this thread's private, reused event loop.

    ``anyio.run`` builds a loop per call and its runner installs then restores a SIGINT handler;
    restoring formats the repr of the handler's task, which alone costs ~0.7 ms per call.
    """
    loop = getattr(_LOOPS, "loop", None)
    if loop is None or loop.is_closed():
        loop = _LOOPS.loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        leftovers = asyncio.all_tasks(loop)
        if leftovers:  # as asyncio.run does: nothing from one call survives into the next
            for task in leftovers:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))


def run_handler(function_id: str, payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    """Run one function to completion on this thread's private loop (the command line's entry)."""
    return _on_private_loop(call_async(function_id, payload, ctx))


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


def _library_context(
    function_id: str, payload: Any, config: dict[str, Any] | WorkerConfig | None, summarizer: Summarizer | None,
) -> HandlerContext:
    """What both entries check before running: the function id, the configuration, the payload."""
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
    return ctx


async def _answer(function_id: str, payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    """The plain answer of one library call on the running loop, every failure as a CallError."""
    try:
        with watching_fragments() as watch:
            response = await call_async(function_id, payload, ctx)
        # Plain values, nothing json.dumps cannot write: only an answer holding fragments changes.
        return plain_answer(response, watch)
    except CallError:
        raise
    except Exception as exc:  # a defect must still answer with the envelope, never a traceback
        log.exception("unexpected failure in %s", function_id)
        raise CallError(*error_envelope(exc)) from None


def _answer_here(function_id: str, payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    return _on_private_loop(_answer(function_id, payload, ctx))


# Threads for call() made while an event loop runs on the caller's thread: that loop cannot be
# re-entered, so the call runs on one of these, each with its own reused loop. Created on first use.
_OFF_LOOP: ThreadPoolExecutor | None = None
_OFF_LOOP_LOCK = threading.Lock()


def _off_loop_threads() -> ThreadPoolExecutor:
    global _OFF_LOOP
    with _OFF_LOOP_LOCK:
        if _OFF_LOOP is None:
            _OFF_LOOP = ThreadPoolExecutor(thread_name_prefix="context-manager-call")
        return _OFF_LOOP


def _loop_running_here() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def call(
    function_id: str,
    payload: Any,
    config: dict[str, Any] | WorkerConfig | None = None,
    summarizer: Summarizer | None = None,
) -> dict[str, Any]:
    """Run ``function_id`` on ``payload`` and return the response as a dict of plain JSON values
    (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``).

    Raises :class:`CallError` with the code and message an engine caller would receive,
    :class:`UnknownFunction` for an id this worker does not serve, and ``ValueError``
    (``ConfigError``) for a ``config`` that does not validate; all three are
    :class:`context_manager.Error`. Called from inside a running event loop, the call runs on a
    private thread and blocks the caller until it is done: from a coroutine, ``await acall(...)``.
    """
    ctx = _library_context(function_id, payload, config, summarizer)
    if _loop_running_here():
        return _off_loop_threads().submit(_answer_here, function_id, payload, ctx).result()
    return _answer_here(function_id, payload, ctx)


async def acall(
    function_id: str,
    payload: Any,
    config: dict[str, Any] | WorkerConfig | None = None,
    summarizer: Summarizer | None = None,
) -> dict[str, Any]:
    """:func:`call` for async code: the same answers and errors, run on the caller's event loop
    (asyncio, or anyio on asyncio). ``summarizer`` may be a plain or an ``async`` function."""
    ctx = _library_context(function_id, payload, config, summarizer)
    if ctx.ahead_runner is not None:
        ctx.ahead_runner = LIBRARY_LOOP_AHEAD
    return await _answer(function_id, payload, ctx)
