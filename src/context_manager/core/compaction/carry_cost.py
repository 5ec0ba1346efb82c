"""Whether an early compaction under a history ceiling pays for itself in cache reads.

Under ``max_history_tokens`` the window is not what runs out: a head costs its cache reads on
every call until the compaction that must come anyway. Compacting early saves about
``CACHED_INPUT_PRICE`` x the tokens removed x the calls left before the context reaches the
budget (the headroom over the growth per call), and costs one re-send, uncached, of what stays:
the tail and a summary of at most ``summary_budget`` tokens, plus, when a summariser writes the
summary, what that extra summariser call costs beyond the head it reads (every message is
summarised once however early, but each call reads its prompt and the previous summary and
writes a new one: :func:`summarizer_call_tokens`). The growth per call is read from the request
itself: the tokens of its last rounds (an assistant message and what follows it, up to the next
one), averaged.
"""

from __future__ import annotations

from collections.abc import Sequence

from context_manager.core.budget import summary_budget
from context_manager.core.compaction.prompts import build_system_prompt
from context_manager.ports import Estimator
from context_manager.wire.messages import Message

# A cached input token's price against an uncached one's: the lowest of the major providers'
# (Anthropic's cache reads; OpenAI's newest models), so an early compaction never runs sooner
# than it pays at every one of them (a dearer cache read only makes it pay sooner).
CACHED_INPUT_PRICE = 0.1
# The rounds the growth per call is averaged over.
GROWTH_ROUNDS = 8


def growth_per_round(view: Sequence[Message], sizes: Sequence[int]) -> float | None:
    """The mean tokens of the view's last ``GROWTH_ROUNDS`` rounds; ``None`` with fewer than two."""
    starts = [index for index, message in enumerate(view) if message["role"] == "assistant"]
    if len(starts) < 2:
        return None
    counted = starts[-GROWTH_ROUNDS:]
    grown = sum(sizes[counted[0]:])
    return grown / len(counted) if grown > 0 else None


def summarizer_call_tokens(estimator: Estimator, usable: int, instructions: str | None) -> int:
    """One summariser call's tokens beyond the head: its prompt (template and standing
    instructions), the previous summary it reads and the summary it writes, each at most
    ``summary_budget``; all weighed as uncached input."""
    return estimator.text(build_system_prompt(None, instructions)) + 2 * summary_budget(usable)


def early_compaction_saves(sizes: Sequence[int], head_len: int, headroom: int, usable: int,
                           growth: float, summarizer_tokens: int = 0) -> bool:
    """Do the cache reads saved by removing ``sizes[:head_len]`` now, over the calls left before
    ``headroom`` is used up at ``growth`` tokens a call, exceed re-sending what stays and the
    ``summarizer_tokens`` of the summariser call (0: the summary is extractive)?"""
    removed = sum(sizes[:head_len])
    kept = sum(sizes) - removed + summary_budget(usable)
    return CACHED_INPUT_PRICE * removed * (headroom / growth) >= kept + summarizer_tokens
