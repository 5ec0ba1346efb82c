"""``summarizer_model``: compaction's summariser calls on a model of their own, and their cost.

With the key set, every summariser request of a compaction (inline in ``context::assemble`` and
in ``context::compact``) names that model, and the head is chunked by that model's own usable
budget, resolved as the session model's is (``core.resolution``: the router's limits, else the
fallback limits when they are allowed) with the default reserve and no thinking budget. The
summary itself is still sized from the session's budget: it goes into the session's context.

Every compaction that called the summariser then reports what the calls cost,
``{model, calls, input_tokens, output_tokens}``: per call, the router's ``usage`` when the reply
carries one (input = ``input + cache_read + cache_write``), else the request's estimate and the
reply's, counted with the call's estimator. Without the key (``null``) the calls go to the
session's model, as before, and nothing is reported.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from context_manager.core.budget import default_reserved, usable_budget
from context_manager.core.resolution import resolve_model
from context_manager.core.settings import ModelChoice, WorkerConfig
from context_manager.ports import ModelResolver
from context_manager.wire.decode import ModelInput


@dataclass(slots=True)
class SummarizerTally:
    """The summariser calls of one compaction: how many, and their tokens."""

    model: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def record(self, usage: tuple[int, int] | None, estimated_input: int, estimated_output: int) -> None:
        self.calls += 1
        input_tokens, output_tokens = usage if usage is not None else (estimated_input, estimated_output)
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens

    def report(self) -> dict[str, Any]:
        return {"model": self.model, "calls": self.calls, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens}


@dataclass(frozen=True, slots=True)
class SummarizerTarget:
    """Where one compaction's summariser calls go: ``model``, each request within ``chunk_budget``
    (``None``: the compaction's own budget); ``tally`` counts them when they are reported."""

    model: ModelInput
    chunk_budget: int | None = None
    tally: SummarizerTally | None = None


async def summarizer_target(session_model: ModelInput, config: WorkerConfig, resolver: ModelResolver | None,
                            log: logging.Logger) -> SummarizerTarget | None:
    """``None`` without ``summarizer_model``; else the model, its budget and a fresh tally. A
    model that cannot be resolved (and no fallback limits) is ``context/model_unresolved``, as
    the session model would be."""
    choice = config.summarizer_model
    if choice is None:
        return None
    model = model_input(choice)
    resolved = await resolve_model(model, resolver, config, log)
    budget = usable_budget(resolved, default_reserved(resolved.context_window, config), None)
    return SummarizerTarget(model, budget, SummarizerTally(choice.id))


def model_input(choice: ModelChoice) -> ModelInput:
    return ModelInput(choice.id, choice.provider, None)


def cost_report(target: SummarizerTarget | None) -> dict[str, Any] | None:
    """``applied.summarizer`` of a compaction: None unless ``summarizer_model`` is set and the
    summariser answered at least once."""
    if target is None or target.tally is None or target.tally.calls == 0:
        return None
    return target.tally.report()
