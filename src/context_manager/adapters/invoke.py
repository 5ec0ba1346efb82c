"""The outbound call seam adapters use: invoke a function on another worker.

The engine client provides the real callable; tests provide fakes. A failed invocation (remote
error, timeout, unroutable function) raises :class:`InvokeError` whose text is what the engine
reported.
"""

from __future__ import annotations

from typing import Any, Awaitable, Protocol


class InvokeError(Exception):
    """An invocation that did not produce a result; ``str(err)`` is the failure text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


class Invoke(Protocol):
    def __call__(self, function_id: str, payload: dict[str, Any], timeout_ms: int) -> Awaitable[Any]: ...


# Failure texts meaning "the callee is not there" (too old, or absent), compared lower-cased.
_UNROUTABLE_MARKERS = ("function_not_found", "not found", "no function")


def is_unroutable(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in _UNROUTABLE_MARKERS)
