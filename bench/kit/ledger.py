"""What one strategy sent over one session (or the sum over sessions), and what it is billed.

The ledger is the one cost model of every suite that prices what was sent (``bench.replay``,
``bench.recall``, ``bench.league``). Definitions:

* a **call** is one model step; an **overflow** is a call that could not be sent;
* **sent** = tokens of the contexts sent (the worker's ``token_count``, or :func:`count` of a
  peer's context); counts are the worker's default estimator, bytes / 4;
* the **cached** part of a sent context is what repeats the previous sent context from its start
  (same system prompt, then the same leading messages; a changed system prompt caches nothing);
  a **prefix rewrite** is a sent call that does not extend the previous one;
* the **summariser input** is the tokens of its requests, of which **summariser cached** is the
  part a summary request shares with the previous sent context: a peer's that continues the
  conversation, the worker's in conversation form (``summarizer_request: conversation``,
  ``bench.kit.summariser.RecordingSummarizer``); a rendered request shares nothing. The
  **summariser output** is the tokens of its replies;
* **input** = sent + summariser input; **cached input** = cached + summariser cached.

The billing formula, in uncached-token equivalents (1 = one input token at the full price)::

    billed (automatic caching: OpenAI, DeepSeek) = 0.1 × cached input + 1 × (input − cached input) + output
    billed (Anthropic: a breakpoint at the end of every request)
                                             = 0.1 × cached input + 1.25 × (input − cached input) + output

where output = the summariser's replies (the model's own replies are the same for every strategy
and are left out). Every request, the summariser's included, is priced the same way: what it
repeats is read from the cache, the rest is written (Anthropic) or sent (automatic caching).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from context_manager.core.counting.estimate import HEURISTIC

CACHED_READ = 0.1
ANTHROPIC_WRITE = 1.25

Message = dict[str, Any]
Sent = tuple[str, Sequence[Message]]


def count(system_prompt: str, messages: Sequence[Message]) -> int:
    """A context's size as the worker's default estimator counts it (bytes / 4)."""
    return HEURISTIC.text(system_prompt) + sum(HEURISTIC.message(m) for m in messages)


def extends(before: Sent, after: Sent) -> bool:
    """Does ``after`` start with exactly what ``before`` sent (same system prompt, same messages)?"""
    return after[0] == before[0] and list(after[1][:len(before[1])]) == list(before[1])


def cached_prefix_tokens(before: Sent | None, after: Sent) -> int:
    """Tokens of ``after`` that repeat ``before`` from the start (0 without a previous call)."""
    if before is None or before[0] != after[0]:
        return 0
    tokens = HEURISTIC.text(after[0])
    for old, new in zip(before[1], after[1]):
        if old != new:
            break
        tokens += HEURISTIC.message(new)
    return tokens


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
        """Count one summariser request of ``input_tokens`` (``cached`` of them repeated)."""
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
    def summarizer_tokens(self) -> int:
        return self.summarizer_input + self.summarizer_output

    @property
    def hit_rate(self) -> float:
        return self.input_cached / self.input if self.input else 0.0

    @property
    def billed_automatic(self) -> float:
        return CACHED_READ * self.input_cached + (self.input - self.input_cached) + self.summarizer_output

    @property
    def summarizer_billed_automatic(self) -> float:
        """The summariser's part of :attr:`billed_automatic`."""
        cached = self.summarizer_cached
        return CACHED_READ * cached + (self.summarizer_input - cached) + self.summarizer_output

    @property
    def billed_anthropic(self) -> float:
        return (CACHED_READ * self.input_cached + ANTHROPIC_WRITE * (self.input - self.input_cached)
                + self.summarizer_output)

    @property
    def recall(self) -> float | None:
        return self.recall_found / self.recall_total if self.recall_total else None
