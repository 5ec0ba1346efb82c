"""The JSON schema of the configuration record, sent with ``configuration::register`` (spec 04 §2.4).

The configuration worker validates stored values against it, so the load-bearing parts are the
types, formats, minimums, the defaults and ``additionalProperties: false``. Descriptions are
informational.
"""

from __future__ import annotations

import copy
from typing import Any

from context_manager.config.parse import WORKER_CONFIG, ConfigCodec

TITLE = "WorkerConfig"
DESCRIPTION = (
    "Runtime configuration of context-manager: budget reserves, pruning thresholds, the "
    "compaction tail, compaction leases and the summariser timeout. Every key is optional and "
    "hot-reloads."
)


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


def config_schema(codec: ConfigCodec[Any] = WORKER_CONFIG) -> dict[str, Any]:
    """The schema object; keys are emitted sorted, as the original does.

    Each property is its key's declared type fragment, default and description (core/settings.py).
    """
    defaults = codec.defaults_object()
    table = codec.table
    properties = {}
    for name in sorted(table.names):
        fragment = copy.deepcopy(dict(table.by_name[name].type.schema))
        properties[name] = dict(sorted({**fragment, "default": defaults[name],
                                        "description": table.description(name)}.items()))
    return {
        "additionalProperties": False,
        "definitions": retention_definitions(),
        "description": DESCRIPTION,
        "example": defaults,
        "properties": properties,
        "title": TITLE,
        "type": "object",
    }
