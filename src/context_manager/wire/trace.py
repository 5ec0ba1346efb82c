"""W3C trace context (``traceparent`` / ``baggage``) as invocation frames carry it.

The engine forwards the caller's context with every ``invokefunction`` (see "Extras on
delivered invocations" in docs/iii-engine-protocol.md).
The engine client puts an incoming frame's context in ``CURRENT_TRACE`` for the task serving
it; a telemetry span replaces it with its own child context while it runs; outgoing invocations
made from that task carry whatever ``CURRENT_TRACE`` holds. Nothing here knows OpenTelemetry.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

# version "00", 32 hex trace id, 16 hex parent id, 2 hex flags; all-zero ids are invalid.
_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16
MAX_BAGGAGE_CHARS = 8192


@dataclass(frozen=True, slots=True)
class TraceContext:
    traceparent: str
    baggage: str | None = None

    @property
    def trace_id(self) -> str:
        return self.traceparent[3:35]

    @property
    def span_id(self) -> str:
        return self.traceparent[36:52]


def is_valid_traceparent(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    match = _TRACEPARENT.match(value)
    if match is None:
        return False
    version, trace_id, span_id, _flags = match.groups()
    return version != "ff" and trace_id != _ZERO_TRACE and span_id != _ZERO_SPAN


def from_frame(frame: dict[str, Any]) -> TraceContext | None:
    """The context an invocation frame carries; None when absent or malformed (then ignored)."""
    traceparent = frame.get("traceparent")
    if traceparent is None or not is_valid_traceparent(traceparent):
        return None
    baggage = frame.get("baggage")
    if not isinstance(baggage, str) or len(baggage) > MAX_BAGGAGE_CHARS:
        baggage = None
    return TraceContext(traceparent, baggage)


def traceparent(trace_id: str, span_id: str, sampled: bool = True) -> str:
    return f"00-{trace_id}-{span_id}-{'01' if sampled else '00'}"


# The context the running task works in: what its outgoing invocations carry.
CURRENT_TRACE: ContextVar[TraceContext | None] = ContextVar("context_manager_trace", default=None)
