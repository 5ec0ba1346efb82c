"""What a call did, told once: its span, its metrics and one INFO line.

``observe`` wraps an engine-facing function. The facts come from the request's model id and the
response's counters only, never from message content. The span is parented on the caller's
trace context (``wire.trace.CURRENT_TRACE``, set by the engine client from the frame); the log
line carries the caller's trace id. With telemetry off, what is left is the log line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from context_manager.ports import NO_TELEMETRY, AttributeValue, Telemetry
from context_manager.wire import trace
from context_manager.wire.errors import DecodeError, HandlerError

CALL_LOG = logging.getLogger("context_manager.calls")

# Metric names (OpenTelemetry style; every label low-cardinality).
CALLS = "context_manager.calls"
CALL_DURATION = "context_manager.call.duration"
TOKENS_IN = "context_manager.tokens.in"
TOKENS_OUT = "context_manager.tokens.out"
TOKENS_FREED = "context_manager.tokens.freed"
COMPACTIONS = "context_manager.compactions"
# ``summarizer_model``: the summariser calls a compaction reported, and their tokens.
SUMMARIZER_CALLS = "context_manager.summarizer.calls"
SUMMARIZER_TOKENS = "context_manager.summarizer.tokens"
OVERFLOWS = "context_manager.overflows"

Served = Callable[[Any], Awaitable[Any]]


def outcome_of(exc: BaseException | None) -> str:
    """``ok``, the handler error's kind (``context/overflow`` …), ``serialization``, ``internal``
    or ``cancelled`` (the call was stopped, e.g. at shutdown)."""
    if exc is None:
        return "ok"
    if not isinstance(exc, Exception):
        return "cancelled"
    if isinstance(exc, HandlerError):
        return exc.kind
    if isinstance(exc, DecodeError):
        return "serialization"
    return "internal"


def _model_id(payload: Any) -> str | None:
    model = payload.get("model") if isinstance(payload, dict) else None
    if isinstance(model, dict) and isinstance(model.get("id"), str):
        return model["id"]
    return None


def call_facts(function_id: str, payload: Any, response: Any, outcome: str) -> dict[str, AttributeValue]:
    """The span attributes of one call, in OpenTelemetry's semantic style."""
    facts: dict[str, AttributeValue] = {"iii.function.id": function_id, "context_manager.outcome": outcome}
    model = _model_id(payload)
    if model is not None:
        facts["gen_ai.request.model"] = model
    if outcome == "context/overflow":
        facts["context_manager.overflow"] = True
    if not isinstance(response, dict):
        return facts
    applied = response.get("applied")
    if isinstance(applied, dict):  # context::assemble
        facts["context_manager.usable"] = response["usable"]
        facts["context_manager.tokens.initial"] = applied["initial_token_count"]
        facts["context_manager.tokens.final"] = response["token_count"]
        facts["context_manager.estimator"] = response["breakdown"]["estimator"]
        facts["context_manager.cap.freed_tokens"] = applied["capped_tokens"]
        facts["context_manager.cap.parts"] = applied["capped_parts"]
        facts["context_manager.prune.freed_tokens"] = applied["pruned_tokens"]
        facts["context_manager.compacted"] = applied["compacted"]
        if applied["compacted"]:
            facts["context_manager.summary.kind"] = applied.get("summary_kind", "llm")
            facts["context_manager.summary.chars"] = len(applied["summary"])
            facts["context_manager.summary.head_tokens"] = applied["tokens_before"]
        if "dropped_messages" in applied:
            facts["context_manager.drop.messages"] = applied["dropped_messages"]
        _summarizer_facts(facts, applied.get("summarizer"))
    elif "pruned_parts" in response:  # context::prune
        facts["context_manager.prune.freed_tokens"] = response["pruned_tokens"]
        facts["context_manager.prune.parts"] = response["pruned_parts"]
    elif isinstance(response.get("status"), str):  # context::compact
        facts["context_manager.compact.status"] = response["status"]
        compacted = isinstance(response.get("summary"), str)
        facts["context_manager.compacted"] = compacted
        if compacted:
            facts["context_manager.summary.kind"] = response.get("summary_kind", "llm")
            facts["context_manager.summary.chars"] = len(response["summary"])
            facts["context_manager.summary.head_tokens"] = response["tokens_before"]
        _summarizer_facts(facts, response.get("summarizer"))
    elif isinstance(response.get("tokens"), int):  # context::count-tokens
        facts["context_manager.tokens.final"] = response["tokens"]
        facts["context_manager.estimator"] = response["estimator"]
    return facts


def _summarizer_facts(facts: dict[str, AttributeValue], cost: Any) -> None:
    """A compaction's ``summarizer`` report (``summarizer_model``), when there is one."""
    if not isinstance(cost, dict):
        return
    facts["context_manager.summarizer.model"] = cost["model"]
    for name in ("calls", "input_tokens", "output_tokens"):
        facts[f"context_manager.summarizer.{name}"] = cost[name]


def _log_line(facts: dict[str, AttributeValue], duration_ms: float, trace_id: str | None) -> str:
    parts = [f"call {facts['iii.function.id']} {facts['context_manager.outcome']} {duration_ms:.1f}ms"]
    for key, value in facts.items():
        if key in ("iii.function.id", "context_manager.outcome"):
            continue
        name = key.removeprefix("context_manager.").removeprefix("gen_ai.request.")
        parts.append(f"{name}={str(value).lower() if isinstance(value, bool) else value}")
    if trace_id is not None:
        parts.append(f"trace_id={trace_id}")
    return " ".join(parts)


def _record_metrics(telemetry: Telemetry, function_id: str, facts: dict[str, AttributeValue],
                    seconds: float) -> None:
    outcome = str(facts["context_manager.outcome"])
    labels = {"function": function_id, "outcome": outcome}
    telemetry.count(CALLS, 1, labels)
    telemetry.record(CALL_DURATION, seconds, labels)
    by_function = {"function": function_id}
    if "context_manager.tokens.initial" in facts:
        telemetry.record(TOKENS_IN, float(facts["context_manager.tokens.initial"]), by_function)
    if "context_manager.tokens.final" in facts and outcome == "ok":
        telemetry.record(TOKENS_OUT, float(facts["context_manager.tokens.final"]), by_function)
    for pass_name in ("cap", "prune"):
        freed = facts.get(f"context_manager.{pass_name}.freed_tokens")
        if isinstance(freed, int) and freed > 0:
            telemetry.count(TOKENS_FREED, freed, {"pass": pass_name})
    if facts.get("context_manager.compacted") is True:
        telemetry.count(COMPACTIONS, 1, {"function": function_id,
                                         "summary_kind": str(facts.get("context_manager.summary.kind", "llm"))})
    if outcome == "context/overflow":
        telemetry.count(OVERFLOWS, 1, by_function)
    if "context_manager.summarizer.model" in facts:
        model = {"model": str(facts["context_manager.summarizer.model"])}
        telemetry.count(SUMMARIZER_CALLS, int(facts["context_manager.summarizer.calls"]), model)
        for direction in ("input", "output"):
            telemetry.count(SUMMARIZER_TOKENS, int(facts[f"context_manager.summarizer.{direction}_tokens"]),
                            {**model, "direction": direction})


def observe(function_id: str, serve: Served, telemetry: Telemetry = NO_TELEMETRY,
            log: logging.Logger = CALL_LOG) -> Served:
    """``serve`` with a span, metrics and the call's INFO line; its answer and errors unchanged."""

    async def observed(payload: Any) -> Any:
        incoming = trace.CURRENT_TRACE.get()
        started = time.perf_counter()
        response: Any = None
        failure: BaseException | None = None
        with telemetry.span(function_id, "server", parent=incoming) as span:
            try:
                response = await serve(payload)
                return response
            except BaseException as exc:
                failure = exc
                raise
            finally:
                seconds = time.perf_counter() - started
                logging_calls = log.isEnabledFor(logging.INFO)
                # Nothing reads the facts with telemetry off and the INFO line disabled.
                facts = (call_facts(function_id, payload, response, outcome_of(failure))
                         if telemetry.enabled or logging_calls else {})
                if telemetry.enabled:
                    span.set_attributes(facts)
                    if failure is not None:
                        span.set_error(str(facts["context_manager.outcome"]))
                    _record_metrics(telemetry, function_id, facts, seconds)
                if logging_calls:
                    trace_id = incoming.trace_id if incoming is not None else None
                    fields: dict[str, Any] = {**facts, "duration_ms": round(seconds * 1000, 3)}
                    if trace_id is not None:
                        fields["trace_id"] = trace_id
                    log.info("%s", _log_line(facts, seconds * 1000, trace_id), extra={"call": fields})
                # The exception's traceback holds this frame: dropping it here breaks the cycle, so
                # a large payload is freed when the call ends, not at the next garbage collection.
                failure = None

    return observed
