"""Budget math (spec 01 §7.3): the default reserve, the usable input budget, the tail budget.

Every quantity is an unsigned 64-bit integer in the reference, and every subtraction and
multiplication saturates: a budget never wraps and never goes below zero.
"""

from __future__ import annotations

from math import floor
from typing import TYPE_CHECKING

from context_manager.wire.ints import saturating_mul, saturating_sub

if TYPE_CHECKING:
    from context_manager.core.resolution import ResolvedModel
    from context_manager.core.settings import WorkerConfig

# The adaptive verbatim-tail budget is a quarter of the usable budget, kept in this band.
PRESERVE_RECENT_MIN = 2000
PRESERVE_RECENT_MAX = 8000
# An early compaction's tail budget never goes below this: with no budget at all a history that
# is one long turn would have no safe cut whose suffix fits, and would not be compacted.
EAGER_TAIL_MIN = 1000


def default_reserved(context_window: int, config: WorkerConfig) -> int:
    """``min(reserved_tokens_cap, context_window * reserved_pct // 100)``; the percentage is not clamped."""
    percent_share = saturating_mul(context_window, config.reserved_pct) // 100
    return min(config.reserved_tokens_cap, percent_share)


def thinking_budget(resolved: ResolvedModel, thinking_level: str | None) -> int:
    """The model's declared budget for the level, else 0 (inline and fallback models declare none)."""
    if thinking_level is None or resolved.thinking_budgets is None:
        return 0
    return resolved.thinking_budgets.get(thinking_level, 0)


def input_base(resolved: ResolvedModel) -> int:
    """``input_limit`` whenever present (even 0, even above the window), else window minus output."""
    if resolved.input_limit is not None:
        return resolved.input_limit
    return saturating_sub(resolved.context_window, resolved.max_output_tokens)


def usable_budget(resolved: ResolvedModel, reserved: int, thinking_level: str | None) -> int:
    """The usable input budget of one call; 0 (not an error) when the reserve eats the base."""
    after_reserve = saturating_sub(input_base(resolved), reserved)
    return saturating_sub(after_reserve, thinking_budget(resolved, thinking_level))


def preserve_recent(usable: int, override: int | None) -> int:
    """Tail budget for compaction: the caller's override verbatim, else ``clamp(usable // 4, 2000, 8000)``."""
    if override is not None:
        return override
    return min(max(usable // 4, PRESERVE_RECENT_MIN), PRESERVE_RECENT_MAX)


def eager_tail_budget(usable: int, eager_at: float) -> int:
    """Tail budget of a compaction run early (``eager_compaction_at``) while the context still fits.

    The full-window tail less the headroom the early trigger leaves (``usable - floor(eager_at *
    usable)``): the context then grows as far before the next early compaction as
    it would after a full-window one before the next full-window compaction. It never goes
    below ``EAGER_TAIL_MIN``.
    """
    headroom = saturating_sub(usable, floor(eager_at * usable))
    return max(saturating_sub(preserve_recent(usable, None), headroom), EAGER_TAIL_MIN)


def summary_budget(usable: int) -> int:
    """Tokens a summary built or extended here may take: half the default tail budget (1000..4000)."""
    return preserve_recent(usable, None) // 2
