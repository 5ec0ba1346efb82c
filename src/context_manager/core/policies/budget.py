"""The ``budget`` surface: a context budget document, validated and mapped onto worker keys.

The document is the hosted service's ``ContextBudget`` (version 3)::

    {"version": 3, "headroom": 0.1, "history_mode": "summarize",
     "eager_compaction": {"mode": "at_fill", "at": 0.8}, "max_history_tokens": null}

``version`` (3) and ``headroom`` (a fraction in [0, 1)) are required; ``history_mode``
(``summarize``, the default, or ``drop_oldest``), ``eager_compaction`` (``{"mode": "off"}``, the
default, or ``{"mode": "at_fill", "at": f}`` with ``f`` in (0, 1]) and ``max_history_tokens`` (null,
the default, or an integer from 32000 to 2^31 - 1) are optional; no other member is accepted.

A budget is complete: when one applies it decides the reserve, the history mode, eager compaction
and the history ceiling whatever the worker's configuration says (:func:`budget_keys`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from context_manager.core.policies.namespace import invalid
from context_manager.wire.decode import unexpected
from context_manager.wire.ints import U64_MAX

VERSION = 3
HISTORY_MODES = ("summarize", "drop_oldest")
MIN_HISTORY_TOKENS = 32000
I32_MAX = 2**31 - 1
_MEMBERS = ("eager_compaction", "headroom", "history_mode", "max_history_tokens", "version")


@dataclass(frozen=True, slots=True)
class Budget:
    headroom: float
    history_mode: str = "summarize"
    eager_at: float | None = None
    max_history_tokens: int | None = None


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def _object(value: Any, path: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if type(value) is not dict:
        raise invalid(path, f"expected an object, got {unexpected(value)}")
    for key in sorted(value):
        if key not in allowed:
            expected = ", ".join(f"`{k}`" for k in allowed)
            raise invalid(path, f"unknown member `{key}`, expected one of {expected}")
    return value


def check_budget(value: Any, path: str = "document") -> Budget:
    """The budget ``value`` holds; any fault is ``context/invalid_request`` naming its path."""
    members = _object(value, path, _MEMBERS)
    if "version" not in members:
        raise invalid(path, "missing member `version`")
    version = members["version"]
    if type(version) is not int or version != VERSION:
        raise invalid(f"{path}.version", f"expected {VERSION}, got {unexpected(version)}")
    if "headroom" not in members:
        raise invalid(path, "missing member `headroom`")
    headroom = members["headroom"]
    if not _number(headroom) or not 0 <= headroom < 1:
        raise invalid(f"{path}.headroom", f"expected a fraction in [0, 1), got {unexpected(headroom)}")
    mode = members.get("history_mode", "summarize")
    if mode not in HISTORY_MODES or type(mode) is not str:
        raise invalid(f"{path}.history_mode", f"expected \"summarize\" or \"drop_oldest\", got {unexpected(mode)}")
    eager_at = _eager(members.get("eager_compaction", {"mode": "off"}), f"{path}.eager_compaction")
    ceiling = members.get("max_history_tokens")
    if ceiling is not None and (type(ceiling) is not int or not MIN_HISTORY_TOKENS <= ceiling <= I32_MAX):
        raise invalid(f"{path}.max_history_tokens",
                      f"expected null or an integer from {MIN_HISTORY_TOKENS} to {I32_MAX}, got {unexpected(ceiling)}")
    return Budget(float(headroom), mode, eager_at, ceiling)


def _eager(value: Any, path: str) -> float | None:
    members = _object(value, path, ("at", "mode"))
    mode = members.get("mode")
    if mode == "off" and type(mode) is str:
        if "at" in members:
            raise invalid(path, "unknown member `at` for mode \"off\"")
        return None
    if mode != "at_fill" or type(mode) is not str:
        raise invalid(f"{path}.mode", f"expected \"off\" or \"at_fill\", got {unexpected(mode)}")
    if "at" not in members:
        raise invalid(path, "missing member `at`")
    at = members["at"]
    if not _number(at) or not 0 < at <= 1:
        raise invalid(f"{path}.at", f"expected a fraction in (0, 1], got {unexpected(at)}")
    return float(at)


def budget_keys(budget: Budget) -> dict[str, Any]:
    """The worker keys a budget sets: the reserve is the headroom's share of the window, to the
    nearest whole percent and not capped; ``drop_oldest`` compacts with no summary (no
    summariser, no extractive fallback) and drops the oldest messages when nothing else fits."""
    keys: dict[str, Any] = {
        "reserved_pct": round(budget.headroom * 100),
        "reserved_tokens_cap": U64_MAX,
        "eager_compaction_at": budget.eager_at,
        "max_history_tokens": budget.max_history_tokens,
    }
    if budget.history_mode == "drop_oldest":
        keys["overflow_fallback"] = "drop_oldest"
        keys["summarizer_fallback"] = "none"
    return keys
