"""The per-call INFO line, its JSON form, the trace context without telemetry, and the no-op."""

from __future__ import annotations

import json
import logging
import sys

import anyio
import pytest

from context_manager.adapters.log_format import JsonFormatter, formatter_for
from context_manager.adapters.otel_telemetry import (
    is_configured,
    telemetry_from_environment,
)
from context_manager.handlers import assemble, prune
from context_manager.handlers.context import HandlerContext
from context_manager.handlers.observe import call_facts, observe, outcome_of
from context_manager.ports import NO_TELEMETRY
from context_manager.wire import trace
from context_manager.wire.errors import DecodeError, HandlerError, overflow

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
SECRET = "the user's private words"


def _payload() -> dict:
    messages = [{"role": "user", "content": [{"type": "text", "text": SECRET}], "timestamp": 1},
                {"role": "assistant", "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": 2,
                 "content": [{"type": "function_call", "id": "c1", "function_id": "fs::read"}]},
                {"role": "function_result", "function_call_id": "c1", "function_id": "fs::read",
                 "content": [{"type": "text", "text": SECRET * 2000}], "timestamp": 3}]
    return {"model": {"id": "m", "limits": {"context_window": 200000, "max_output_tokens": 1000}},
            "messages": messages, "options": {"max_result_tokens": 1000}}


def _served(handler):
    async def serve(payload):
        return await handler(payload, HandlerContext())
    return serve


def _run(observed, payload, context: trace.TraceContext | None = None):
    async def go():
        token = trace.CURRENT_TRACE.set(context)
        try:
            return await observed(payload)
        finally:
            trace.CURRENT_TRACE.reset(token)
    return anyio.run(go)


def test_one_info_line_per_call_with_the_key_facts_and_no_content(caplog):
    caplog.set_level(logging.INFO, logger="context_manager.calls")
    observed = observe("context::assemble", _served(assemble.handle))
    response = _run(observed, _payload(), trace.TraceContext(TRACEPARENT, "k=v"))
    [record] = [r for r in caplog.records if r.name == "context_manager.calls"]
    assert record.levelno == logging.INFO
    message = record.getMessage()
    assert message.startswith("call context::assemble ok ")
    assert message.split("ms ", 1)[1] == (
        "model=m usable=179000 tokens.initial=12106 tokens.final=1007 estimator=heuristic "
        "cap.freed_tokens=11099 cap.parts=1 prune.freed_tokens=0 compacted=false "
        "trace_id=4bf92f3577b34da6a3ce929d0e0e4736")
    assert response["applied"]["capped_tokens"] == 11099 and response["token_count"] == 1007
    assert SECRET not in message and SECRET not in json.dumps(record.call)
    assert record.call["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert record.call["context_manager.cap.freed_tokens"] == 11099
    assert record.call["duration_ms"] >= 0


def test_json_lines_carry_the_facts_as_members(caplog):
    caplog.set_level(logging.INFO, logger="context_manager.calls")
    observed = observe("context::prune", _served(prune.handle))
    _run(observed, {"messages": _payload()["messages"]})
    [record] = [r for r in caplog.records if r.name == "context_manager.calls"]
    document = json.loads(JsonFormatter().format(record))
    assert document["level"] == "INFO" and document["logger"] == "context_manager.calls"
    assert document["iii.function.id"] == "context::prune"
    assert document["context_manager.outcome"] == "ok"
    assert document["context_manager.prune.freed_tokens"] == 0
    assert document["context_manager.prune.parts"] == 0
    assert "trace_id" not in document  # no caller context, no trace id
    assert document["message"].startswith("call context::prune ok ")
    assert isinstance(formatter_for(" JSON "), JsonFormatter)
    assert not isinstance(formatter_for(None), JsonFormatter)


def test_a_failure_is_logged_with_its_outcome_and_raised_unchanged(caplog):
    caplog.set_level(logging.INFO, logger="context_manager.calls")

    async def failing(payload):
        raise overflow(900, 800)

    with pytest.raises(Exception) as raised:
        _run(observe("context::assemble", failing), {"model": {"id": "m"}})
    assert str(raised.value) == "context/overflow: assembled context requires 900 tokens but usable budget is 800"
    [record] = [r for r in caplog.records if r.name == "context_manager.calls"]
    assert record.getMessage().split("ms ", 1)[1] == "model=m overflow=true"
    assert record.getMessage().startswith("call context::assemble context/overflow ")


def test_outcomes():
    assert outcome_of(None) == "ok"
    assert outcome_of(overflow(2, 1)) == "context/overflow"
    assert outcome_of(DecodeError("bad")) == "serialization"
    assert outcome_of(RuntimeError("x")) == "internal"
    assert outcome_of(KeyboardInterrupt()) == "cancelled"
    assert call_facts("context::compact", {"model": {"id": 7}}, {"status": "busy"}, "ok") == {
        "iii.function.id": "context::compact", "context_manager.outcome": "ok",
        "context_manager.compact.status": "busy", "context_manager.compacted": False}


def test_the_incoming_frame_context_is_parsed_or_ignored():
    assert trace.from_frame({"traceparent": TRACEPARENT, "baggage": "a=1"}) == trace.TraceContext(TRACEPARENT, "a=1")
    assert trace.from_frame({"traceparent": TRACEPARENT, "baggage": 5}) == trace.TraceContext(TRACEPARENT, None)
    for bad in ("", "00-" + "0" * 32 + "-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                TRACEPARENT.upper(), 17, None):
        assert trace.from_frame({"traceparent": bad}) is None
    assert trace.TraceContext(TRACEPARENT).trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert trace.TraceContext(TRACEPARENT).span_id == "00f067aa0ba902b7"


def test_telemetry_is_off_unless_an_endpoint_is_configured():
    assert telemetry_from_environment({}) is NO_TELEMETRY
    assert not is_configured({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "})
    assert not is_configured({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"})
    assert is_configured({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"})


def test_without_the_extra_an_endpoint_warns_once_and_stays_off(monkeypatch, caplog):
    # As if OpenTelemetry were not installed: importing any of it fails (also what an earlier
    # test in this process already imported).
    names = {name for name in sys.modules if name == "opentelemetry" or name.startswith("opentelemetry.")}
    names |= {"opentelemetry", "opentelemetry.sdk", "opentelemetry.trace",
              "opentelemetry.exporter.otlp.proto.http.metric_exporter",
              "opentelemetry.exporter.otlp.proto.http.trace_exporter"}
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)
    with caplog.at_level(logging.WARNING, logger="context_manager.telemetry"):
        telemetry = telemetry_from_environment({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert telemetry is NO_TELEMETRY
    [record] = caplog.records
    assert "pip install 'context-manager[otel]'" in record.getMessage()


def test_no_telemetry_passes_the_callers_context_through():
    seen = []

    async def serve(payload):
        seen.append(trace.CURRENT_TRACE.get())
        return {}

    context = trace.TraceContext(TRACEPARENT, "k=v")
    _run(observe("context::count-tokens", serve, NO_TELEMETRY), {}, context)
    assert seen == [context]


def test_a_failed_call_frees_its_payload_without_the_garbage_collector():
    import gc
    import weakref

    class Payload(dict):
        pass

    async def failing(payload):
        raise overflow(900, 800)

    payload = Payload(model={"id": "m"})
    alive = weakref.ref(payload)
    gc.disable()
    try:
        # Driven by hand (it never suspends), so no event loop holds on to the exception.
        call = observe("context::assemble", failing)(payload)
        try:
            call.send(None)
        except HandlerError as exc:
            assert exc.kind == "context/overflow"
        del call, payload
        assert alive() is None  # no reference cycle keeps the request alive
    finally:
        gc.enable()
