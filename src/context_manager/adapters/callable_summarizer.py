"""A plain function as the summariser, for library users who run compaction without an engine.

``summarizer(system_prompt, user_prompt, model) -> str`` where ``model`` is the request's model
input as a dict. A plain function runs in a worker thread so the pipeline's deadline still
applies to a function that hangs; a coroutine function (``async def``) is awaited on the call's
own event loop, so it may use that loop's clients. A raised exception counts as a failed
summariser, and an empty or whitespace-only reply as an empty one (the pipeline decides that).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio.to_thread

from context_manager.ports import SummarizeRequest, SummarizerFailed

SyncSummarizer = Callable[[str, str, dict[str, Any]], str]
AsyncSummarizer = Callable[[str, str, dict[str, Any]], Awaitable[str]]


def _is_async(function: object) -> bool:
    # An object whose ``__call__`` is a coroutine function counts too (``functools.partial`` is
    # seen through by ``iscoroutinefunction`` itself).
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(type(function).__call__)


class CallableSummarizer:
    def __init__(self, function: SyncSummarizer | AsyncSummarizer) -> None:
        self._function = function
        self._awaits = _is_async(function)

    async def summarize(self, request: SummarizeRequest) -> str:
        model = request.model_input or {"id": request.model}
        try:
            if self._awaits:
                reply = await cast(AsyncSummarizer, self._function)(
                    request.system_prompt, request.user_prompt, dict(model))
            else:
                reply = await anyio.to_thread.run_sync(
                    cast(SyncSummarizer, self._function), request.system_prompt, request.user_prompt, dict(model),
                    abandon_on_cancel=True,
                )
        except Exception as exc:
            raise SummarizerFailed(f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(reply, str):
            raise SummarizerFailed(f"summarizer returned {type(reply).__name__}, expected str")
        return reply
