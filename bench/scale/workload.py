"""What the scaling benchmark sends: the plan of a run, its payloads and their in-process answers.

Small calls are W1 (a 300 KB history that passes through); large calls are W3 (a multi-MB
history that prunes, caps and compacts). Each payload comes in a few variants whose message
timestamps are shifted, so the worker sees more than one history of each kind. Every large
caller owns one variant: histories are leased by content, so two callers sharing one would race
for its lease and a busy lease changes the answer by design.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any

from bench.kit import workloads
from bench.kit.summariser import instant_summarizer
from bench.kit.workloads import shifted

FUNCTION_ID = "context::assemble"


@dataclass(frozen=True)
class Plan:
    small_callers: int
    large_callers: int
    small_variants: int
    warm_seconds: float
    small_seconds: float
    mixed_seconds: float
    quick: bool
    seed: int = workloads.DEFAULT_SEED

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


FULL = Plan(small_callers=16, large_callers=2, small_variants=8, warm_seconds=2.0, small_seconds=10.0,
            mixed_seconds=15.0, quick=False)
QUICK = Plan(small_callers=16, large_callers=2, small_variants=4, warm_seconds=0.5, small_seconds=1.5,
             mixed_seconds=2.0, quick=True)


@dataclass(frozen=True)
class Payload:
    kind: str  # "small" or "large"
    variant: int
    data: bytes  # the request, encoded once


def payloads(plan: Plan) -> dict[str, list[Payload]]:
    """The small and large payload variants of ``plan``, each encoded once."""
    from context_manager.wire.codec import dumps_wire

    small = workloads.w1(plan.seed, plan.quick).payload
    large = workloads.w3(plan.seed, plan.quick).payload
    return {
        "small": [Payload("small", i, dumps_wire(shifted(small, 11 * i))) for i in range(plan.small_variants)],
        "large": [Payload("large", i, dumps_wire(shifted(large, 13 * i + 1))) for i in range(plan.large_callers)],
    }


def in_process_answer(payload: Payload) -> bytes:
    """The answer of ``context_manager.call`` on the same request, as the worker writes it.

    The large history needs a summary; the instant summariser answers with the fake router's
    text, so the in-process and the engine answers agree.
    """
    from context_manager import call
    from context_manager.wire.codec import dumps_wire, loads

    summarizer = instant_summarizer if payload.kind == "large" else None
    return dumps_wire(call(FUNCTION_ID, loads(payload.data), summarizer=summarizer))


def digest(answer: bytes) -> str:
    return hashlib.blake2b(answer, digest_size=16).hexdigest()
