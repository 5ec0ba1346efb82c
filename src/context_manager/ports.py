"""The ports through which the pure core reaches the outside world.

Adapters (router over the engine, file leases, wall clock) implement them for the worker;
tests implement them with fakes. The core never imports an adapter.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class RouterModel:
    """A router catalog record, reduced to what budget math consumes (spec 01 §3.7)."""

    id: str
    context_window: int
    max_output_tokens: int
    provider: str = ""
    input_limit: int | None = None
    thinking_budgets: dict[str, int] | None = None
    supports_vision: bool | None = None


@dataclass(frozen=True, slots=True)
class ModelBudget:
    """A `router::models::budget` answer: the catalog record and the router's output cap."""

    model: RouterModel
    effective_max_output_tokens: int


class ResolverError(Exception):
    """The router is absent, unreachable, timed out or answered something unusable."""


class ModelResolver(Protocol):
    async def get_model_budget(self, provider: str | None, model_id: str) -> ModelBudget | None:
        """The budget, or ``None`` when the router does not know the model.

        Raises :class:`ResolverError` (its text becomes ``router unavailable: <text>``).
        """
        ...


class Clock(Protocol):
    def now_ms(self) -> int: ...


@dataclass(slots=True)
class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


@dataclass(slots=True)
class ManualClock:
    """A clock tests move by hand."""

    now: int = 0

    def now_ms(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


# The compaction ports live beside the core that uses them; they are part of this surface too.
from context_manager.core.ports_compaction import (  # noqa: E402
    LeaseRecord,
    LeaseStore,
    LeaseStoreError,
    SummarizeError,
    SummarizeRequest,
    Summarizer,
    SummarizerEmpty,
    SummarizerFailed,
    SummarizerUnavailable,
)

__all__ = [
    "Clock", "LeaseRecord", "LeaseStore", "LeaseStoreError", "ManualClock", "ModelBudget",
    "ModelResolver", "ResolverError", "RouterModel", "SummarizeError", "SummarizeRequest",
    "Summarizer", "SummarizerEmpty", "SummarizerFailed", "SummarizerUnavailable", "SystemClock",
]
