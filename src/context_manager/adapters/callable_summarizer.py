"""A plain function as the summariser, for library users who run compaction without an engine.

``summarizer(system_prompt, user_prompt, model) -> str`` where ``model`` is the request's model
input as a dict. It runs in a worker thread so the pipeline's deadline still applies to a
function that hangs; a raised exception counts as a failed summariser, and an empty or
whitespace-only reply as an empty one (the pipeline decides that).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread

from context_manager.ports import SummarizeRequest, SummarizerFailed

SyncSummarizer = Callable[[str, str, dict[str, Any]], str]


class CallableSummarizer:
    def __init__(self, function: SyncSummarizer) -> None:
        self._function = function

    async def summarize(self, request: SummarizeRequest) -> str:
        model = request.model_input or {"id": request.model}
        try:
            reply = await anyio.to_thread.run_sync(
                self._function, request.system_prompt, request.user_prompt, dict(model),
                abandon_on_cancel=True,
            )
        except Exception as exc:
            raise SummarizerFailed(f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(reply, str):
            raise SummarizerFailed(f"summarizer returned {type(reply).__name__}, expected str")
        return reply
