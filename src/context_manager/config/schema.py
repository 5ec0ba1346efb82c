"""The JSON schema of the configuration record, sent with ``configuration::register`` (spec 04 §2.4).

The configuration worker validates stored values against it, so the load-bearing parts are the
types, formats, minimums, the defaults and ``additionalProperties: false``. Descriptions are
informational.
"""

from __future__ import annotations

import json
from typing import Any

from context_manager.config.parse import (
    COUNT_CALIBRATIONS,
    ESTIMATORS,
    LEASE_STORES,
    OVERFLOW_FALLBACKS,
    PROFILES,
    SESSION_STORES,
    SUMMARIZER_FALLBACKS,
    SUMMARY_CHECKS,
    SUMMARY_PLACEMENTS,
    defaults_object,
)
from context_manager.core.settings import DEFAULT_CONFIG, PROFILE_KEYS

TITLE = "WorkerConfig"
DESCRIPTION = (
    "Runtime configuration of context-manager: budget reserves, pruning thresholds, the "
    "compaction tail, compaction leases and the summariser timeout. Every key is optional and "
    "hot-reloads."
)

_UINT64 = {"format": "uint64", "minimum": 0.0, "type": "integer"}
_UINT = {"format": "uint", "minimum": 0.0, "type": "integer"}


def profile_summary(profile: str) -> str:
    """What a profile implies, as ``key: value`` pairs in JSON (``summary_check: "append"``)."""
    return ", ".join(f"{key}: {json.dumps(value)}" for key, value in PROFILE_KEYS[profile].items())


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
        "changes or drops them and compaction summarises only what follows them; a summary "
        "written with a pinned anchor carries it, so a caller that sends back only the tail "
        "gets it back first. 0 pins nothing. options.anchor_messages overrides it per call.",
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
    "working_set": (
        {"type": "boolean"},
        "Append a \"## Working set\" section to every summary (the files acted on and their last "
        "action, paths results surfaced, code symbols, errors and whether they cleared, recurring "
        "URLs and commands), carried forward by later summaries; with drop_oldest, the dropped "
        "history leaves a short note of its working set in its place.",
    ),
    "report_prefix": (
        {"type": "boolean"},
        "Report applied.cache_break_index (the first returned message that differs from the "
        "request's) and applied.system_prompt_changed in every context::assemble answer.",
    ),
    "reduce_to": (
        {"exclusiveMinimum": 0, "maximum": 1, "type": "number"},
        "When drop_oldest, compaction or emergency reduction must rewrite earlier history, "
        "reduce to this fraction of the usable budget, in steps that are a function of the "
        "content, so later turns append without touching the prefix; 1 reduces just enough.",
    ),
    "summary_reuse": (
        {"type": "boolean"},
        "Remember each history's last compaction and reuse its summary and boundary on later "
        "calls that extend the summarised head, as if the caller had sent the round trip.",
    ),
    "summary_placement": (
        {"enum": list(SUMMARY_PLACEMENTS), "type": "string"},
        "Where context::assemble puts a summary: \"system_prompt\" under a Conversation summary "
        "section; \"message\" as a leading user message, so the system prompt stays unchanged "
        "across compactions.",
    ),
    "eager_compaction_at": (
        {"exclusiveMinimum": 0, "maximum": 1, "type": ["number", "null"]},
        "Compact once the context exceeds this fraction of the usable budget, even though it "
        "still fits, when compacting then (with a smaller tail) removes at least twice the "
        "remaining headroom more than a full-window compaction would; null compacts only when "
        "over budget.",
    ),
    "retention": (
        {"anyOf": [{"$ref": "#/definitions/RetentionPolicy"}, {"type": "null"}]},
        "The retention policy of context::assemble: per-function truncation of arguments and "
        "results, error results, older prompts and assistant prose, reasoning and media by age. "
        "null (the default) applies none.",
    ),
    "count_calibration": (
        {"enum": list(COUNT_CALIBRATIONS), "type": "string"},
        "\"usage\": counts are anchored on the provider's own prompt count, read from the latest "
        "assistant message's usage, and what was added since is scaled by the observed ratio; "
        "\"off\" keeps the estimator's counts.",
    ),
    "lease_store": (
        {"enum": list(LEASE_STORES), "type": "string"},
        "Where compaction leases are kept: \"file\" under lease_dir (processes on one host); "
        "\"state\" in the engine's state store, one lock for every process and host on the "
        "engine.",
    ),
    "session_store": (
        {"enum": list(SESSION_STORES), "type": "string"},
        "Where summary_reuse remembers compactions: \"memory\" in this process; \"state\" in "
        "the engine's state store, shared by every process and host on the engine.",
    ),
    "session_ttl_secs": (
        {"format": "uint64", "minimum": 1.0, "type": "integer"},
        "How long a compaction remembered in the state store is reused, in seconds "
        "(session_store: state).",
    ),
    "profile": (
        {"enum": list(PROFILES), "type": "string"},
        "A named set of defaults for the keys a configuration leaves out; an explicit value "
        "always wins. \"faithful\" implies nothing (the original's behaviour). \"recommended\" "
        "implies " + profile_summary("recommended") + ".",
    ),
}

_COUNT = {"minimum": 0.0, "type": "integer"}


def _truncation_schema() -> dict[str, Any]:
    keep = {"enum": ["head", "tail", "both"], "type": "string", "default": "both",
            "description": "Which ends of a cut payload stay."}
    return {
        "description": "keep: never cut; always: cut to `to` tokens; over: above `over` tokens, "
                       "cut to `to` (to <= over). Tokens of the configured estimator.",
        "oneOf": [
            {"additionalProperties": False, "required": ["mode"], "type": "object",
             "properties": {"mode": {"const": "keep"}}},
            {"additionalProperties": False, "required": ["mode", "to"], "type": "object",
             "properties": {"mode": {"const": "always"}, "to": _COUNT, "keep": keep}},
            {"additionalProperties": False, "required": ["mode", "over", "to"], "type": "object",
             "properties": {"mode": {"const": "over"}, "over": _COUNT, "to": _COUNT, "keep": keep}},
        ],
    }


def _object(properties: dict[str, Any], required: tuple[str, ...] = (), description: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"additionalProperties": False, "properties": properties, "type": "object"}
    if required:
        out["required"] = list(required)
    if description:
        out["description"] = description
    return out


_TRUNCATION_REF = {"$ref": "#/definitions/Truncation"}


def retention_definitions() -> dict[str, Any]:
    """The schema definitions of the ``retention`` key (the parser also checks to <= over and globs)."""
    treatment = {"arguments": _TRUNCATION_REF, "result": _TRUNCATION_REF}
    return {
        "Truncation": _truncation_schema(),
        "RetentionPolicy": _object({
            "tools": _object({
                "default": _object(treatment, description="The treatment of a function no rule matches."),
                "rules": {"type": "array", "description": "The first rule whose glob matches the function id wins.",
                          "items": _object({"function": {"type": "string", "minLength": 1,
                                                         "description": "A glob over function ids, e.g. fs::*."},
                                            **treatment}, ("function",))},
                "errors": {"anyOf": [_TRUNCATION_REF, {"type": "null"}],
                           "description": "Replaces the result rule for a result with is_error: true."},
                "mark_truncations": {"type": "boolean", "default": True,
                                     "description": "Put a marker where a payload was cut."},
            }, description="Per-function truncation of call arguments and results."),
            "verbatim_turns": {**_COUNT, "default": 1,
                               "description": "The most recent N user turns (assistant rounds in a window "
                                              "without user messages) are never truncated."},
            "text": _object({"prompt": _TRUNCATION_REF, "message": _TRUNCATION_REF},
                            description="User text (prompt) and assistant text (message) older than the "
                                        "verbatim window."),
            "reasoning": _object({"keep_turns": _COUNT}, ("keep_turns",),
                                 "Thinking blocks older than keep_turns user turns are removed."),
            "media": _object({
                "default_keep_turns": _COUNT,
                "rules": {"type": "array", "items": _object(
                    {"mime": {"type": "string", "description": "A MIME pattern, e.g. image/*."},
                     "keep_turns": _COUNT}, ("mime", "keep_turns"))},
            }, description="Images older than keep_turns user turns become placeholders."),
        }),
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
        "definitions": retention_definitions(),
        "description": DESCRIPTION,
        "example": defaults,
        "properties": properties,
        "title": TITLE,
        "type": "object",
    }


assert set(_PROPERTIES) == set(DEFAULT_CONFIG.key_names()), "schema and record disagree on the keys"
