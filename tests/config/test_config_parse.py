"""Strict configuration parsing (spec 04 §2.1, §2.2) and the configuration schema (§2.4)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from context_manager.config.parse import (
    ESTIMATORS,
    OVERFLOW_FALLBACKS,
    ConfigError,
    config_to_json,
    defaults_object,
    parse_config_value,
)
from context_manager.config.schema import config_schema
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.wire.codec import loads

U64_MAX = (1 << 64) - 1

DEFAULTS_1_1_6 = {
    "allow_fallback_limits": True,
    "decay_user_turns": 0,
    "lease_dir": "data/context-manager",
    "lease_ttl_secs": 300,
    "max_output_chars": 2000,
    "max_result_tokens": 20000,
    "min_free_tokens": 20000,
    "protect_recent_tokens": 40000,
    "protected_user_turns": 2,
    "reserved_pct": 10,
    "reserved_tokens_cap": 20000,
    "summarizer_timeout_ms": 320000,
    "tail_turns": 2,
}
EXTENSION_DEFAULTS = {"estimator": "heuristic", "overflow_fallback": "error", "user_less_compaction": True,
                      "anchor_messages": 0, "summary_check": "off", "summarizer_fallback": "none",
                      "working_set": False, "report_prefix": False, "reduce_to": 1.0, "summary_reuse": False,
                      "summary_placement": "system_prompt", "eager_compaction_at": None,
                      "compact_ahead_at": None, "retention": None,
                      "count_calibration": "off", "lease_store": "file", "session_store": "memory",
                      "session_ttl_secs": 3600, "profile": "faithful",
                      "max_history_tokens": None,
                      "plan_functions": ["TodoWrite", "update_plan", "write_todos", "task_tracker", "todo_write"],
                      "policy_write_token": None,
                      "summarizer_model": None, "compaction_instructions": None,
                      "summarizer_request": "rendered"}

U64_KEYS = ["reserved_tokens_cap", "reserved_pct", "protect_recent_tokens", "min_free_tokens",
            "max_result_tokens", "lease_ttl_secs", "summarizer_timeout_ms"]
USIZE_KEYS = ["tail_turns", "decay_user_turns", "protected_user_turns", "max_output_chars", "anchor_messages"]
BOOL_KEYS = ["allow_fallback_limits", "user_less_compaction", "report_prefix", "summary_reuse", "working_set"]


def parse_json(text: str) -> WorkerConfig:
    return parse_config_value(loads(text))


def rejection(value) -> str:
    with pytest.raises(ConfigError) as err:
        parse_config_value(value)
    return str(err.value)


# --- §2.1 defaults -----------------------------------------------------------------------


def test_defaults_object_is_the_1_1_6_object_plus_the_documented_extensions():
    assert defaults_object() == {**DEFAULTS_1_1_6, **EXTENSION_DEFAULTS}
    assert list(defaults_object()) == sorted(defaults_object())


def test_every_key_round_trips():
    assert parse_config_value(config_to_json(DEFAULT_CONFIG)) == DEFAULT_CONFIG
    custom = WorkerConfig(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, False, 11, "/tmp/leases", "drop_oldest", "auto", False)
    assert parse_config_value(config_to_json(custom)) == custom


# --- §2.2 worked examples ----------------------------------------------------------------


def test_empty_object_gives_all_defaults():
    assert parse_json("{}") == DEFAULT_CONFIG


def test_partial_object_keeps_other_defaults():
    got = parse_json('{"tail_turns": 5, "lease_dir": "/tmp/x"}')
    assert got.tail_turns == 5
    assert got.lease_dir == "/tmp/x"
    assert got.summarizer_timeout_ms == 320000
    assert got == WorkerConfig(tail_turns=5, lease_dir="/tmp/x")


@pytest.mark.parametrize("text,detail", [
    ('{"tail_turns": "nan"}', 'invalid type: string "nan", expected usize'),
    ('"garbage"', 'invalid type: string "garbage", expected struct WorkerConfig'),
    ('{"reserved_pct": -1}', "invalid value: integer `-1`, expected u64"),
    ('{"reserved_pct": 10.0}', "invalid type: floating point `10.0`, expected u64"),
    ('{"allow_fallback_limits": 1}', "invalid type: integer `1`, expected a boolean"),
    ('{"tail_turns": null}', "invalid type: null, expected usize"),
])
def test_worked_rejections(text, detail):
    with pytest.raises(ConfigError) as err:
        parse_json(text)
    assert str(err.value) == f"json parse: {detail}"
    assert err.value.prefix == "json parse"


def test_unknown_key_is_rejected():
    message = rejection({"tail_truns": 3})
    assert message.startswith("json parse: unknown field `tail_truns`")
    assert "unknown field" in message


@pytest.mark.parametrize("key", ["max_tokens", "Tail_turns", "lease-dir", ""])
def test_any_other_key_is_rejected(key):
    assert "unknown field" in rejection({key: 1})


@pytest.mark.parametrize("value", [None, [], 0, 1.5, True, "x"])
def test_non_object_values_are_rejected(value):
    assert rejection(value).startswith("json parse: invalid type: ")


@pytest.mark.parametrize("key", U64_KEYS + USIZE_KEYS)
@pytest.mark.parametrize("bad", [None, -1, 1.0, 0.5, True, False, "1", [1], {"a": 1}, U64_MAX + 1])
def test_integer_keys_reject(key, bad):
    rejection({key: bad})


@pytest.mark.parametrize("key", U64_KEYS + USIZE_KEYS)
@pytest.mark.parametrize("good", [0, 1, U64_MAX])
def test_integer_keys_accept_the_full_u64_range(key, good):
    assert getattr(parse_config_value({key: good}), key) == good


def test_no_upper_bounds_or_cross_field_checks():
    got = parse_config_value({"reserved_pct": 150, "reserved_tokens_cap": 0, "lease_ttl_secs": 0})
    assert (got.reserved_pct, got.reserved_tokens_cap, got.lease_ttl_secs) == (150, 0, 0)


@pytest.mark.parametrize("key", BOOL_KEYS)
@pytest.mark.parametrize("bad", [None, 0, 1, "true", [], 1.0])
def test_boolean_keys_reject(key, bad):
    rejection({key: bad})


@pytest.mark.parametrize("key", BOOL_KEYS)
def test_boolean_keys_accept_booleans(key):
    assert getattr(parse_config_value({key: False}), key) is False
    assert getattr(parse_config_value({key: True}), key) is True


@pytest.mark.parametrize("bad", [None, 5, True, [], {}])
def test_lease_dir_accepts_only_strings(bad):
    rejection({"lease_dir": bad})


def test_lease_dir_has_no_string_constraints():
    assert parse_config_value({"lease_dir": ""}).lease_dir == ""
    assert parse_config_value({"lease_dir": "~/é ${X}"}).lease_dir == "~/é ${X}"


def test_fetched_values_are_not_env_expanded(monkeypatch):
    monkeypatch.setenv("CTX", "/tmp/l")
    assert parse_config_value({"lease_dir": "${CTX}"}).lease_dir == "${CTX}"


@pytest.mark.parametrize("key,allowed", [
    ("overflow_fallback", ("error", "drop_oldest")),
    ("estimator", ("heuristic", "auto", "router")),
    ("summary_check", ("off", "append")),
    ("summarizer_fallback", ("none", "extractive")),
    ("summary_placement", ("system_prompt", "message")),
    ("count_calibration", ("off", "usage")),
    ("lease_store", ("file", "state")),
    ("session_store", ("memory", "state")),
])
def test_extension_enum_keys(key, allowed):
    for value in allowed:
        assert getattr(parse_config_value({key: value}), key) == value
    expected = (f"`{allowed[0]}` or `{allowed[1]}`" if len(allowed) == 2
                else "one of " + ", ".join(f"`{v}`" for v in allowed))
    assert rejection({key: "other"}) == f"json parse: unknown variant `other`, expected {expected}"
    for bad in (None, 1, True, ["error"]):
        rejection({key: bad})
    # a configuration choice is a string only (no one-member object naming it)
    assert rejection({key: 1}) == "json parse: invalid type: integer `1`, expected variant identifier"
    assert rejection({key: {allowed[0]: None}}) == "json parse: invalid type: map, expected variant identifier"


def test_the_enumerations_are_the_record_literals_in_order():
    assert OVERFLOW_FALLBACKS == ("error", "drop_oldest")
    assert ESTIMATORS == ("heuristic", "auto", "router")
    assert config_schema()["properties"]["overflow_fallback"]["enum"] == ["error", "drop_oldest"]
    assert config_schema()["properties"]["estimator"]["enum"] == ["heuristic", "auto", "router"]


def test_first_fault_in_key_order_is_reported():
    message = rejection({"tail_turns": -1, "allow_fallback_limits": 1, "zzz": 1})
    assert message == "json parse: invalid type: integer `1`, expected a boolean"


def test_custom_prefix():
    with pytest.raises(ConfigError) as err:
        parse_config_value({"x": 1}, prefix="yaml parse")
    assert str(err.value).startswith("yaml parse: unknown field `x`")


# --- §2.4 schema -------------------------------------------------------------------------


def test_schema_shape():
    schema = config_schema()
    assert "$schema" not in schema
    assert "required" not in schema
    assert schema["title"] == "WorkerConfig"
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert isinstance(schema["description"], str) and schema["description"]
    assert schema["example"] == {**DEFAULTS_1_1_6, **EXTENSION_DEFAULTS}
    assert set(schema["properties"]) == set(DEFAULTS_1_1_6) | set(EXTENSION_DEFAULTS)


def _without_description(prop: dict) -> dict:
    assert isinstance(prop.pop("description"), str)
    return prop


@pytest.mark.parametrize("key,expected", [
    ("allow_fallback_limits", {"default": True, "type": "boolean"}),
    ("decay_user_turns", {"default": 0, "format": "uint", "minimum": 0, "type": "integer"}),
    ("lease_dir", {"default": "data/context-manager", "type": "string"}),
    ("lease_ttl_secs", {"default": 300, "format": "uint64", "minimum": 0, "type": "integer"}),
    ("max_output_chars", {"default": 2000, "format": "uint", "minimum": 0, "type": "integer"}),
    ("max_result_tokens", {"default": 20000, "format": "uint64", "minimum": 0, "type": "integer"}),
    ("min_free_tokens", {"default": 20000, "format": "uint64", "minimum": 0, "type": "integer"}),
    ("protect_recent_tokens", {"default": 40000, "format": "uint64", "minimum": 0, "type": "integer"}),
    ("protected_user_turns", {"default": 2, "format": "uint", "minimum": 0, "type": "integer"}),
    ("reserved_pct", {"default": 10, "format": "uint64", "minimum": 0, "type": "integer"}),
    ("reserved_tokens_cap", {"default": 20000, "format": "uint64", "minimum": 0, "type": "integer"}),
    ("summarizer_timeout_ms", {"default": 320000, "format": "uint64", "minimum": 0, "type": "integer"}),
    ("tail_turns", {"default": 2, "format": "uint", "minimum": 0, "type": "integer"}),
    ("overflow_fallback", {"default": "error", "enum": ["error", "drop_oldest"], "type": "string"}),
    ("estimator", {"default": "heuristic", "enum": ["heuristic", "auto", "router"], "type": "string"}),
    ("user_less_compaction", {"default": True, "type": "boolean"}),
    ("anchor_messages", {"default": 0, "format": "uint", "minimum": 0, "type": "integer"}),
    ("summary_check", {"default": "off", "enum": ["off", "append"], "type": "string"}),
    ("summarizer_fallback", {"default": "none", "enum": ["none", "extractive"], "type": "string"}),
    ("working_set", {"default": False, "type": "boolean"}),
    ("profile", {"default": "faithful", "enum": ["faithful", "recommended"], "type": "string"}),
    ("report_prefix", {"default": False, "type": "boolean"}),
    ("reduce_to", {"default": 1.0, "exclusiveMinimum": 0, "maximum": 1, "type": "number"}),
    ("summary_reuse", {"default": False, "type": "boolean"}),
    ("summary_placement", {"default": "system_prompt", "enum": ["system_prompt", "message"], "type": "string"}),
    ("eager_compaction_at", {"default": None, "exclusiveMinimum": 0, "maximum": 1, "type": ["number", "null"]}),
    ("compact_ahead_at", {"default": None, "exclusiveMinimum": 0, "maximum": 1, "type": ["number", "null"]}),
    ("count_calibration", {"default": "off", "enum": ["off", "usage"], "type": "string"}),
    ("lease_store", {"default": "file", "enum": ["file", "state"], "type": "string"}),
    ("session_store", {"default": "memory", "enum": ["memory", "state"], "type": "string"}),
    ("session_ttl_secs", {"default": 3600, "format": "uint64", "minimum": 1, "type": "integer"}),
])
def test_schema_properties(key, expected):
    assert _without_description(dict(config_schema()["properties"][key])) == expected


def test_schema_accepts_what_the_parser_accepts_and_rejects_the_rest():
    validator = jsonschema.Draft7Validator(config_schema())
    assert validator.is_valid(defaults_object())
    assert validator.is_valid({})
    for bad in ({"tail_truns": 3}, {"reserved_pct": -1}, {"allow_fallback_limits": 1},
                {"lease_dir": 5}, {"estimator": "x"}, {"tail_turns": None},
                {"anchor_messages": -1}, {"anchor_messages": 1.5}, {"summary_check": "on"},
                {"summarizer_fallback": "llm"}, {"reduce_to": 0}, {"reduce_to": 0.0},
                {"reduce_to": 1.5}, {"reduce_to": -0.5}, {"reduce_to": True}, {"reduce_to": "0.5"},
                {"report_prefix": 1}, {"summary_reuse": "yes"}, {"working_set": 1}, {"working_set": "true"}, {"summary_placement": "user"},
                {"eager_compaction_at": 0.0}, {"eager_compaction_at": 2}, {"eager_compaction_at": "0.8"},
                {"compact_ahead_at": 0}, {"compact_ahead_at": 1.5}, {"compact_ahead_at": "0.9"}, {"compact_ahead_at": True},
                {"count_calibration": "on"}, {"lease_store": "engine"}, {"session_store": "file"},
                {"session_ttl_secs": 0}, {"session_ttl_secs": -1}, {"session_ttl_secs": 1.5},
                {"session_ttl_secs": "60"}):
        assert not validator.is_valid(bad)
        rejection(bad)


@pytest.mark.parametrize("value,detail", [
    (0, "invalid value: integer `0`, expected a positive integer"),
    (-1, "invalid value: integer `-1`, expected u64"),
    (1.5, "invalid type: floating point `1.5`, expected u64"),
    (True, "invalid type: boolean `true`, expected u64"),
    (None, "invalid type: null, expected u64"),
])
def test_session_ttl_secs_is_a_positive_integer(value, detail):
    assert parse_config_value({"session_ttl_secs": 60}).session_ttl_secs == 60
    assert rejection({"session_ttl_secs": value}) == f"json parse: {detail}"


@pytest.mark.parametrize("value,expected", [(0.6, 0.6), (1.0, 1.0), (1, 1.0), (1e-9, 1e-9)])
def test_reduce_to_accepts_fractions_in_the_half_open_unit_interval(value, expected):
    parsed = parse_config_value({"reduce_to": value})
    assert parsed.reduce_to == expected and type(parsed.reduce_to) is float


@pytest.mark.parametrize("value,detail", [
    (0, "invalid type: integer `0`, expected a fraction in (0, 1]"),
    (0.0, "invalid value: floating point `0.0`, expected a fraction in (0, 1]"),
    (1.5, "invalid value: floating point `1.5`, expected a fraction in (0, 1]"),
    (True, "invalid type: boolean `true`, expected a fraction in (0, 1]"),
    (None, "invalid type: null, expected a fraction in (0, 1]"),
    ("0.5", 'invalid type: string "0.5", expected a fraction in (0, 1]'),
])
def test_reduce_to_rejects_what_is_not_a_fraction(value, detail):
    with pytest.raises(ConfigError) as caught:
        parse_config_value({"reduce_to": value})
    assert str(caught.value) == f"json parse: {detail}"


def test_compact_ahead_at_is_null_or_a_fraction():
    assert DEFAULT_CONFIG.compact_ahead_at is None
    assert parse_config_value({"compact_ahead_at": None}).compact_ahead_at is None
    assert parse_config_value({"compact_ahead_at": 0.75}).compact_ahead_at == 0.75
    assert parse_config_value({"compact_ahead_at": 1}).compact_ahead_at == 1.0


def test_eager_compaction_at_is_null_or_a_fraction():
    assert parse_config_value({"eager_compaction_at": None}).eager_compaction_at is None
    assert parse_config_value({"eager_compaction_at": 0.8}).eager_compaction_at == 0.8
    assert parse_config_value({"eager_compaction_at": 1}).eager_compaction_at == 1.0
    for value, detail in ((0.0, "invalid value: floating point `0.0`, expected null or a fraction in (0, 1]"),
                          (False, "invalid type: boolean `false`, expected null or a fraction in (0, 1]")):
        with pytest.raises(ConfigError) as caught:
            parse_config_value({"eager_compaction_at": value})
        assert str(caught.value) == f"json parse: {detail}"


# --- profile -------------------------------------------------------------------------------

RECOMMENDED = {"summary_check": "append", "summarizer_fallback": "extractive", "working_set": True,
               "overflow_fallback": "drop_oldest", "summary_reuse": True,
               "eager_compaction_at": 0.8, "summarizer_request": "conversation"}


def test_the_recommended_profile_implies_its_keys():
    config = parse_config_value({"profile": "recommended"})
    assert {key: getattr(config, key) for key in RECOMMENDED} == RECOMMENDED
    assert config == WorkerConfig(profile="recommended", **RECOMMENDED)


def test_an_explicit_key_wins_over_the_profile():
    config = parse_config_value({"profile": "recommended", "working_set": False, "eager_compaction_at": None})
    assert (config.working_set, config.eager_compaction_at, config.summary_check) == (False, None, "append")


def test_the_faithful_profile_is_the_default_config():
    assert parse_config_value({"profile": "faithful"}) == DEFAULT_CONFIG == parse_config_value({})


@pytest.mark.parametrize(("value", "expected"), [
    ({"profile": "best"}, "json parse: unknown variant `best`, expected `faithful` or `recommended`"),
    ({"profile": 1}, "json parse: invalid type: integer `1`, expected variant identifier"),
    ({"profile": None}, "json parse: invalid type: null, expected variant identifier"),
])
def test_a_bad_profile_names_the_allowed_values(value, expected):
    assert rejection(value) == expected


def test_the_full_object_of_a_profile_leaves_out_what_it_implies():
    # The stored value keeps following the profile: only the keys that differ from it are written.
    config = parse_config_value({"profile": "recommended", "working_set": False})
    written = config_to_json(config)
    assert written["profile"] == "recommended" and written["working_set"] is False
    assert [key for key in RECOMMENDED if key in written] == ["working_set"]
    assert parse_config_value(written) == config
    assert parse_config_value({**written, "profile": "faithful"}).summary_check == "off"


def test_plan_functions_is_a_list_of_distinct_names():
    assert parse_config_value({}).plan_functions == ("TodoWrite", "update_plan", "write_todos",
                                                     "task_tracker", "todo_write")
    assert parse_config_value({"plan_functions": []}).plan_functions == ()
    assert parse_config_value({"plan_functions": ["plan::set"]}).plan_functions == ("plan::set",)
    assert parse_config_value({"plan_functions": ["b", "a"]}).to_dict()["plan_functions"] == ["b", "a"]
    faults = {
        "TodoWrite": 'json parse: invalid type: string "TodoWrite", expected a sequence of names',
        None: "json parse: invalid type: null, expected a sequence of names",
        "[1]": "json parse: invalid type: integer `1`, expected a string",
        '[""]': "json parse: invalid value: an empty name, expected a non-empty string",
        '["a", "a"]': "json parse: invalid value: the name `a` is listed twice, expected distinct names",
    }
    for given, message in faults.items():
        value = json.loads(given) if isinstance(given, str) and given.startswith("[") else given
        with pytest.raises(ConfigError) as err:
            parse_config_value({"plan_functions": value})
        assert str(err.value) == message
