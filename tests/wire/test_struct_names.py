"""Every `expected struct <Name>` text the decoders can produce, pinned to the original's record
names (its request schemas publish the same names as titles, see `api-reference-1.1.6.json`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_manager import CallError, call
from context_manager.adapters.router_models import decode_router_model
from context_manager.api import build_context, run_handler
from context_manager.config.parse import ConfigError, parse_config_value
from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.wire.errors import DecodeError

MODEL = {"id": "m"}
ASSISTANT = {"role": "assistant", "content": [], "stop_reason": "end", "model": "m", "provider": "p",
             "timestamp": 1}
API_REFERENCE = Path(__file__).resolve().parents[2] / "schemas" / "api-reference-1.1.6.json"

# (function, payload, the decoder's text)
CASES: list[tuple[str, Any, str]] = [
    ("context::assemble", None, "invalid type: null, expected struct AssembleRequest"),
    ("context::assemble", [], "invalid type: sequence, expected struct AssembleRequest"),
    ("context::compact", "x", 'invalid type: string "x", expected struct CompactRequest'),
    ("context::prune", 1, "invalid type: integer `1`, expected struct PruneRequest"),
    ("context::count-tokens", True, "invalid type: boolean `true`, expected struct CountTokensRequest"),
    ("context::count-tokens", None, "invalid type: null, expected struct CountTokensRequest"),
    ("context::count-tokens", [], "invalid type: sequence, expected struct CountTokensRequest"),
    ("context-manager::ui-content", None, "invalid type: null, expected struct UiContentInput"),
    ("context::on-models-changed", 2, "invalid type: integer `2`, expected struct OnModelsChangedEvent"),
    ("context::on-config-change", "c", 'invalid type: string "c", expected struct OnConfigChangeEvent'),
    ("context::assemble", {"messages": [], "model": MODEL, "options": "x"},
     'invalid type: string "x", expected struct AssembleOptions'),
    ("context::compact", {"messages": [], "model": MODEL, "options": 7},
     "invalid type: integer `7`, expected struct CompactOptions"),
    ("context::prune", {"messages": [], "options": 1.5},
     "invalid type: floating point `1.5`, expected struct PruneOptions"),
    ("context::count-tokens", {"messages": [], "model": "m"},
     'invalid type: string "m", expected struct ModelInput'),
    ("context::count-tokens", {"messages": [], "model": {"id": "m", "limits": [1]}},
     "invalid type: sequence, expected struct ModelLimits"),
    ("context::count-tokens", {"messages": [{**ASSISTANT, "usage": "x"}], "model": MODEL},
     'invalid type: string "x", expected struct Usage'),
    ("context::count-tokens", {"messages": [], "model": MODEL, "tools": [5]},
     "invalid type: integer `5`, expected struct AgentFunction"),
]
IDS = [f"{function_id.split(':')[-1]}-{text.rsplit(' ', 1)[1]}" for function_id, _, text in CASES]


@pytest.mark.parametrize("function_id, payload, text", CASES, ids=IDS)
def test_library_call_names_the_original_struct(function_id: str, payload: Any, text: str) -> None:
    with pytest.raises(CallError) as info:
        call(function_id, payload)
    assert (info.value.code, info.value.message) == ("invocation_failed", f"serialization error: {text}")


@pytest.mark.parametrize("function_id, payload, text", CASES, ids=IDS)
def test_parsed_payload_path_names_the_same_struct(function_id: str, payload: Any, text: str) -> None:
    """Payloads parsed from JSON text (engine frames, the command) take their own fast paths."""
    with pytest.raises(CallError) as info:
        run_handler(function_id, payload, build_context(DEFAULT_CONFIG, None))
    assert (info.value.code, info.value.message) == ("invocation_failed", f"serialization error: {text}")


def test_request_struct_names_are_the_published_schema_titles() -> None:
    reference = json.loads(API_REFERENCE.read_text(encoding="utf-8"))
    titles = {f["name"]: f["request_schema"]["title"] for f in reference["functions"]}
    named = {function_id: text.rsplit(" ", 1)[1] for function_id, payload, text in CASES
             if type(payload) is not dict}
    assert named == titles


def test_router_model_record() -> None:
    with pytest.raises(DecodeError) as info:
        decode_router_model([])
    assert info.value.detail == "invalid type: sequence, expected struct Model"


def test_worker_config() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config_value(5)
    assert str(info.value) == "json parse: invalid type: integer `5`, expected struct WorkerConfig"
