"""Ports wrapped with telemetry: the summariser call, the router budget lookup and the lease
claim, each a child span of the invocation making it, with their metrics.

The worker wraps its adapters in these only when telemetry is on, so with it off nothing here
runs. While a child span is open the calls it makes carry its context (``wire.trace``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar

from context_manager.core.compaction.lease import is_active
from context_manager.ports import (
    ClaimingLeaseStore,
    LeaseRecord,
    LeaseStore,
    ModelBudget,
    ModelResolver,
    ResolverError,
    Span,
    SummarizeError,
    Summarizer,
    SummarizeRequest,
    Telemetry,
)

SUMMARIZER_DURATION = "context_manager.summarizer.duration"
SUMMARIZER_FAILURES = "context_manager.summarizer.failures"
LEASE_BUSY = "context_manager.lease.busy"


class TracedSummarizer:
    def __init__(self, inner: Summarizer, telemetry: Telemetry, function_id: str = "router::chat") -> None:
        self._inner = inner
        self._telemetry = telemetry
        self._function_id = function_id

    async def summarize(self, request: SummarizeRequest) -> str:
        telemetry = self._telemetry
        started = time.perf_counter()
        outcome = "ok"
        with telemetry.span(self._function_id, "client") as span:
            span.set_attributes({"iii.function.id": self._function_id, "gen_ai.operation.name": "chat",
                                 "gen_ai.request.model": request.model,
                                 "context_manager.summarizer.prompt_chars": len(request.user_prompt)})
            try:
                text = await self._inner.summarize(request)
            except SummarizeError as exc:
                outcome = exc.kind
                raise
            except Exception:
                outcome = "failed"
                raise
            except BaseException:  # cancelled: the pipeline's deadline passed
                outcome = "timeout"
                raise
            finally:
                if outcome != "ok":
                    span.set_error(outcome)
                    telemetry.count(SUMMARIZER_FAILURES, 1, {"kind": outcome})
                span.set_attributes({"context_manager.summarizer.outcome": outcome})
                telemetry.record(SUMMARIZER_DURATION, time.perf_counter() - started, {"outcome": outcome})
            span.set_attributes({"context_manager.summary.chars": len(text)})
            return text


class TracedModelResolver:
    """Around the router lookup itself (inside the cache), so a span means a real call."""

    def __init__(self, inner: ModelResolver, telemetry: Telemetry) -> None:
        self._inner = inner
        self._telemetry = telemetry

    async def get_model_budget(self, provider: str | None, model_id: str) -> ModelBudget | None:
        with self._telemetry.span("router::models::budget", "client") as span:
            span.set_attributes({"iii.function.id": "router::models::budget", "gen_ai.request.model": model_id})
            try:
                budget = await self._inner.get_model_budget(provider, model_id)
            except ResolverError:
                span.set_error("router unavailable")
                raise
            span.set_attributes({"context_manager.model.known": budget is not None})
            return budget


# Nonces claimed by the task running now (each invocation is its own task): its own claim,
# read again when it releases, is not "busy".
_CLAIMED: ContextVar[frozenset[str]] = ContextVar("context_manager_claimed_leases", default=frozenset())


class _TracedLeaseReads:
    """Reads and writes of a lease store as spans; a key found held by someone else (by the
    lease protocol's own rule, ``is_active`` under the configured TTL) counts as busy."""

    def __init__(self, inner: LeaseStore, telemetry: Telemetry, ttl_ms: Callable[[], int],
                 now_ms: Callable[[], int]) -> None:
        self._inner: LeaseStore = inner
        self._telemetry = telemetry
        self._ttl_ms = ttl_ms
        self._now_ms = now_ms

    async def get(self, scope: str, key: str) -> LeaseRecord | None:
        with self._telemetry.span("context_manager.lease.read") as span:
            record = await self._inner.get(scope, key)
            held = is_active(record, self._now_ms(), self._ttl_ms())
            self._report_busy(span, held and record is not None and record.nonce not in _CLAIMED.get())
            return record

    async def set(self, scope: str, key: str, record: LeaseRecord | None) -> None:
        with self._telemetry.span("context_manager.lease.release" if record is None else "context_manager.lease.set"):
            await self._inner.set(scope, key, record)

    def _claimed(self, span: Span, record: LeaseRecord, busy: bool) -> None:
        if not busy:
            _CLAIMED.set(_CLAIMED.get() | {record.nonce})
        self._report_busy(span, busy)

    def _report_busy(self, span: Span, busy: bool) -> None:
        span.set_attributes({"context_manager.lease.busy": busy})
        if busy:
            self._telemetry.count(LEASE_BUSY, 1, {})


class TracedLeaseStore(_TracedLeaseReads):
    """A claiming lease store whose reads, claims and releases are spans. A key found held or a
    claim lost to a racer counts as busy: the two ways ``acquire`` gives up."""

    def __init__(self, inner: ClaimingLeaseStore, telemetry: Telemetry, ttl_ms: Callable[[], int],
                 now_ms: Callable[[], int]) -> None:
        super().__init__(inner, telemetry, ttl_ms, now_ms)
        self._claiming = inner

    async def swap(self, scope: str, key: str, record: LeaseRecord) -> LeaseRecord | None:
        return await self._inner.swap(scope, key, record)

    async def claim(
        self, scope: str, key: str, record: LeaseRecord, held: Callable[[LeaseRecord | None], bool]
    ) -> LeaseRecord | None:
        with self._telemetry.span("context_manager.lease.claim") as span:
            prior = await self._claiming.claim(scope, key, record, held)
            self._claimed(span, record, held(prior))
            return prior


class TracedSwappingLeaseStore(_TracedLeaseReads):
    """The same spans over a plain (swapping) store: its ``swap`` is the claim, lost when it
    returns a claim still held. It has no ``claim``, so the lease protocol still sees a plain
    store and restores a racer's claim."""

    async def swap(self, scope: str, key: str, record: LeaseRecord) -> LeaseRecord | None:
        with self._telemetry.span("context_manager.lease.claim") as span:
            prior = await self._inner.swap(scope, key, record)
            self._claimed(span, record, is_active(prior, self._now_ms(), self._ttl_ms()))
            return prior
