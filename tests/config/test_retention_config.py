"""The ``retention`` configuration key: strict parsing that names the offending path, the schema,
the seed file, and the round trip through the stored JSON."""

from __future__ import annotations

import jsonschema
import pytest

from context_manager.config.parse import ConfigError, config_to_json, parse_config_value
from context_manager.config.schema import config_schema
from context_manager.config.seed import parse_seed_text
from context_manager.core.retention_policy import (
    MediaPolicy,
    MediaRule,
    ReasoningPolicy,
    RetentionPolicy,
    TextPolicy,
    ToolRule,
    ToolsPolicy,
    ToolTreatment,
    Truncation,
)

CODING = {
    "verbatim_turns": 1,
    "tools": {
        "rules": [{"function": "fs::read_file", "result": {"mode": "over", "over": 2000, "to": 500, "keep": "both"}},
                  {"function": "fs::write_file", "arguments": {"mode": "always", "to": 200, "keep": "head"}}],
        "default": {"result": {"mode": "keep"}},
        "errors": {"mode": "keep"},
        "mark_truncations": True,
    },
    "text": {"prompt": {"mode": "over", "over": 1000, "to": 300}, "message": {"mode": "keep"}},
    "reasoning": {"keep_turns": 1},
    "media": {"default_keep_turns": 2, "rules": [{"mime": "image/*", "keep_turns": 1}]},
}


def test_a_full_policy_parses_into_the_record():
    policy = parse_config_value({"retention": CODING}).retention
    assert policy == RetentionPolicy(
        tools=ToolsPolicy(
            default=ToolTreatment(result=Truncation()),
            rules=(ToolRule("fs::read_file", ToolTreatment(result=Truncation("over", 500, 2000, "both"))),
                   ToolRule("fs::write_file", ToolTreatment(arguments=Truncation("always", 200, 200, "head")))),
            errors=Truncation(),
            mark_truncations=True,
        ),
        verbatim_turns=1,
        text=TextPolicy(prompt=Truncation("over", 300, 1000, "both"), message=Truncation()),
        reasoning=ReasoningPolicy(1),
        media=MediaPolicy(2, (MediaRule("image/*", 1),)),
    )


def test_absent_and_null_mean_no_policy_and_defaults_fill_the_rest():
    assert parse_config_value({}).retention is None
    assert parse_config_value({"retention": None}).retention is None
    assert parse_config_value({"retention": {}}).retention == RetentionPolicy(verbatim_turns=1)
    assert parse_config_value({"retention": {"tools": {}}}).retention.tools == ToolsPolicy()


def test_the_stored_json_round_trips():
    config = parse_config_value({"retention": CODING})
    stored = config_to_json(config)
    assert stored["retention"] == {
        "media": {"default_keep_turns": 2, "rules": [{"keep_turns": 1, "mime": "image/*"}]},
        "reasoning": {"keep_turns": 1},
        "text": {"message": {"mode": "keep"}, "prompt": {"keep": "both", "mode": "over", "over": 1000, "to": 300}},
        "tools": {
            "default": {"result": {"mode": "keep"}},
            "errors": {"mode": "keep"},
            "mark_truncations": True,
            "rules": [
                {"function": "fs::read_file", "result": {"keep": "both", "mode": "over", "over": 2000, "to": 500}},
                {"arguments": {"keep": "head", "mode": "always", "to": 200}, "function": "fs::write_file"},
            ],
        },
        "verbatim_turns": 1,
    }
    assert parse_config_value(stored) == config


@pytest.mark.parametrize("policy,detail", [
    (5, "retention: expected an object, got integer `5`"),
    ({"tool": {}}, "retention: unknown member `tool`, expected one of `tools`, `verbatim_turns`, `text`, "
                   "`reasoning`, `media`"),
    ({"verbatim_turns": -1}, "retention.verbatim_turns: expected a non-negative integer, got -1"),
    ({"verbatim_turns": 1.5}, "retention.verbatim_turns: expected a non-negative integer, got floating point `1.5`"),
    ({"verbatim_turns": True}, "retention.verbatim_turns: expected a non-negative integer, got boolean `true`"),
    ({"tools": {"rules": {}}}, "retention.tools.rules: expected an array, got map"),
    ({"tools": {"rules": [{"result": {"mode": "keep"}}]}}, "retention.tools.rules[0]: missing member `function`"),
    ({"tools": {"rules": [{"function": "fs::*"}, {"function": "a[b"}]}},
     "retention.tools.rules[1].function: malformed glob 'a[b': `[` at 1 is never closed"),
    ({"tools": {"rules": [{"function": "a]"}]}}, "retention.tools.rules[0].function: malformed glob 'a]': `]` at 1 closes nothing"),
    ({"tools": {"rules": [{"function": ""}]}}, "retention.tools.rules[0].function: the glob is empty"),
    ({"tools": {"rules": [{"function": 3}]}}, "retention.tools.rules[0].function: expected a glob string, got integer `3`"),
    ({"tools": {"rules": [{"function": "f", "result": {"mode": "over", "over": 500, "to": 600}}]}},
     "retention.tools.rules[0].result.to: 600 is greater than over (500)"),
    ({"tools": {"rules": [{"function": "f", "result": {"mode": "over", "to": 6}}]}},
     "retention.tools.rules[0].result: missing member `over` (mode `over`)"),
    ({"tools": {"rules": [{"function": "f", "arguments": {"mode": "always"}}]}},
     "retention.tools.rules[0].arguments: missing member `to` (mode `always`)"),
    ({"tools": {"rules": [{"function": "f", "arguments": {"mode": "cut", "to": 1}}]}},
     "retention.tools.rules[0].arguments.mode: expected one of `keep`, `always`, `over`, got string \"cut\""),
    ({"tools": {"rules": [{"function": "f", "arguments": {"to": 1}}]}},
     "retention.tools.rules[0].arguments: missing member `mode`"),
    ({"tools": {"rules": [{"function": "f", "arguments": {"mode": "keep", "to": 1}}]}},
     "retention.tools.rules[0].arguments: unknown member `to`, expected one of `mode`"),
    ({"tools": {"rules": [{"function": "f", "arguments": {"mode": "always", "to": 1, "keep": "middle"}}]}},
     "retention.tools.rules[0].arguments.keep: expected one of `head`, `tail`, `both`, got string \"middle\""),
    ({"tools": {"rules": [{"function": "f", "arguments": {"mode": "always", "to": -3}}]}},
     "retention.tools.rules[0].arguments.to: expected a non-negative integer, got -3"),
    ({"tools": {"default": {"results": {"mode": "keep"}}}},
     "retention.tools.default: unknown member `results`, expected one of `arguments`, `result`"),
    ({"tools": {"errors": "keep"}}, "retention.tools.errors: expected an object, got string \"keep\""),
    ({"tools": {"mark_truncations": "yes"}}, "retention.tools.mark_truncations: expected a boolean, got string \"yes\""),
    ({"text": {"prompts": {}}}, "retention.text: unknown member `prompts`, expected one of `prompt`, `message`"),
    ({"reasoning": {}}, "retention.reasoning: missing member `keep_turns`"),
    ({"reasoning": {"keep_turns": -1}}, "retention.reasoning.keep_turns: expected a non-negative integer, got -1"),
    ({"media": {"rules": [{"mime": "png", "keep_turns": 1}]}},
     "retention.media.rules[0].mime: malformed MIME pattern 'png': expected type/subtype, e.g. \"image/*\""),
    ({"media": {"rules": [{"mime": "image/[png", "keep_turns": 1}]}},
     "retention.media.rules[0].mime: malformed glob 'image/[png': `[` at 6 is never closed"),
    ({"media": {"rules": [{"mime": "image/png"}]}}, "retention.media.rules[0]: missing member `keep_turns`"),
    ({"media": {"default_keep_turns": None}},
     "retention.media.default_keep_turns: expected a non-negative integer, got null"),
])
def test_bad_policies_name_the_offending_path(policy, detail):
    with pytest.raises(ConfigError) as caught:
        parse_config_value({"retention": policy})
    assert str(caught.value) == f"json parse: {detail}"


def test_the_seed_file_takes_a_policy():
    text = """
retention:
  verbatim_turns: 2
  tools:
    rules:
      - function: "fs::*"
        result: {mode: over, over: 2000, to: 500}
  reasoning: {keep_turns: 1}
"""
    policy = parse_seed_text(text, {}).retention
    assert policy == RetentionPolicy(
        tools=ToolsPolicy(rules=(ToolRule("fs::*", ToolTreatment(result=Truncation("over", 500, 2000, "both"))),)),
        verbatim_turns=2, reasoning=ReasoningPolicy(1))
    with pytest.raises(ConfigError) as caught:
        parse_seed_text("retention:\n  reasoning: {keep_turns: x}\n", {})
    assert str(caught.value) == ("yaml parse: retention.reasoning.keep_turns: expected a non-negative integer, "
                                 "got string \"x\"")


def test_the_schema_accepts_the_policies_the_parser_accepts():
    validator = jsonschema.Draft7Validator(config_schema())
    assert validator.is_valid({"retention": CODING})
    assert validator.is_valid({"retention": None})
    assert validator.is_valid({"retention": {}})
    for bad in ({"retention": 5}, {"retention": {"tool": {}}}, {"retention": {"verbatim_turns": -1}},
                {"retention": {"tools": {"rules": [{"result": {"mode": "keep"}}]}}},
                {"retention": {"tools": {"rules": [{"function": "f", "result": {"mode": "keep", "to": 1}}]}}},
                {"retention": {"reasoning": {}}}, {"retention": {"media": {"rules": [{"mime": "image/*"}]}}}):
        assert not validator.is_valid(bad), bad
        with pytest.raises(ConfigError):
            parse_config_value(bad)
