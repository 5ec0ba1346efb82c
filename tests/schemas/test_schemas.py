"""Registered schemas against the published 1.1.6 API reference (spec 04 §1.6, §5).

Comparison is strict JSON value equality (bool is never an int, list order matters, 0 == 0.0).
The only allowed differences are the documented additions, named explicitly below.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_manager.schemas import (
    DOCUMENTED_ADDITIONS,
    FUNCTION_IDS,
    POLICY_FUNCTION_IDS,
    PUBLIC_FUNCTION_IDS,
    function_definition,
    function_definitions,
    policy_function_definitions,
)
from context_manager.schemas.__main__ import main as schemas_main
from context_manager.schemas.goldens import golden_file_name, rendered_goldens

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = ROOT / "schemas" / "goldens"
# The published 1.1.6 API document, kept verbatim (read-only) next to the goldens.
API_REFERENCE = ROOT / "schemas" / "api-reference-1.1.6.json"

ADDED_DROPPED_MESSAGES = "/response_schema/definitions/Applied/properties/dropped_messages"
ADDED_DROPPED_RANGES = "/response_schema/definitions/Applied/properties/dropped_ranges"
ADDED_ANCHOR_TOKENS = "/response_schema/definitions/Applied/properties/anchor_tokens"
ADDED_RETAINED_ITEMS = "/response_schema/definitions/Applied/properties/retained_items"
ADDED_SUMMARY_KIND = "/response_schema/definitions/Applied/properties/summary_kind"
ADDED_WARNINGS = "/response_schema/definitions/Applied/properties/warnings"
ADDED_NOTE_TOKENS = "/response_schema/definitions/Applied/properties/working_set_note_tokens"
ADDED_WARNING_DEFINITION = "/response_schema/definitions/RetentionWarning"
ADDED_ANCHOR_OPTION = "/request_schema/definitions/AssembleOptions/properties/anchor_messages"
ADDED_COMPACT_RETAINED = "/response_schema/oneOf/0/properties/retained_items"
ADDED_COMPACT_KIND = "/response_schema/oneOf/0/properties/summary_kind"
ADDED_PREFIX_REPORT = [f"/response_schema/definitions/Applied/properties/{name}" for name in
                       ("cache_break_index", "system_prompt_changed", "summary_reused", "reused_from_index")]
ADDED_ACTIONS = "/response_schema/definitions/Applied/properties/actions"
ADDED_ACTION = "/response_schema/definitions/Action"
ADDED_EXPLAIN_OPTION = "/request_schema/definitions/AssembleOptions/properties/explain"
ADDED_PREVIEW_OPTION = "/request_schema/definitions/AssembleOptions/properties/preview_only"
ADDED_PRUNE_EXPLAIN = "/request_schema/definitions/PruneOptions/properties/explain"
ADDED_PRUNE_ACTIONS = "/response_schema/properties/actions"
ADDED_CALIBRATION = "/response_schema/definitions/AssembleBreakdown/properties/calibration"
ADDED_COUNT_CALIBRATION = "/response_schema/properties/calibration"
ADDED_NAMESPACE = {function_id: f"/request_schema/definitions/{options}/properties/namespace" for function_id, options in (
    ("context::assemble", "AssembleOptions"), ("context::compact", "CompactOptions"), ("context::prune", "PruneOptions"))}
ADDED_POLICY_REPORT = ["/response_schema/definitions/Applied/properties/policy", "/response_schema/definitions/AppliedPolicy",
                       "/response_schema/definitions/PolicySource", "/response_schema/definitions/PolicyWarning"]
ADDED_CEILING_OPTION = "/request_schema/definitions/AssembleOptions/properties/max_history_tokens"
ADDED_WINDOW_USABLE = "/response_schema/definitions/AssembleBreakdown/properties/window_usable"
ADDED_SUMMARIZER = "/response_schema/definitions/Applied/properties/summarizer"
ADDED_COMPACT_SUMMARIZER = "/response_schema/oneOf/0/properties/summarizer"
ADDED_COUNT_OPTIONS = "/request_schema/properties/options"
ADDED_COUNT_OPTIONS_DEFINITION = "/request_schema/definitions/CountTokensOptions"
ASSEMBLE_ADDITIONS = [ADDED_DROPPED_MESSAGES, ADDED_DROPPED_RANGES, ADDED_ANCHOR_TOKENS,
                      ADDED_RETAINED_ITEMS, ADDED_SUMMARY_KIND, ADDED_WARNINGS, ADDED_NOTE_TOKENS,
                      ADDED_WARNING_DEFINITION,
                      *ADDED_PREFIX_REPORT, ADDED_ANCHOR_OPTION, ADDED_ACTIONS, ADDED_ACTION, ADDED_EXPLAIN_OPTION,
                      ADDED_CALIBRATION, ADDED_PREVIEW_OPTION, ADDED_NAMESPACE["context::assemble"],
                      *ADDED_POLICY_REPORT, ADDED_CEILING_OPTION, ADDED_WINDOW_USABLE, ADDED_SUMMARIZER]
COMPACT_ADDITIONS = [ADDED_COMPACT_RETAINED, ADDED_COMPACT_KIND, ADDED_NAMESPACE["context::compact"], ADDED_COMPACT_SUMMARIZER]
PRUNE_ADDITIONS = [ADDED_PRUNE_EXPLAIN, ADDED_PRUNE_ACTIONS, ADDED_ACTION, ADDED_NAMESPACE["context::prune"]]
COUNT_TOKENS_ADDITIONS = [ADDED_COUNT_CALIBRATION, ADDED_COUNT_OPTIONS, ADDED_COUNT_OPTIONS_DEFINITION]
UINT = {"format": "uint", "minimum": 0, "type": "integer"}


def json_equal(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False


def pointer_parts(pointer: str) -> list[str]:
    return pointer.lstrip("/").split("/")


def _step(node, part: str):
    return node[int(part)] if isinstance(node, list) else node[part]


def remove_pointer(document: dict, pointer: str) -> dict:
    parts = pointer_parts(pointer)
    node = document
    for part in parts[:-1]:
        node = _step(node, part)
    del node[parts[-1]]
    return document


def get_pointer(document: dict, pointer: str):
    node = document
    for part in pointer_parts(pointer):
        node = _step(node, part)
    return node


@pytest.fixture(scope="module")
def reference() -> dict[str, dict]:
    data = json.loads(API_REFERENCE.read_text(encoding="utf-8"))
    assert data["triggers"] == []
    return {entry["name"]: entry for entry in data["functions"]}


def test_json_equal_is_strict():
    assert json_equal({"a": [0, "x", None]}, {"a": [0.0, "x", None]})
    assert not json_equal(True, 1)
    assert not json_equal([1, 2], [2, 1])
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert not json_equal("1", 1)
    assert not json_equal(None, False)


def test_seven_functions_in_registration_order():
    assert tuple(d["id"] for d in function_definitions()) == FUNCTION_IDS == (
        "context::assemble", "context::compact", "context::prune", "context::count-tokens",
        "context::on-models-changed", "context-manager::ui-content", "context::on-config-change",
    )
    assert PUBLIC_FUNCTION_IDS == FUNCTION_IDS[:4]


def test_every_registered_function_has_a_handler():
    from context_manager.handlers import internal, policy
    from context_manager.handlers.registry import FUNCTIONS

    # The four context functions are served through the policy layer (handlers/policy_scope.py).
    assert {key: value for key, value in FUNCTIONS.items() if key not in PUBLIC_FUNCTION_IDS} == {
        "context::on-models-changed": internal.handle_on_models_changed,
        "context::on-config-change": internal.handle_on_config_change,
        "context-manager::ui-content": internal.handle_ui_content,
        "context::policy::publish": policy.publish,
        "context::policy::list": policy.list_versions,
        "context::policy::activate": policy.activate,
        "context::policy::withdraw": policy.withdraw,
        "context::policy::resolve": policy.resolve,
        "context::policy::scopes": policy.scopes,
    }
    assert list(FUNCTIONS) == ["context::count-tokens", "context::prune", "context::assemble", "context::compact",
                               "context::on-models-changed", "context::on-config-change",
                               "context-manager::ui-content", *POLICY_FUNCTION_IDS]
    assert set(FUNCTIONS) == set(FUNCTION_IDS) | set(POLICY_FUNCTION_IDS)


def test_policy_functions_are_defined_apart_with_schemas():
    import jsonschema

    definitions = policy_function_definitions()
    assert [d["id"] for d in definitions] == list(POLICY_FUNCTION_IDS) == [
        "context::policy::publish", "context::policy::list", "context::policy::activate",
        "context::policy::withdraw", "context::policy::resolve", "context::policy::scopes"]
    for definition in definitions:
        assert set(definition) == {"id", "description", "metadata", "request_schema", "response_schema"}
        jsonschema.Draft7Validator.check_schema(definition["request_schema"])
        jsonschema.Draft7Validator.check_schema(definition["response_schema"])
        assert "token" not in definition["response_schema"].get("properties", {})
    publish = jsonschema.Draft7Validator(function_definition("context::policy::publish")["request_schema"])
    assert publish.is_valid({"surface": "budget", "namespace": "acme/proj-7", "document": {}})
    assert not publish.is_valid({"surface": "budget", "namespace": "Acme", "document": {}})
    assert not publish.is_valid({"surface": "tools", "document": {}})


def test_ids_match_the_reference(reference):
    assert set(reference) == set(FUNCTION_IDS)


def test_documented_additions_are_exactly_these():
    assert DOCUMENTED_ADDITIONS == (
        *(("context::assemble", pointer) for pointer in ASSEMBLE_ADDITIONS),
        *(("context::compact", pointer) for pointer in COMPACT_ADDITIONS),
        *(("context::prune", pointer) for pointer in PRUNE_ADDITIONS),
        *(("context::count-tokens", pointer) for pointer in COUNT_TOKENS_ADDITIONS),
    )


@pytest.mark.parametrize("function_id", FUNCTION_IDS)
def test_description_and_metadata_are_exact(function_id, reference):
    ours = function_definition(function_id)
    assert ours["description"] == reference[function_id]["description"]
    assert json_equal(ours["metadata"], reference[function_id]["metadata"])


@pytest.mark.parametrize("function_id", FUNCTION_IDS)
def test_schemas_equal_the_reference_except_documented_additions(function_id, reference):
    ours = function_definition(function_id)
    for owner, pointer in DOCUMENTED_ADDITIONS:
        if owner == function_id:
            remove_pointer(ours, pointer)
    assert json_equal(ours["request_schema"], reference[function_id]["request_schema"])
    assert json_equal(ours["response_schema"], reference[function_id]["response_schema"])


def test_metadata_flags():
    flags = {d["id"]: d["metadata"] for d in function_definitions()}
    assert flags == {
        "context::assemble": {"internal": True, "trace_hidden": True},
        "context::compact": {"internal": True, "trace_hidden": True},
        "context::prune": {"trace_hidden": True},
        "context::count-tokens": {"trace_hidden": True},
        "context::on-models-changed": {"internal": True, "trace_hidden": True},
        "context-manager::ui-content": {"internal": True},
        "context::on-config-change": {"internal": True, "trace_hidden": True},
    }


def test_on_config_change_description_keeps_the_em_dash():
    assert "\u2014" in function_definition("context::on-config-change")["description"]


def test_added_properties_shape():
    assemble = function_definition("context::assemble")
    assert get_pointer(assemble, ADDED_DROPPED_MESSAGES) | {"description": ""} == {
        "description": "", "format": "uint", "minimum": 0, "type": ["integer", "null"],
    }
    ranges = get_pointer(assemble, ADDED_DROPPED_RANGES)
    assert ranges["type"] == ["array", "null"]
    assert ranges["items"] == {"items": [UINT, UINT], "maxItems": 2, "minItems": 2, "type": "array"}
    applied = assemble["response_schema"]["definitions"]["Applied"]
    assert "dropped_messages" not in applied["required"]
    assert "dropped_ranges" not in applied["required"]
    for name in ("anchor_tokens", "retained_items", "summary_kind"):
        assert name not in applied["required"]
    assert get_pointer(assemble, ADDED_ANCHOR_TOKENS) | {"description": ""} == {
        "description": "", "format": "uint64", "minimum": 0, "type": ["integer", "null"],
    }
    assert get_pointer(assemble, ADDED_SUMMARY_KIND)["enum"] == ["llm", "extractive", None]
    assert get_pointer(assemble, ADDED_WARNINGS)["items"] == {"$ref": "#/definitions/RetentionWarning"}
    codes = [variant["properties"]["code"]["enum"] for variant in get_pointer(assemble, ADDED_WARNING_DEFINITION)["oneOf"]]
    assert codes == [["truncated"], ["text_truncated"], ["reasoning_dropped"], ["media_dropped"], ["history_dropped"]]
    assert get_pointer(assemble, ADDED_ANCHOR_OPTION) | {"description": ""} == {
        "default": None, "description": "", "format": "uint", "minimum": 0, "type": ["integer", "null"],
    }
    compact = function_definition("context::compact")
    ok = compact["response_schema"]["oneOf"][0]
    assert "retained_items" not in ok["required"] and "summary_kind" not in ok["required"]
    assert get_pointer(compact, ADDED_COMPACT_KIND) | {"description": ""} == {
        "description": "", "enum": ["llm", "extractive"], "type": "string",
    }


def test_request_schemas_of_public_functions_mention_description():
    for function_id in PUBLIC_FUNCTION_IDS:
        assert "description" in json.dumps(function_definition(function_id)["request_schema"])


def test_definitions_are_copies():
    first = function_definitions()
    first[0]["description"] = "changed"
    assert function_definitions()[0]["description"] != "changed"


def test_response_additions_validate_a_response_with_drops():
    import jsonschema

    schema = function_definition("context::assemble")["response_schema"]
    applied_schema = {**schema["definitions"]["Applied"], "definitions": schema["definitions"]}
    applied = {"capped_parts": 0, "capped_tokens": 0, "compacted": False, "initial_token_count": 9,
               "pruned": False, "pruned_tokens": 0, "dropped_messages": 3, "dropped_ranges": [[0, 2], [4, 5]]}
    jsonschema.Draft7Validator(applied_schema).validate(applied)
    bad = dict(applied, dropped_ranges=[[0, 1, 2]])
    assert not jsonschema.Draft7Validator(applied_schema).is_valid(bad)


def test_explain_additions_validate_actions():
    import jsonschema

    for function_id, pointer in (("context::assemble", "/definitions/Applied"), ("context::prune", "")):
        schema = function_definition(function_id)["response_schema"]
        actions = get_pointer(schema, pointer)["properties"]["actions"] if pointer else schema["properties"]["actions"]
        validator = jsonschema.Draft7Validator({**actions, "definitions": schema["definitions"]})
        good = [{"pass": "prune", "index": 3, "function_id": "read", "tokens_before": 900, "tokens_after": 14},
                {"pass": "drop", "index": 4, "tokens_before": 20, "tokens_after": 0}]
        assert validator.is_valid(good)
        assert not validator.is_valid([{"pass": "shrink", "index": 0, "tokens_before": 1, "tokens_after": 0}])
        assert not validator.is_valid([{"pass": "cap", "index": 0, "tokens_before": 1}])
    option = get_pointer(function_definition("context::assemble"), ADDED_EXPLAIN_OPTION)
    assert option == get_pointer(function_definition("context::prune"), ADDED_PRUNE_EXPLAIN)
    assert option["type"] == ["boolean", "null"] and option["default"] is None


def test_the_preview_option_is_an_optional_boolean_that_validates():
    import jsonschema

    schema = function_definition("context::assemble")["request_schema"]
    option = get_pointer(schema, "/definitions/AssembleOptions/properties/preview_only")
    assert (option["type"], option["default"]) == (["boolean", "null"], None)
    validator = jsonschema.Draft7Validator(schema)
    request = {"messages": [], "model": {"id": "m"}}
    for value in (True, False, None):
        assert validator.is_valid({**request, "options": {"preview_only": value}})
    assert not validator.is_valid({**request, "options": {"preview_only": "yes"}})


# --- goldens -----------------------------------------------------------------------------


def test_one_golden_per_function():
    assert sorted(p.name for p in GOLDEN_DIR.glob("*.json")) == sorted(
        golden_file_name(fid) for fid in FUNCTION_IDS
    )
    assert golden_file_name("context::count-tokens") == "context.count-tokens.json"


@pytest.mark.parametrize("name,expected", sorted(rendered_goldens().items()))
def test_goldens_are_byte_exact(name, expected):
    committed = (GOLDEN_DIR / name).read_text(encoding="utf-8")
    assert committed == expected, (
        f"{name} drifted; review and run `python -m context_manager.schemas --regenerate-goldens`"
    )


def test_golden_records_the_additions():
    assemble = json.loads((GOLDEN_DIR / "context.assemble.json").read_text(encoding="utf-8"))
    assert assemble["documented_additions"] == ASSEMBLE_ADDITIONS
    compact = json.loads((GOLDEN_DIR / "context.compact.json").read_text(encoding="utf-8"))
    assert compact["documented_additions"] == COMPACT_ADDITIONS
    prune = json.loads((GOLDEN_DIR / "context.prune.json").read_text(encoding="utf-8"))
    assert prune["documented_additions"] == PRUNE_ADDITIONS
    count = json.loads((GOLDEN_DIR / "context.count-tokens.json").read_text(encoding="utf-8"))
    assert count["documented_additions"] == COUNT_TOKENS_ADDITIONS


def test_regeneration_needs_the_explicit_flag(tmp_path, capsys):
    assert schemas_main(["--dir", str(tmp_path)]) == 2
    assert list(tmp_path.iterdir()) == []
    assert schemas_main(["--regenerate-goldens", "--dir", str(tmp_path)]) == 0
    for name, text in rendered_goldens().items():
        assert (tmp_path / name).read_text(encoding="utf-8") == text
