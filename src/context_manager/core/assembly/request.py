"""What ``context::assemble`` is asked (the decoded request) and what it needs from the call
context (``AssembleDeps``, typed with the ports' protocols)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from context_manager.core.counting.calibration import Ledger
from context_manager.core.settings import WorkerConfig
from context_manager.ports import (
    Clock,
    JobRunner,
    LeaseStore,
    ModelResolver,
    SessionStore,
    Summarizer,
    TokenCounter,
    TokenizerSource,
)
from context_manager.wire.decode import ModelInput
from context_manager.wire.messages import Message


@dataclass(frozen=True, slots=True)
class AssembleOptions:
    reserved_tokens: int | None = None
    tail_turns: int | None = None
    allow_compaction: bool | None = None
    allow_prune: bool | None = None
    protected_functions: tuple[str, ...] | None = None
    max_result_tokens: int | None = None
    request_overhead_tokens: int | None = None
    thinking_level: str | None = None
    lease_key: str | None = None
    previous_summary: str | None = None
    anchor_messages: int | None = None
    explain: bool = False
    # Answer as with ``allow_compaction: false`` and change nothing else (``core.preview``).
    preview_only: bool = False
    # A ceiling below the window (``core.counting.history_ceiling``); None: the configuration's.
    max_history_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class AssembleRequest:
    messages: list[Message]
    model: ModelInput
    system_prompt: str | None = None
    tools: list[dict[str, Any]] | None = None
    parts: dict[str, str] | None = None
    options: AssembleOptions = field(default_factory=AssembleOptions)


class AssembleDeps(Protocol):
    """What assemble needs from the call context (``handlers.context.HandlerContext`` fits)."""

    config: WorkerConfig
    resolver: ModelResolver | None
    summarizer: Summarizer | None
    lease_store: LeaseStore | None
    clock: Clock
    log: logging.Logger
    tokenizers: TokenizerSource | None
    session_store: SessionStore | None
    # The provider's own counter (``estimator: router``); None counts locally.
    token_counter: TokenCounter | None
    # Runs the summaries computed ahead of time (``compact_ahead_at``, ``core.compaction.ahead``);
    # None starts none (a preview withholds it).
    ahead_runner: JobRunner | None

    @property
    def sent_ledger(self) -> Ledger | None:
        """What this process returned for the inputs it reduced (``count_calibration: usage``)."""
        ...
