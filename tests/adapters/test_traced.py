"""The traced port wrappers against a recording telemetry: spans, attributes, metrics."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_manager.adapters.fs_lease_store import FsLeaseStore
from context_manager.adapters.traced import (
    LEASE_BUSY,
    SUMMARIZER_DURATION,
    SUMMARIZER_FAILURES,
    TracedLeaseStore,
    TracedModelResolver,
    TracedSummarizer,
)
from context_manager.core.compaction.lease import acquire, release
from context_manager.ports import (
    ClaimingLeaseStore,
    ManualClock,
    ModelBudget,
    ResolverError,
    RouterModel,
    SummarizerEmpty,
    SummarizeRequest,
)


class RecordedSpan:
    def __init__(self, name: str, kind: str) -> None:
        self.name, self.kind = name, kind
        self.attributes: dict[str, Any] = {}
        self.error: str | None = None

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        self.attributes.update(attributes)

    def set_error(self, description: str) -> None:
        self.error = description


class Recording:
    enabled = True

    def __init__(self) -> None:
        self.spans: list[RecordedSpan] = []
        self.counts: list[tuple[str, int, dict[str, str]]] = []
        self.records: list[tuple[str, dict[str, str]]] = []

    @contextmanager
    def span(self, name: str, kind: str = "internal", parent: Any = None):
        span = RecordedSpan(name, kind)
        self.spans.append(span)
        yield span

    def count(self, name: str, value: int, labels: dict[str, str]) -> None:
        self.counts.append((name, value, labels))

    def record(self, name: str, value: float, labels: dict[str, str]) -> None:
        assert value >= 0
        self.records.append((name, labels))

    def shutdown(self) -> None:
        pass


REQUEST = SummarizeRequest(system_prompt="s", user_prompt="u" * 42, model="m")


class Replying:
    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply

    async def summarize(self, request: SummarizeRequest) -> str:
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_a_summary_is_a_client_span_with_its_duration() -> None:
    telemetry = Recording()
    assert anyio.run(TracedSummarizer(Replying("SUMMARY"), telemetry).summarize, REQUEST) == "SUMMARY"
    [span] = telemetry.spans
    assert (span.name, span.kind, span.error) == ("router::chat", "client", None)
    assert span.attributes == {"iii.function.id": "router::chat", "gen_ai.operation.name": "chat",
                               "gen_ai.request.model": "m", "context_manager.summarizer.prompt_chars": 42,
                               "context_manager.summarizer.outcome": "ok", "context_manager.summary.chars": 7}
    assert telemetry.records == [(SUMMARIZER_DURATION, {"outcome": "ok"})]
    assert telemetry.counts == []


@pytest.mark.parametrize("failure,kind", [(SummarizerEmpty(), "empty"), (RuntimeError("boom"), "failed")])
def test_a_failed_summary_is_counted_by_kind(failure: Exception, kind: str) -> None:
    telemetry = Recording()
    with pytest.raises(type(failure)):
        anyio.run(TracedSummarizer(Replying(failure), telemetry).summarize, REQUEST)
    [span] = telemetry.spans
    assert span.error == kind and span.attributes["context_manager.summarizer.outcome"] == kind
    assert telemetry.counts == [(SUMMARIZER_FAILURES, 1, {"kind": kind})]
    assert telemetry.records == [(SUMMARIZER_DURATION, {"outcome": kind})]


class Resolver:
    def __init__(self, answer: ModelBudget | None | Exception) -> None:
        self.answer = answer

    async def get_model_budget(self, provider: str | None, model_id: str) -> ModelBudget | None:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_the_budget_lookup_is_a_span() -> None:
    telemetry = Recording()
    budget = ModelBudget(RouterModel("m", 1000, 100), 100)
    assert anyio.run(TracedModelResolver(Resolver(budget), telemetry).get_model_budget, None, "m") is budget
    assert anyio.run(TracedModelResolver(Resolver(None), telemetry).get_model_budget, None, "x") is None
    with pytest.raises(ResolverError):
        anyio.run(TracedModelResolver(Resolver(ResolverError("down")), telemetry).get_model_budget, None, "m")
    assert [(s.name, s.kind, s.attributes.get("context_manager.model.known"), s.error) for s in telemetry.spans] == [
        ("router::models::budget", "client", True, None),
        ("router::models::budget", "client", False, None),
        ("router::models::budget", "client", None, "router unavailable"),
    ]


def test_a_claim_lost_to_a_holder_counts_as_busy(tmp_path: Path) -> None:
    telemetry = Recording()
    clock = ManualClock(1_000)
    store = TracedLeaseStore(FsLeaseStore(tmp_path), telemetry, lambda: 300, clock.now_ms)
    assert isinstance(store, ClaimingLeaseStore)

    # Two calls, each its own task as the engine client serves them: the second finds the key held.
    nonces: dict[str, Any] = {}
    claimed, tried = anyio.Event(), anyio.Event()

    async def holder() -> None:
        nonces["holder"] = await acquire(store, clock, "key", 300)
        claimed.set()
        await tried.wait()
        await release(store, "key", nonces["holder"])

    async def latecomer() -> None:
        await claimed.wait()
        clock.advance(1)
        nonces["latecomer"] = await acquire(store, clock, "key", 300)
        tried.set()

    async def calls() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(holder)
            tg.start_soon(latecomer)

    anyio.run(calls)
    assert nonces["holder"] is not None and nonces["latecomer"] is None
    assert [(s.name, s.attributes) for s in telemetry.spans] == [
        ("context_manager.lease.read", {"context_manager.lease.busy": False}),
        ("context_manager.lease.claim", {"context_manager.lease.busy": False}),
        ("context_manager.lease.read", {"context_manager.lease.busy": True}),
        ("context_manager.lease.read", {"context_manager.lease.busy": False}),  # release reads its own claim
        ("context_manager.lease.release", {}),
    ]
    assert telemetry.counts == [(LEASE_BUSY, 1, {})]


def test_a_claim_lost_to_a_racer_counts_as_busy(tmp_path: Path) -> None:
    telemetry = Recording()
    inner = FsLeaseStore(tmp_path)
    store = TracedLeaseStore(inner, telemetry, lambda: 300, lambda: 1_000)

    async def lose() -> Any:
        from context_manager.core.compaction.lease import SCOPE
        from context_manager.ports import LeaseRecord

        await inner.set(SCOPE, "key", LeaseRecord("racer", 999))
        return await store.claim(SCOPE, "key", LeaseRecord("mine", 1_000), lambda r: r is not None)

    assert anyio.run(lose).nonce == "racer"
    assert [(s.name, s.attributes) for s in telemetry.spans] == [
        ("context_manager.lease.claim", {"context_manager.lease.busy": True})]
    assert telemetry.counts == [(LEASE_BUSY, 1, {})]
