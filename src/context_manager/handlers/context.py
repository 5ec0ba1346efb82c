"""What a handler needs besides its payload: the per-call snapshot of the world."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from context_manager.core.counting.calibration import SHARED_LEDGER, SentLedger
from context_manager.core.memo import SHARED_MEMO, MessageMemo
from context_manager.core.reuse import CallReuse, decoding_policy
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.ports import (
    Clock,
    LeaseStore,
    ModelResolver,
    SessionStore,
    Summarizer,
    SystemClock,
    TokenCounter,
    TokenizerSource,
)


@dataclass(slots=True)
class HandlerContext:
    config: WorkerConfig = DEFAULT_CONFIG
    resolver: ModelResolver | None = None
    summarizer: Summarizer | None = None
    lease_store: LeaseStore | None = None
    clock: Clock = field(default_factory=SystemClock)
    # Exact tokenizers for `estimator: auto`; None counts every model with the heuristic.
    tokenizers: TokenizerSource | None = None
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("context_manager"))
    # Effects of the internal functions (engine wiring); None where not applicable.
    model_cache: Any = None
    on_config_change: Any = None
    # Decoded messages reused across calls; None for callers that keep the returned dicts.
    memo: MessageMemo | None = SHARED_MEMO
    # The payload was parsed from JSON text (engine frame, command line), so it holds only what
    # JSON can carry; a Python caller's values may hold more (tuples, NaN, enums).
    payload_from_json: bool = False
    # Remembered compactions for `summary_reuse`; None remembers nothing.
    session_store: SessionStore | None = None
    # What this process returned for the inputs it reduced (``count_calibration: usage``).
    sent_ledger: SentLedger | None = SHARED_LEDGER
    # The provider's own counter (``estimator: router``); None counts locally.
    token_counter: TokenCounter | None = None


def call_reuse(ctx: HandlerContext) -> CallReuse:
    """The reuse of a call made with ``ctx``, by the decoding policy (``core.reuse``)."""
    return decoding_policy(ctx.memo, ctx.payload_from_json, heuristic_counts=ctx.config.estimator == "heuristic")
