"""Traces and metrics through the test engine, with OpenTelemetry's in-memory exporters.

Needs the OpenTelemetry SDK (the ``otel`` extra, which ``.ci/run`` installs); the no-op without
it is covered in ``test_observe.py``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from testengine import TestEngine
from testengine.fake_router import FakeRouter

pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is not installed: pip install -e '.[dev]'")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from context_manager.adapters.configuration import ConfigurationSource
from context_manager.adapters.otel_telemetry import OtelTelemetry
from context_manager.engine.client import Backoff, EngineClient, worker_metadata
from context_manager.worker import Worker

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_SPAN}-01"
BAGGAGE = "iii.function.id=context::assemble,tenant=blue"


@pytest.fixture(autouse=True)
def compose_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("III_COMPOSE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def router() -> FakeRouter:
    return FakeRouter(summary="SUMMARY", budgets={"m": {
        "model": {"id": "m", "provider": "fake", "context_window": 12000, "max_output_tokens": 1000},
        "effective_max_output_tokens": 1000}})


@pytest.fixture
def engine(router: FakeRouter) -> Any:
    engine = TestEngine(router=router).start()
    router.engine_url = engine.url
    yield engine
    engine.stop()


class Recorded:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        self.telemetry = OtelTelemetry(tracer_provider, MeterProvider(metric_readers=[self.metrics]))

    def span(self, name: str) -> Any:
        found = [s for s in self.spans.get_finished_spans() if s.name == name]
        assert len(found) == 1, [s.name for s in self.spans.get_finished_spans()]
        return found[0]

    def points(self) -> dict[str, list[tuple[dict[str, Any], Any]]]:
        data = self.metrics.get_metrics_data()
        out: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    out[metric.name] = [(dict(p.attributes), p) for p in metric.data.data_points]
        return out


@asynccontextmanager
async def booted(engine: TestEngine, recorded: Recorded) -> AsyncIterator[Worker]:
    client = EngineClient(engine.url, worker_metadata("context-manager", "0.1.0"), backoff=Backoff(50, 2.0, 400, 0.0))
    worker = Worker(client, ConfigurationSource(client, "context-manager"), recorded.telemetry)
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.run)
        await client.wait_connected()
        try:
            await worker.boot(None)
            await anyio.to_thread.run_sync(engine.wait_for_functions, {"context::assemble", "context::count-tokens"})
            yield worker
        finally:
            await client.close()


def _compacting_request() -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "task"}], "timestamp": 1}]
    for i in range(6):
        messages += [
            {"role": "assistant", "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": 2 + 3 * i,
             "content": [{"type": "function_call", "id": f"c{i}", "function_id": "fs::read"}]},
            {"role": "function_result", "function_call_id": f"c{i}", "function_id": "fs::read",
             "content": [{"type": "text", "text": "q" * 8000}], "timestamp": 3 + 3 * i},
            {"role": "user", "content": [{"type": "text", "text": f"turn {i}"}], "timestamp": 4 + 3 * i},
        ]
    return {"model": {"id": "m", "provider": "fake"}, "messages": messages,
            "options": {"allow_prune": False, "tail_turns": 1, "lease_key": "session-1"}}


async def _invoke_with_trace(engine: TestEngine, payload: dict[str, Any]) -> dict[str, Any]:
    frame = {"type": "invokefunction", "invocation_id": "inv-1", "function_id": "context::assemble",
             "data": payload, "traceparent": TRACEPARENT, "baggage": BAGGAGE}
    return await anyio.to_thread.run_sync(engine.call_raw, "context::assemble", json.dumps(frame), "inv-1")


async def test_invocation_span_is_parented_on_the_frame_and_the_chat_call_carries_its_child(
        engine: TestEngine, router: FakeRouter) -> None:
    recorded = Recorded()
    with anyio.fail_after(20):
        async with booted(engine, recorded):
            reply = await _invoke_with_trace(engine, _compacting_request())
    response = reply["result"]
    applied = response["applied"]
    assert applied["compacted"] is True and applied["summary"] == "SUMMARY"

    invocation = recorded.span("context::assemble")
    assert invocation.kind == SpanKind.SERVER
    assert format(invocation.context.trace_id, "032x") == TRACE_ID
    assert invocation.parent is not None and format(invocation.parent.span_id, "016x") == PARENT_SPAN
    assert invocation.parent.is_remote
    assert dict(invocation.attributes) == {
        "iii.function.id": "context::assemble",
        "context_manager.outcome": "ok",
        "gen_ai.request.model": "m",
        "context_manager.usable": 9800,
        "context_manager.tokens.initial": applied["initial_token_count"],
        "context_manager.tokens.final": response["token_count"],
        "context_manager.estimator": "heuristic",
        "context_manager.cap.freed_tokens": 0,
        "context_manager.cap.parts": 0,
        "context_manager.prune.freed_tokens": 0,
        "context_manager.compacted": True,
        "context_manager.summary.kind": "llm",
        "context_manager.summary.chars": 7,
        "context_manager.summary.head_tokens": applied["tokens_before"],
    }
    assert applied["initial_token_count"] == 12632 and response["token_count"] == 25
    assert applied["tokens_before"] == 12614 and applied["tail_start_index"] == 18

    chat = recorded.span("router::chat")
    budget = recorded.span("router::models::budget")
    claim = recorded.span("context_manager.lease.claim")
    for child in (chat, budget, claim):
        assert child.parent is not None and child.parent.span_id == invocation.context.span_id
        assert child.context.trace_id == invocation.context.trace_id
    assert chat.kind == SpanKind.CLIENT
    assert dict(chat.attributes) == {
        "iii.function.id": "router::chat", "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
        "context_manager.summarizer.prompt_chars": dict(chat.attributes)["context_manager.summarizer.prompt_chars"],
        "context_manager.summarizer.outcome": "ok", "context_manager.summary.chars": 7,
    }
    assert dict(claim.attributes) == {"context_manager.lease.busy": False}

    # The frames the worker sent: router::chat carries the summariser span's context (a child of
    # the invocation span) and the caller's baggage; the budget lookup carries its own span.
    sent = {frame["function_id"]: frame for _, frame in engine.received
            if frame["type"] == "invokefunction" and frame.get("function_id", "").startswith("router::")}
    assert sent["router::chat"]["traceparent"] == f"00-{TRACE_ID}-{format(chat.context.span_id, '016x')}-01"
    assert sent["router::chat"]["baggage"] == BAGGAGE
    assert sent["router::models::budget"]["traceparent"] == (
        f"00-{TRACE_ID}-{format(budget.context.span_id, '016x')}-01")

    points = recorded.points()
    assert [(labels, p.value) for labels, p in points["context_manager.calls"]] == [
        ({"function": "context::assemble", "outcome": "ok"}, 1)]
    assert [(labels, p.value) for labels, p in points["context_manager.compactions"]] == [
        ({"function": "context::assemble", "summary_kind": "llm"}, 1)]
    [(labels, duration)] = points["context_manager.call.duration"]
    assert labels == {"function": "context::assemble", "outcome": "ok"} and duration.count == 1
    [(_, tokens_in)] = points["context_manager.tokens.in"]
    assert tokens_in.sum == 12632
    [(_, tokens_out)] = points["context_manager.tokens.out"]
    assert tokens_out.sum == 25
    [(labels, summarizer)] = points["context_manager.summarizer.duration"]
    assert labels == {"outcome": "ok"} and summarizer.count == 1
    assert "context_manager.summarizer.failures" not in points


async def test_an_overflow_is_an_error_span_and_counted(engine: TestEngine, router: FakeRouter) -> None:
    recorded = Recorded()
    payload = {"model": {"id": "m", "limits": {"context_window": 1000, "max_output_tokens": 100}},
               "messages": [{"role": "user", "content": [{"type": "text", "text": "x" * 8000}], "timestamp": 1}]}
    with anyio.fail_after(20):
        async with booted(engine, recorded):
            reply = await _invoke_with_trace(engine, payload)
    assert reply["error"]["message"].startswith("handler error: context/overflow")
    span = recorded.span("context::assemble")
    assert span.status.status_code == StatusCode.ERROR and span.status.description == "context/overflow"
    assert dict(span.attributes) == {"iii.function.id": "context::assemble",
                                     "context_manager.outcome": "context/overflow",
                                     "gen_ai.request.model": "m", "context_manager.overflow": True}
    points = recorded.points()
    assert [(labels, p.value) for labels, p in points["context_manager.overflows"]] == [
        ({"function": "context::assemble"}, 1)]
    assert [(labels, p.value) for labels, p in points["context_manager.calls"]] == [
        ({"function": "context::assemble", "outcome": "context/overflow"}, 1)]


async def test_a_failed_summariser_is_counted_by_kind(engine: TestEngine, router: FakeRouter) -> None:
    async def refuse(data: Any) -> Any:
        return [], {"ok": False, "error": {"message": "quota"}}

    router.chat_script = refuse
    recorded = Recorded()
    with anyio.fail_after(20):
        async with booted(engine, recorded):
            payload = _compacting_request()
            payload["options"]["allow_compaction"] = True
            await _invoke_with_trace(engine, payload)
    chat = recorded.span("router::chat")
    assert chat.status.status_code == StatusCode.ERROR and chat.status.description == "failed"
    points = recorded.points()
    assert [(labels, p.value) for labels, p in points["context_manager.summarizer.failures"]] == [
        ({"kind": "failed"}, 1)]


async def test_without_a_caller_context_the_invocation_starts_a_trace(engine: TestEngine) -> None:
    recorded = Recorded()
    payload = {"model": {"id": "m", "limits": {"context_window": 100000, "max_output_tokens": 1000}},
               "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}]}
    with anyio.fail_after(20):
        async with booted(engine, recorded):
            await anyio.to_thread.run_sync(engine.call, "context::count-tokens", payload)
    span = recorded.span("context::count-tokens")
    assert span.parent is None
    assert dict(span.attributes) == {"iii.function.id": "context::count-tokens", "context_manager.outcome": "ok",
                                     "gen_ai.request.model": "m", "context_manager.tokens.final": 17,
                                     "context_manager.estimator": "heuristic"}
