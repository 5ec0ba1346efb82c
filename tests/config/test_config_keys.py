"""Each configuration key is declared once (core/settings.py); everything else derives from it.

The committed ``config.example.yaml`` and the generated block of ``ui/page.js`` must be what the
declarations produce, and a key added with one declaration must reach the parser, the schema, the
manifest, the example file, the console form's data and the profiles.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from context_manager.config.console import PAGE, console_block, js_value, shown_text, with_console_block
from context_manager.config.example import example_yaml, yaml_scalar
from context_manager.config.parse import KEY_DECODERS, ConfigCodec, ConfigError, defaults_object
from context_manager.config.schema import config_schema
from context_manager.config.seed import Yaml12Loader, read_seed_file
from context_manager.core.keys import (
    BOOLEAN,
    FRACTION,
    FRACTION_OR_NULL,
    MODEL_OR_NULL,
    NAME_LIST,
    POSITIVE_U64,
    POSITIVE_U64_OR_NULL,
    RETENTION_POLICY,
    STRING,
    STRING_OR_NULL,
    U64,
    USIZE,
    Implied,
    KeyTable,
    Section,
    declare,
)
from context_manager.core.retention_policy import RetentionPolicy
from context_manager.core.settings import CONFIG_KEYS, DEFAULT_CONFIG, PROFILE_KEYS, ModelChoice, WorkerConfig
from context_manager.manifest import manifest
from context_manager.ui.content import SCRIPT_PATH, ui_content

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config.example.yaml"


# --- the committed files are the generated ones --------------------------------------------


def test_the_committed_example_file_is_the_generated_one():
    # Regenerate with: python -m context_manager.config.example > config.example.yaml
    assert EXAMPLE.read_text(encoding="utf-8") == example_yaml()


def test_the_example_file_seeds_the_defaults():
    assert read_seed_file(str(EXAMPLE)) == DEFAULT_CONFIG


def test_the_committed_page_holds_the_generated_block():
    # Regenerate with: python -m context_manager.config.console
    page = PAGE.read_text(encoding="utf-8")
    assert page == with_console_block(page, console_block())
    assert ui_content(SCRIPT_PATH)["content"] == page


# --- the declarations agree with the record ----------------------------------------------------

PYTHON_TYPES = {kind.decoder: python_type for kind, python_type in (
    (U64, int), (USIZE, int), (POSITIVE_U64, int), (BOOLEAN, bool), (STRING, str), (FRACTION, float),
    (FRACTION_OR_NULL, float | None), (POSITIVE_U64_OR_NULL, int | None), (STRING_OR_NULL, str | None),
    (NAME_LIST, tuple[str, ...]),
    (MODEL_OR_NULL, ModelChoice | None),
    (RETENTION_POLICY, RetentionPolicy | None))}


def test_each_declared_type_matches_the_field_annotation():
    hints = typing.get_type_hints(WorkerConfig)
    for key in CONFIG_KEYS.keys:
        if key.type.decoder == "variant":
            assert typing.get_origin(hints[key.name]) is typing.Literal, key.name
            assert key.type.choices == typing.get_args(hints[key.name]), key.name
        else:
            assert hints[key.name] == PYTHON_TYPES[key.type.decoder], key.name


def test_each_default_is_a_value_its_decoder_accepts():
    as_json = defaults_object()
    assert {name: KEY_DECODERS[name](as_json[name]) for name in CONFIG_KEYS.names} == {
        name: getattr(DEFAULT_CONFIG, name) for name in CONFIG_KEYS.names}


def test_the_table_follows_the_record():
    assert CONFIG_KEYS.names == WorkerConfig.key_names()
    assert tuple(KEY_DECODERS) == WorkerConfig.key_names()
    assert PROFILE_KEYS == {"faithful": {}, "recommended": {
        "summary_check": "append", "summarizer_fallback": "extractive", "working_set": True,
        "overflow_fallback": "drop_oldest", "summary_reuse": True, "eager_compaction_at": 0.8,
        "summarizer_request": "conversation"}}


def test_a_profile_summary_comes_from_the_places_of_its_keys():
    assert CONFIG_KEYS.summary("faithful") == ""
    assert CONFIG_KEYS.summary("recommended") == (
        'summary_check: "append", summarizer_fallback: "extractive", working_set: true, '
        'overflow_fallback: "drop_oldest", summary_reuse: true, eager_compaction_at: 0.8, '
        'summarizer_request: "conversation"')
    assert CONFIG_KEYS.expand("implies {implied:recommended}.") == (
        "implies " + CONFIG_KEYS.summary("recommended") + ".")


def test_places_with_a_gap_are_refused():
    @dataclass(frozen=True, slots=True)
    class Gapped(WorkerConfig):
        extra: int = declare(1, U64, section=Section.RUNTIME, description="d", example="e",
                             implied=(Implied("recommended", 2, place=9),))

    with pytest.raises(ValueError, match=r"the keys profile 'recommended' implies are not placed 1\.\.8"):
        KeyTable(Gapped)


def test_a_field_without_a_declaration_is_refused():
    @dataclass(frozen=True, slots=True)
    class Undeclared(WorkerConfig):
        extra: int = 1

    with pytest.raises(TypeError, match="record field 'extra' is not declared with declare()"):
        KeyTable(Undeclared)


# --- one declaration reaches everything ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExtendedConfig(WorkerConfig):
    summary_budget_tokens: int = declare(
        4096, USIZE, section=Section.RUNTIME,
        description="Tokens a summary may take.",
        example="Tokens a summary may take, at most;\n0 lets the summariser decide.",
        implied=(Implied("recommended", 2048, place=8),),
    )


@pytest.fixture(scope="module")
def codec() -> ConfigCodec[Any]:
    return ConfigCodec(KeyTable(ExtendedConfig))


def test_the_parser_accepts_and_checks_the_added_key(codec):
    assert codec.parse_value({"summary_budget_tokens": 10}) == ExtendedConfig(summary_budget_tokens=10)
    assert codec.parse_value({}).summary_budget_tokens == 4096
    with pytest.raises(ConfigError) as err:
        codec.parse_value({"summary_budget_tokens": -1})
    assert str(err.value) == "json parse: invalid value: integer `-1`, expected usize"
    with pytest.raises(ConfigError) as err:
        codec.parse_value({"nope": 1})
    assert str(err.value).endswith(
        "`max_history_tokens`, `plan_functions`, `policy_write_token`, `summarizer_model`, `compaction_instructions`, `summarizer_request`, `summary_budget_tokens`")
    assert "summary_budget_tokens" not in codec.string_keys


def test_the_profile_implies_the_added_key(codec):
    recommended = codec.parse_value({"profile": "recommended"})
    assert (recommended.summary_budget_tokens, recommended.summary_check) == (2048, "append")
    assert codec.parse_value({"profile": "recommended", "summary_budget_tokens": 5}).summary_budget_tokens == 5
    assert "summary_budget_tokens" not in codec.to_json(recommended)
    assert codec.to_json(codec.parse_value({"profile": "recommended", "summary_budget_tokens": 5}))[
        "summary_budget_tokens"] == 5
    assert codec.table.profiles["recommended"]["summary_budget_tokens"] == 2048


def test_the_schema_lists_the_added_key(codec):
    schema = config_schema(codec)
    assert schema["properties"]["summary_budget_tokens"] == {
        "default": 4096, "description": "Tokens a summary may take.", "format": "uint", "minimum": 0.0,
        "type": "integer"}
    assert schema["example"]["summary_budget_tokens"] == 4096
    assert schema["properties"]["profile"]["description"].endswith(
        "eager_compaction_at: 0.8, summarizer_request: \"conversation\", summary_budget_tokens: 2048.")
    # The worker's own schema is untouched by another table.
    assert "summary_budget_tokens" not in config_schema()["properties"]


def test_the_manifest_carries_the_added_default(codec):
    document = manifest(codec)
    assert document["default_config"]["summary_budget_tokens"] == 4096
    assert document["profiles"]["recommended"]["summary_budget_tokens"] == 2048


def test_the_example_file_shows_the_added_key_in_its_section(codec):
    text = example_yaml(codec)
    assert ("lease_dir: data/context-manager\n"
            "# Tokens a summary may take, at most;\n"
            "# 0 lets the summariser decide.\n"
            "summary_budget_tokens: 4096\n"
            "\n"
            "# --- Additions beyond the 1.1.6 configuration ---\n") in text
    # The profile's summary, wrapped at 100 columns.
    assert ('#   overflow_fallback: "drop_oldest", summary_reuse: true, eager_compaction_at: 0.8,\n'
            '#   summarizer_request: "conversation", summary_budget_tokens: 2048\n'
            "profile: faithful\n") in text
    assert codec.parse_value(yaml.load(text, Loader=Yaml12Loader)) == ExtendedConfig()


def test_the_console_data_has_the_added_key(codec):
    block = console_block(codec)
    assert ("  summary_budget_tokens: {\n"
            "    key: 'summary_budget_tokens',\n"
            "    kind: 'integer',\n"
            "    fallback: 4096,\n"
            "    min: 0,\n"
            "    placeholder: '4096',\n"
            "    help: 'Tokens a summary may take.',\n"
            "  },\n") in block
    assert ("    eager_compaction_at: 0.8,\n    summarizer_request: 'conversation',\n"
            "    summary_budget_tokens: 2048,\n  },\n") in block
    assert "summary_budget_tokens" not in console_block()


NODE = shutil.which("node")
HARNESS = ROOT / "tests" / "ui" / "ui_form_harness.mjs"


@pytest.mark.skipif(NODE is None, reason="rendering the form needs Node.js")
def test_the_form_shows_the_added_key_under_other_settings(codec, tmp_path):
    page = tmp_path / "page.js"
    page.write_text(with_console_block(PAGE.read_text(encoding="utf-8"), console_block(codec)), encoding="utf-8")
    scenarios = [{"value": {}}, {"value": {"profile": "recommended"}},
                 {"value": {"tail_turns": 3}, "edit": {"key": "summary_budget_tokens", "raw": "7"}}]
    done = subprocess.run([NODE, str(HARNESS), str(page), str(tmp_path / "work")], input=json.dumps(scenarios),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    default, recommended, edited = json.loads(done.stdout)["results"]
    assert default["sections"][-1] == {"title": "Other settings", "fields": [
        "policy_write_token", "summarizer_model", "compaction_instructions", "summary_budget_tokens"]}
    shown = default["controls"]["summary_budget_tokens"]
    assert (shown["type"], shown["inputType"], shown["placeholder"], shown["min"], shown["meta"]) == (
        "Input", "number", "4096", 0, "Default: 4,096")
    implied = recommended["controls"]["summary_budget_tokens"]
    assert (implied["placeholder"], implied["meta"]) == ("2048", "Default: 2048 (recommended profile)")
    assert edited["proposals"] == [{"tail_turns": 3, "summary_budget_tokens": 7}]
    assert codec.parse_value(edited["proposals"][0]).summary_budget_tokens == 7



# --- the writers' value texts ------------------------------------------------------------------


@pytest.mark.parametrize(("value", "text"), [
    (None, "null"), (True, "true"), (False, "false"), (20000, "20000"), (1.0, "1.0"), (0.8, "0.8"),
    ("faithful", "faithful"), ("none", "none"), ("data/context-manager", "data/context-manager"),
    ("off", '"off"'), ("yes", '"yes"'), ("123", '"123"'), ("null", '"null"'), (" x", '" x"'),
])
def test_yaml_scalars_read_back_as_the_value(value, text):
    assert yaml_scalar(value) == text
    assert yaml.safe_load(f"k: {text}") == {"k": value}


@pytest.mark.parametrize(("value", "text"), [
    ("it's", "'it\\'s'"), ("a\\b", "'a\\\\b'"), (1.0, "1.0"), (None, "null"), (True, "true"), (7, "7"),
])
def test_js_values(value, text):
    assert js_value(value) == text


def test_empty_fields_show_numbers_as_javascript_does():
    assert [shown_text(v) for v in (1.0, 0.05, 20000, "data/x")] == ["1", "0.05", "20000", "data/x"]
