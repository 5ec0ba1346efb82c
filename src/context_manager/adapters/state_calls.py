"""Calls to the engine's state store (``state::*``) as the state-backed stores make them: each
bounded by a timeout, any failure one ``StateUnavailable``, and the store's unusability logged
once as a warning until a call succeeds again (then one INFO line)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from context_manager.ports import Invoke, InvokeError
from context_manager.wire.errors import Error

TIMEOUT_MS = 5000


class StateUnavailable(Error):
    """A state call failed (no state worker, a timeout, an error body, a reply ``check`` refused);
    the text names the function and why."""


class BadStateReply(Error):
    """Raised by a reply ``check``: the reply is not the documented shape."""


class StateCalls:
    """``unusable`` prefixes the warning of the first failure; ``recovered`` is the line logged
    when the store answers again."""

    def __init__(self, invoke: Invoke, log: logging.Logger, unusable: str, recovered: str,
                 timeout_ms: int = TIMEOUT_MS) -> None:
        self._invoke = invoke
        self._log = log
        self._unusable_text = unusable
        self._recovered_text = recovered
        self.timeout_ms = timeout_ms
        self._unusable = False  # a warning has been logged and no call has succeeded since

    async def call(self, function_id: str, payload: dict[str, Any],
                   check: Callable[[Any], None] | None = None) -> Any:
        try:
            reply = await asyncio.wait_for(self._invoke(function_id, payload, self.timeout_ms),
                                           self.timeout_ms / 1000)
            if check is not None:
                check(reply)
        except (TimeoutError, InvokeError, OSError, BadStateReply) as exc:
            reason = f"timed out after {self.timeout_ms}ms" if isinstance(exc, TimeoutError) else str(exc)
            text = f"{function_id}: {reason}"
            if not self._unusable:
                self._unusable = True
                self._log.warning("%s: %s", self._unusable_text, text)
            raise StateUnavailable(text) from None
        if self._unusable:
            self._unusable = False
            self._log.info(self._recovered_text)
        return reply
