"""The outbound call seam adapters use: invoke a function on another worker.

The engine client provides the real callable; tests provide fakes. A failed invocation (remote
error, timeout, unroutable function) raises :class:`InvokeError` whose text is what the engine
reported.
"""

from __future__ import annotations

# Failure texts meaning "the callee is not there" (too old, or absent), compared lower-cased.
_UNROUTABLE_MARKERS = ("function_not_found", "not found", "no function")


def is_unroutable(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in _UNROUTABLE_MARKERS)
