"""The JSON schema of the configuration record, sent with ``configuration::register`` (spec 04 §2.4).

The configuration worker validates stored values against it, so the load-bearing parts are the
types, formats, minimums, the defaults and ``additionalProperties: false``. Descriptions are
informational.
"""

from __future__ import annotations

from typing import Any

from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.config.parse import (
    COUNT_CALIBRATIONS,
    ESTIMATORS,
    OVERFLOW_FALLBACKS,
    SUMMARIZER_FALLBACKS,
    SUMMARY_CHECKS,
    defaults_object,
)

TITLE = "WorkerConfig"
DESCRIPTION = (
    "Runtime configuration of context-manager: budget reserves, pruning thresholds, the "
    "compaction tail, compaction leases and the summariser timeout. Every key is optional and "
    "hot-reloads."
)

_UINT64 = {"format": "uint64", "minimum": 0.0, "type": "integer"}
_UINT = {"format": "uint", "minimum": 0.0, "type": "integer"}

# key -> (type fragment, description)
_PROPERTIES: dict[str, tuple[dict[str, Any], str]] = {
    "allow_fallback_limits": (
        {"type": "boolean"},
        "Use conservative 8192/1024 limits when a model cannot be resolved; when false the "
        "call fails with context/model_unresolved.",
    ),
    "decay_user_turns": (
        _UINT,
        "A function output becomes prunable after this many later real user turns; 0 turns "
        "age-based pruning off.",
    ),
    "lease_dir": (
        {"type": "string"},
        "Directory of the compaction lease files; relative paths are taken from III_COMPOSE_DIR "
        "(else the working directory) and a leading ~/ means the home directory.",
    ),
    "lease_ttl_secs": (_UINT64, "How long a compaction lease is honoured, in seconds."),
    "max_output_chars": (
        _UINT,
        "Size in bytes above which a function output counts as verbose for pruning; also the "
        "truncation threshold of result text in the summariser input.",
    ),
    "max_result_tokens": (
        _UINT64,
        "Per-result token ceiling of context::assemble's cap pass; 0 turns the cap off.",
    ),
    "min_free_tokens": (
        _UINT64,
        "Normal pruning changes nothing unless it frees at least this many tokens.",
    ),
    "protect_recent_tokens": (
        _UINT64,
        "Tokens of the newest function outputs that normal pruning leaves alone; 0 turns the "
        "window off.",
    ),
    "protected_user_turns": (
        _UINT,
        "Outputs of this many most recent real user turns are never pruned; 0 turns the "
        "exemption off.",
    ),
    "reserved_pct": (
        _UINT64,
        "Percentage of the context window held back by default for the model's output.",
    ),
    "reserved_tokens_cap": (
        _UINT64,
        "Upper bound of the default reserve once the percentage is applied, in tokens.",
    ),
    "summarizer_timeout_ms": (
        _UINT64,
        "Longest a single summariser request through router::chat may take, in milliseconds.",
    ),
    "tail_turns": (_UINT, "Recent turns kept verbatim by compaction."),
    "overflow_fallback": (
        {"enum": list(OVERFLOW_FALLBACKS), "type": "string"},
        "What context::assemble does when nothing else fits: \"error\" fails with "
        "context/overflow; \"drop_oldest\" drops the oldest messages and reports them.",
    ),
    "estimator": (
        {"enum": list(ESTIMATORS), "type": "string"},
        "Token estimator: \"heuristic\" counts every model with the byte heuristic; \"auto\" counts OpenAI "
        "model families with their tokenizer and prices images at their provider; \"router\" asks "
        "llm-router's router::count_tokens for the provider's exact count and falls back to the "
        "\"auto\" count when it cannot answer.",
    ),
    "user_less_compaction": (
        {"type": "boolean"},
        "Let a history without any user message compact by assistant rounds; false keeps such "
        "a history uncompactable.",
    ),
    "anchor_messages": (
        _UINT,
        "The first N model-facing messages of every context::assemble call are pinned: no pass "
        "changes or drops them and compaction summarises only what follows them; 0 pins nothing. "
        "options.anchor_messages overrides it per call.",
    ),
    "summary_check": (
        {"enum": list(SUMMARY_CHECKS), "type": "string"},
        "\"append\": before a summary is accepted, user requests, file paths, URLs and the open "
        "error of the summarised head that it lacks are appended under a fixed heading; \"off\" "
        "accepts summaries as written.",
    ),
    "summarizer_fallback": (
        {"enum": list(SUMMARIZER_FALLBACKS), "type": "string"},
        "\"extractive\": when compaction has no summariser or the summariser fails, build the "
        "summary from the head deterministically; \"none\" skips compaction instead.",
    ),
    "count_calibration": (
        {"enum": list(COUNT_CALIBRATIONS), "type": "string"},
        "\"usage\": counts are anchored on the provider's own prompt count, read from the latest "
        "assistant message's usage, and what was added since is scaled by the observed ratio; "
        "\"off\" keeps the estimator's counts.",
    ),
}


def config_schema() -> dict[str, Any]:
    """The schema object; keys are emitted sorted, as the original does."""
    defaults = defaults_object()
    properties = {}
    for key in sorted(_PROPERTIES):
        fragment, description = _PROPERTIES[key]
        properties[key] = dict(sorted({**fragment, "default": defaults[key], "description": description}.items()))
    return {
        "additionalProperties": False,
        "description": DESCRIPTION,
        "example": defaults,
        "properties": properties,
        "title": TITLE,
        "type": "object",
    }


assert set(_PROPERTIES) == set(DEFAULT_CONFIG.key_names()), "schema and record disagree on the keys"
