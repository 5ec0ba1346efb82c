"""What one strategy sent over one session (or the sum over sessions): the league's counters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from bench.replay.economy import ANTHROPIC_WRITE, CACHED_READ, cached_prefix_tokens
from context_manager.core.counting.estimate import HEURISTIC

Message = dict[str, Any]
Sent = tuple[str, Sequence[Message]]


def count(system_prompt: str, messages: Sequence[Message]) -> int:
    """A context's size as the worker's default estimator counts it (bytes / 4)."""
    return HEURISTIC.text(system_prompt) + sum(HEURISTIC.message(m) for m in messages)


def extends(before: Sent, after: Sent) -> bool:
    """Does ``after`` start with exactly what ``before`` sent (same system prompt, same messages)?"""
    return after[0] == before[0] and list(after[1][:len(before[1])]) == list(before[1])


@dataclass
class Ledger:
    calls: int = 0
    overflows: int = 0
    sent: int = 0  # tokens sent to the model
    cached: int = 0  # of which repeat the previous sent context
    rewrites: int = 0
    summarizer_calls: int = 0
    summarizer_input: int = 0
    summarizer_cached: int = 0
    summarizer_output: int = 0
    defended: int = 0  # calls a peer sent through its last line of defence
    recall_found: int = 0
    recall_total: int = 0

    def add(self, other: Ledger) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def send(self, previous: Sent | None, sent: Sent, tokens: int) -> None:
        """Count one sent call of ``tokens`` against the previous sent context."""
        self.sent += tokens
        self.cached += min(cached_prefix_tokens(previous, sent), tokens)
        self.rewrites += previous is not None and not extends(previous, sent)

    def summarise(self, input_tokens: int, output_tokens: int, cached: int = 0) -> None:
        self.summarizer_calls += 1
        self.summarizer_input += input_tokens
        self.summarizer_cached += min(cached, input_tokens)
        self.summarizer_output += output_tokens

    @property
    def input(self) -> int:
        return self.sent + self.summarizer_input

    @property
    def input_cached(self) -> int:
        return self.cached + self.summarizer_cached

    @property
    def hit_rate(self) -> float:
        return self.input_cached / self.input if self.input else 0.0

    @property
    def billed_automatic(self) -> float:
        return CACHED_READ * self.input_cached + (self.input - self.input_cached) + self.summarizer_output

    @property
    def billed_anthropic(self) -> float:
        return (CACHED_READ * self.input_cached + ANTHROPIC_WRITE * (self.input - self.input_cached)
                + self.summarizer_output)

    @property
    def recall(self) -> float | None:
        return self.recall_found / self.recall_total if self.recall_total else None
