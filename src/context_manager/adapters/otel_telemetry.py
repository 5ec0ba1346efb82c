"""The telemetry port over the OpenTelemetry SDK, exporting OTLP over HTTP/protobuf.

Optional: ``pip install 'context-manager[otel]'``. ``telemetry_from_environment`` turns it on
only when an OTLP endpoint is configured the standard way (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
the per-signal ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``..._METRICS_ENDPOINT``) and
``OTEL_SDK_DISABLED`` is not true; the exporters read every other ``OTEL_*`` variable
themselves (headers, timeouts, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, batch and
export intervals). Without the extra installed it logs one warning and stays off.
OpenTelemetry is imported only here, and only when it is turned on.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from context_manager._version import __version__
from context_manager.ports import NO_TELEMETRY, AttributeValue, SpanKind, Telemetry
from context_manager.wire import trace

log = logging.getLogger("context_manager.telemetry")

SERVICE_NAME = "context-manager"
_ENDPOINT_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)
_UNITS = {"duration": "s", "tokens": "{token}"}


def is_configured(environ: Mapping[str, str]) -> bool:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(environ.get(name, "").strip() for name in _ENDPOINT_VARIABLES)


def telemetry_from_environment(environ: Mapping[str, str] | None = None) -> Telemetry:
    """OTLP telemetry when configured and installed, else the no-op."""
    env = os.environ if environ is None else environ
    if not is_configured(env):
        return NO_TELEMETRY
    try:
        return OtelTelemetry.over_otlp()
    except ImportError as exc:
        log.warning("OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed "
                    "(pip install 'context-manager[otel]'); telemetry stays off: %s", exc)
        return NO_TELEMETRY


class _Span:
    __slots__ = ("_span",)

    def __init__(self, span: Any) -> None:
        self._span = span

    def set_attributes(self, attributes: dict[str, AttributeValue]) -> None:
        self._span.set_attributes(attributes)

    def set_error(self, description: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        self._span.set_status(Status(StatusCode.ERROR, description))


class OtelTelemetry:
    """Spans from ``tracer_provider``, metrics from ``meter_provider`` (tests pass in-memory ones)."""

    enabled = True

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        from opentelemetry.trace import SpanKind as OtelKind
        from opentelemetry.trace.propagation.tracecontext import (
            TraceContextTextMapPropagator,
        )

        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._tracer = tracer_provider.get_tracer("context_manager", __version__)
        self._meter = meter_provider.get_meter("context_manager", __version__)
        self._propagator = TraceContextTextMapPropagator()
        self._kinds = {"server": OtelKind.SERVER, "client": OtelKind.CLIENT, "internal": OtelKind.INTERNAL}
        self._counters: dict[str, Any] = {}
        self._histograms: dict[str, Any] = {}

    @classmethod
    def over_otlp(cls) -> OtelTelemetry:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
            OTLPMetricExporter,
        )
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter,
        )
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import OTELResourceDetector, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over our defaults.
        resource = Resource.create({"service.name": SERVICE_NAME, "service.version": __version__}).merge(
            OTELResourceDetector().detect())
        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        meter_provider = MeterProvider(resource=resource,
                                       metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())])
        return cls(tracer_provider, meter_provider)

    @contextmanager
    def span(self, name: str, kind: SpanKind = "internal",
             parent: trace.TraceContext | None = None) -> Iterator[_Span]:
        context = None
        baggage = None
        if parent is not None:
            context = self._propagator.extract({"traceparent": parent.traceparent})
            baggage = parent.baggage
        else:
            current = trace.CURRENT_TRACE.get()
            baggage = current.baggage if current is not None else None
        with self._tracer.start_as_current_span(name, context=context, kind=self._kinds[kind],
                                                record_exception=False,
                                                set_status_on_exception=False) as span:
            own = span.get_span_context()
            child = trace.TraceContext(
                trace.traceparent(format(own.trace_id, "032x"), format(own.span_id, "016x"),
                                  own.trace_flags.sampled),
                baggage,
            )
            token = trace.CURRENT_TRACE.set(child)
            try:
                yield _Span(span)
            finally:
                trace.CURRENT_TRACE.reset(token)

    def count(self, name: str, value: int, labels: dict[str, str]) -> None:
        counter = self._counters.get(name)
        if counter is None:
            counter = self._counters[name] = self._meter.create_counter(name, unit=_unit(name))
        counter.add(value, labels)

    def record(self, name: str, value: float, labels: dict[str, str]) -> None:
        histogram = self._histograms.get(name)
        if histogram is None:
            histogram = self._histograms[name] = self._meter.create_histogram(name, unit=_unit(name))
        histogram.record(value, labels)

    def shutdown(self) -> None:
        for provider in (self._tracer_provider, self._meter_provider):
            try:
                provider.shutdown()
            except Exception as exc:  # an unreachable collector must not fail the stop
                log.warning("telemetry shutdown: %s", exc)


def _unit(name: str) -> str:
    last = name.rsplit(".", 1)[-1]
    if last in _UNITS:
        return _UNITS[last]
    if ".tokens." in name or name.endswith(".tokens"):
        return "{token}"
    return "1"
