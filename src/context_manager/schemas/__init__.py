"""The seven registered functions: ids, descriptions, metadata and wire schemas (spec 04 §1.6, §5).

The schemas are data, taken from the published 1.1.6 API reference, so that what is registered
cannot drift from the wire contract. The only changes are documented optional properties (see
``DOCUMENTED_ADDITIONS``).
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from importlib import resources
from typing import Any

# Registration order (spec 04 §1.5, §1.6).
FUNCTION_IDS = (
    "context::assemble",
    "context::compact",
    "context::prune",
    "context::count-tokens",
    "context::on-models-changed",
    "context-manager::ui-content",
    "context::on-config-change",
)

PUBLIC_FUNCTION_IDS = FUNCTION_IDS[:4]

# The policy functions (docs/policies.md), registered after those: not part of the 1.1.6 surface,
# so their definitions are kept apart (``policy_functions.json``).
POLICY_FUNCTION_IDS = (
    "context::policy::publish",
    "context::policy::list",
    "context::policy::activate",
    "context::policy::withdraw",
    "context::policy::resolve",
    "context::policy::scopes",
)

# Optional request and response members beyond the 1.1.6 schemas, as (function id, JSON pointer).
DOCUMENTED_ADDITIONS = (
    ("context::assemble", "/response_schema/definitions/Applied/properties/dropped_messages"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/dropped_ranges"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/anchor_tokens"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/retained_items"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/summary_kind"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/warnings"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/working_set_note_tokens"),
    ("context::assemble", "/response_schema/definitions/RetentionWarning"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/cache_break_index"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/system_prompt_changed"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/summary_reused"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/reused_from_index"),
    ("context::assemble", "/request_schema/definitions/AssembleOptions/properties/anchor_messages"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/actions"),
    ("context::assemble", "/response_schema/definitions/Action"),
    ("context::assemble", "/request_schema/definitions/AssembleOptions/properties/explain"),
    ("context::assemble", "/response_schema/definitions/AssembleBreakdown/properties/calibration"),
    ("context::assemble", "/request_schema/definitions/AssembleOptions/properties/preview_only"),
    ("context::assemble", "/request_schema/definitions/AssembleOptions/properties/namespace"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/policy"),
    ("context::assemble", "/response_schema/definitions/AppliedPolicy"),
    ("context::assemble", "/response_schema/definitions/PolicySource"),
    ("context::assemble", "/response_schema/definitions/PolicyWarning"),
    ("context::assemble", "/request_schema/definitions/AssembleOptions/properties/max_history_tokens"),
    ("context::assemble", "/response_schema/definitions/AssembleBreakdown/properties/window_usable"),
    ("context::assemble", "/response_schema/definitions/Applied/properties/summarizer"),
    ("context::compact", "/response_schema/oneOf/0/properties/retained_items"),
    ("context::compact", "/response_schema/oneOf/0/properties/summary_kind"),
    ("context::compact", "/request_schema/definitions/CompactOptions/properties/namespace"),
    ("context::compact", "/response_schema/oneOf/0/properties/summarizer"),
    ("context::prune", "/request_schema/definitions/PruneOptions/properties/explain"),
    ("context::prune", "/response_schema/properties/actions"),
    ("context::prune", "/response_schema/definitions/Action"),
    ("context::prune", "/request_schema/definitions/PruneOptions/properties/namespace"),
    ("context::count-tokens", "/response_schema/properties/calibration"),
    ("context::count-tokens", "/request_schema/properties/options"),
    ("context::count-tokens", "/request_schema/definitions/CountTokensOptions"),
)

_DATA_FILE = "functions.json"
_POLICY_DATA_FILE = "policy_functions.json"


def _read(data_file: str, expected: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    text = resources.files(__name__).joinpath(data_file).read_text(encoding="utf-8")
    entries = json.loads(text)
    ids = tuple(entry["id"] for entry in entries)
    if ids != expected:
        raise RuntimeError(f"{data_file} lists {ids}, expected {expected}")
    return tuple(entries)


@lru_cache(maxsize=1)
def _load() -> tuple[dict[str, Any], ...]:
    return _read(_DATA_FILE, FUNCTION_IDS)


@lru_cache(maxsize=1)
def _load_policy() -> tuple[dict[str, Any], ...]:
    return _read(_POLICY_DATA_FILE, POLICY_FUNCTION_IDS)


def function_definitions() -> list[dict[str, Any]]:
    """Every registered function, in registration order.

    Each entry: ``id``, ``description``, ``metadata``, ``request_schema``, ``response_schema``.
    The caller gets its own copy.
    """
    return copy.deepcopy(list(_load()))


def policy_function_definitions() -> list[dict[str, Any]]:
    """The policy functions, in registration order, shaped as :func:`function_definitions`'s."""
    return copy.deepcopy(list(_load_policy()))


def function_definition(function_id: str) -> dict[str, Any]:
    for entry in (*_load(), *_load_policy()):
        if entry["id"] == function_id:
            return copy.deepcopy(entry)
    raise KeyError(function_id)
