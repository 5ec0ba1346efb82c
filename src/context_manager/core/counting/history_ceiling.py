"""The history ceiling (``max_history_tokens``): a budget below the model's window.

With a ceiling, every reduction of ``context::assemble`` aims for ``min(usable, ceiling)`` and
the answer's ``usable`` is that budget, so a caller that checks ``token_count <= usable`` keeps
working; the breakdown then also reports the window's usable as ``window_usable``. The
summariser's requests are not part of the history: they keep the window's budget. In
``context::count-tokens``, which computes no budget, a usage anchor whose prompt it has no
record of and estimates above the ceiling is taken as reduced elsewhere, as one over the model's
window already is.

Without a ceiling (``null``, the default) nothing here changes an answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from context_manager.wire import decode as t
from context_manager.wire.errors import INVALID_REQUEST, DecodeError, HandlerError

OPTION = "max_history_tokens"


def ceiling_for(option: int | None, configured: int | None) -> int | None:
    """The call's ceiling: ``options.max_history_tokens`` when given, else the configuration's."""
    return option if option is not None else configured


def history_budget(usable: int, ceiling: int | None) -> int:
    """``min(usable, ceiling)``; ``usable`` itself without a ceiling."""
    return usable if ceiling is None else min(usable, ceiling)


def window_report(breakdown: dict[str, Any], ceiling: int | None, window_usable: int) -> dict[str, Any]:
    """``breakdown`` with ``window_usable`` added when a ceiling is set; unchanged otherwise."""
    if ceiling is not None:
        breakdown["window_usable"] = window_usable
    return breakdown


def unrecorded_limit(window: int | None, ceiling: int | None) -> int | None:
    """The count above which a prompt this process has no record of was reduced somewhere."""
    if ceiling is None:
        return window
    return ceiling if window is None else min(window, ceiling)


def decode_option(value: Any) -> int | None:
    """``options.max_history_tokens``: null (the configuration decides) or an integer from 1 to
    2^64-1; anything else is ``context/invalid_request``."""
    if value is None:
        return None
    try:
        ceiling = t.u64(value)
    except DecodeError as exc:
        raise _invalid(exc.detail) from None
    if ceiling == 0:
        raise _invalid("invalid value: integer `0`, expected a positive integer")
    return ceiling


def _invalid(detail: str) -> HandlerError:
    return HandlerError(INVALID_REQUEST, f"options.{OPTION} must be null or a positive integer ({detail})")


def summarizer_window_budget(window_usable: int, calibration: Any, overhead: int, guarded: bool) -> int:
    """The summariser's input budget under a ceiling: the window's usable, in estimator units as
    every pass counts (a usage anchor never gives the summariser less than the uncalibrated one)."""
    if calibration is None:
        return window_usable
    budget = calibration.unscale(window_usable - overhead) + overhead
    return max(budget, window_usable) if guarded else budget


@dataclass(frozen=True, slots=True)
class CountOptions:
    """``context::count-tokens``'s options: only the ceiling."""

    max_history_tokens: int | None = None


NO_OPTIONS = CountOptions()

_COUNT_OPTIONS = {OPTION: t.FieldSpec(decode_option)}


def decode_options(value: Any) -> CountOptions:
    """The request's ``options`` object (unknown members ignored, as in every options object)."""
    fields = t.decode_struct(value, "CountTokensOptions", _COUNT_OPTIONS)
    return CountOptions(**fields)
