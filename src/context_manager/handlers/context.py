"""What a handler needs besides its payload: the per-call snapshot of the world."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from context_manager.core.counting.calibration import SentLedger
from context_manager.core.memo import MessageMemo
from context_manager.core.policies.room import PolicyRoom
from context_manager.core.reuse import CallReuse, decoding_policy
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.ports import (
    Clock,
    JobRunner,
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
    # Decoded messages reused across calls; None for callers that keep the returned dicts. The
    # process's one memo and ledger are passed in by whoever composes the process (the worker's
    # and each serving process's ``Services``, the library's ``api``): a context built without
    # them shares nothing with any other.
    memo: MessageMemo | None = None
    # The payload was parsed from JSON text (engine frame, command line), so it holds only what
    # JSON can carry; a Python caller's values may hold more (tuples, NaN, enums).
    payload_from_json: bool = False
    # Remembered compactions for `summary_reuse`; None remembers nothing.
    session_store: SessionStore | None = None
    # What this process returned for the inputs it reduced (``count_calibration: usage``).
    sent_ledger: SentLedger | None = None
    # The provider's own counter (``estimator: router``); None counts locally.
    token_counter: TokenCounter | None = None
    # Runs the summaries computed ahead of time (``compact_ahead_at``); None starts none.
    ahead_runner: JobRunner | None = None
    # Published policies (``context::policy::*``, ``options.namespace``); None: none can be
    # published and every call is served with ``config``.
    policies: PolicyRoom | None = None


def call_reuse(ctx: HandlerContext) -> CallReuse:
    """The reuse of a call made with ``ctx``, by the decoding policy (``core.reuse``)."""
    return decoding_policy(ctx.memo, ctx.payload_from_json, heuristic_counts=ctx.config.estimator == "heuristic")
