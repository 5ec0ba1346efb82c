"""The worker process exports its spans and metrics over OTLP/HTTP to a receiver on loopback."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from testengine import TestEngine, WorkerProcess, eventually

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra is not installed: pip install -e '.[dev]'")

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

pytestmark = pytest.mark.slow

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_SPAN = "b7ad6b7169203331"


class Receiver:
    """A minimal OTLP/HTTP collector: keeps every POST as (path, content type, body)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, str, bytes]] = []
        received = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                received.append((self.path, self.headers.get("Content-Type", ""), body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list:
        found = []
        for path, _, body in self.posts:
            if path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        found.extend((resource, span) for span in scope.spans)
        return found


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    receiver.thread.start()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()


@pytest.fixture
def engine() -> Iterator[TestEngine]:
    engine = TestEngine().start()
    yield engine
    engine.stop()


def test_spans_and_metrics_arrive_over_otlp(engine: TestEngine, receiver: Receiver, tmp_path: Path) -> None:
    env = {"III_COMPOSE_DIR": str(tmp_path), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
           "OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_METRIC_EXPORT_INTERVAL": "60000",
           "OTEL_SERVICE_NAME": "cm-under-test", "LOG_FORMAT": "json"}
    process = WorkerProcess(engine.url, env=env, cwd=tmp_path)
    try:
        try:
            engine.wait_for_functions({"context::count-tokens"}, timeout=20)
        except TimeoutError:
            raise AssertionError(process.stderr) from None
        payload = {"model": {"id": "m", "limits": {"context_window": 100000, "max_output_tokens": 1000}},
                   "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}]}
        frame = {"type": "invokefunction", "invocation_id": "otlp-1", "function_id": "context::count-tokens",
                 "data": payload, "traceparent": f"00-{TRACE_ID}-{PARENT_SPAN}-01"}
        reply = engine.call_raw("context::count-tokens", json.dumps(frame), "otlp-1")
        assert reply["result"]["tokens"] == 17

        spans = eventually(lambda: [s for s in receiver.spans() if s[1].name == "context::count-tokens"], timeout=10)
        [(resource, span)] = spans
        assert span.trace_id.hex() == TRACE_ID and span.parent_span_id.hex() == PARENT_SPAN
        attributes = {a.key: a.value for a in span.attributes}
        assert attributes["iii.function.id"].string_value == "context::count-tokens"
        assert attributes["context_manager.tokens.final"].int_value == 17
        service = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
        assert service == "cm-under-test"
        assert {ct for path, ct, _ in receiver.posts if path == "/v1/traces"} == {"application/x-protobuf"}

        # Stopping flushes the metrics.
        process.interrupt(signal.SIGINT)
        assert process.wait(20) == 0
        metric_names = set()
        for path, _, body in receiver.posts:
            if path == "/v1/metrics":
                for resource in ExportMetricsServiceRequest.FromString(body).resource_metrics:
                    for scope in resource.scope_metrics:
                        metric_names.update(m.name for m in scope.metrics)
        assert {"context_manager.calls", "context_manager.call.duration"} <= metric_names

        lines = [json.loads(line) for line in process.stderr.splitlines() if line.startswith("{")]
        [call] = [line for line in lines if line["logger"] == "context_manager.calls"]
        assert call["trace_id"] == TRACE_ID and call["iii.function.id"] == "context::count-tokens"
        assert "hi" not in call["message"].split()
    finally:
        process.kill()
