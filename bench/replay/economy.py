"""What a provider with prefix caching bills for a replayed session.

Each successful call sends ``token_count`` tokens. The part that repeats the previous successful
call's context from its start (same system prompt, then the same leading messages) is the cached
prefix; a changed system prompt caches nothing. Two billing families, in uncached-token
equivalents (1 = one input token at the full price):

* automatic prefix caching (OpenAI, DeepSeek): the cached prefix at 0.1, the rest at 1;
* explicit caching (Anthropic, a breakpoint at the end of every request): the cached prefix is
  read at 0.1, the rest is written at 1.25.

The summariser's requests and replies are billed at 1 per token on top (they are not cached:
each head is new). Counts are the heuristic's (bytes / 4), as the worker's default estimator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from context_manager.core.counting.estimate import HEURISTIC

CACHED_READ = 0.1
ANTHROPIC_WRITE = 1.25

Sent = tuple[str, Sequence[dict[str, Any]]]


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
class Bill:
    sent: int = 0
    cached: int = 0
    summarizer_calls: int = 0
    summarizer_input: int = 0
    summarizer_output: int = 0

    def add_call(self, token_count: int, cached: int) -> None:
        self.sent += token_count
        self.cached += min(cached, token_count)

    def add_summarizer(self, calls: int, input_tokens: int, output_tokens: int) -> None:
        self.summarizer_calls += calls
        self.summarizer_input += input_tokens
        self.summarizer_output += output_tokens

    def merge(self, other: Bill) -> None:
        self.add_call(other.sent, other.cached)
        self.add_summarizer(other.summarizer_calls, other.summarizer_input, other.summarizer_output)

    @property
    def summarizer_tokens(self) -> int:
        return self.summarizer_input + self.summarizer_output

    @property
    def automatic(self) -> float:
        """Billed with automatic prefix caching, summariser included."""
        return CACHED_READ * self.cached + (self.sent - self.cached) + self.summarizer_tokens

    @property
    def anthropic(self) -> float:
        """Billed with Anthropic's read and write prices, summariser included."""
        return CACHED_READ * self.cached + ANTHROPIC_WRITE * (self.sent - self.cached) + self.summarizer_tokens
