"""Console UI (spec 04 §4): the content function, the assets and the configuration form."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from context_manager import CallError, call
from context_manager.config.parse import ConfigError, parse_config_value
from context_manager.config.schema import retention_definitions
from context_manager.core.settings import DEFAULT_CONFIG, PROFILE_KEYS
from context_manager.ui.content import (
    ASSETS,
    MAX_ASSET_BYTES,
    SCRIPT_PATH,
    STYLE_PATH,
    UI_TRIGGERS,
    preload,
    ui_content,
)

UI_DIR = Path(__file__).resolve().parents[2] / "src" / "context_manager" / "ui"
PAGE = (UI_DIR / "page.js").read_text(encoding="utf-8")
STYLES = (UI_DIR / "styles.css").read_text(encoding="utf-8")
HARNESS = Path(__file__).with_name("ui_form_harness.mjs")

KEYS_1_1_6 = [
    "reserved_tokens_cap", "reserved_pct", "allow_fallback_limits",
    "protect_recent_tokens", "decay_user_turns", "protected_user_turns", "min_free_tokens",
    "max_output_chars", "max_result_tokens", "tail_turns",
    "lease_ttl_secs", "summarizer_timeout_ms", "lease_dir",
]
EXTENSION_KEYS = ["overflow_fallback", "estimator", "user_less_compaction",
                  "anchor_messages", "summary_check", "summarizer_fallback", "working_set",
                  "report_prefix", "reduce_to", "summary_reuse", "summary_placement",
                  "eager_compaction_at", "retention", "count_calibration", "lease_store",
                  "session_store", "session_ttl_secs", "profile", "max_history_tokens",
                  "plan_functions", "policy_write_token", "summarizer_model", "compaction_instructions",
                  "summarizer_request", "compact_ahead_at"]
UNKNOWN_TEXT = (
    "handler error: UNKNOWN_UI_ASSET: 'context-manager/nope.js' is not one of this worker's ui "
    "assets (expected one of: context-manager/page.js, context-manager/styles.css)"
)


# --- the content function ----------------------------------------------------------------


def test_script_asset():
    got = call("context-manager::ui-content", {"path": "context-manager/page.js"})
    assert got == {"content": PAGE, "content_type": "text/javascript; charset=utf-8"}


def test_style_asset_ignores_extra_members():
    got = call("context-manager::ui-content",
               {"path": "context-manager/styles.css", "_caller_worker_id": "w-1"})
    assert got == {"content": STYLES, "content_type": "text/css; charset=utf-8"}


def test_unknown_path():
    with pytest.raises(CallError) as err:
        call("context-manager::ui-content", {"path": "context-manager/nope.js"})
    assert (err.value.code, err.value.message) == ("invocation_failed", UNKNOWN_TEXT)


def test_missing_path():
    with pytest.raises(CallError) as err:
        call("context-manager::ui-content", {})
    assert err.value.message == "serialization error: missing field `path`"


@pytest.mark.parametrize("payload", [{"path": 1}, {"path": None}, None, "context-manager/page.js"])
def test_malformed_payload(payload):
    with pytest.raises(CallError) as err:
        call("context-manager::ui-content", payload)
    assert err.value.message.startswith("serialization error: ")


@pytest.mark.parametrize("path", ["", "page.js", "context-manager/page.js ", "Context-Manager/page.js",
                                  "context-manager/../context-manager/page.js"])
def test_only_exact_paths_are_known(path):
    with pytest.raises(Exception) as err:
        ui_content(path)
    assert str(err.value).startswith(f"UNKNOWN_UI_ASSET: '{path}' is not one of")


def test_asset_table_and_triggers():
    assert sorted(ASSETS) == [SCRIPT_PATH, STYLE_PATH] == ["context-manager/page.js", "context-manager/styles.css"]
    assert UI_TRIGGERS == (
        ("console:script", {"path": "context-manager/page.js"}),
        ("console:style", {"path": "context-manager/styles.css"}),
    )


def test_assets_are_served_from_memory_and_small():
    preload()
    for path in ASSETS:
        content = ui_content(path)["content"]
        assert 0 < len(content.encode("utf-8")) < MAX_ASSET_BYTES
        assert ui_content(path)["content"] is content


# --- page.js: static contract (§4.6, §4.7) -----------------------------------------------


def test_page_contains_config_forms_and_every_key():
    assert "configForms" in PAGE
    assert "host.configForms.register('context-manager'" in PAGE
    for key in KEYS_1_1_6 + EXTENSION_KEYS:
        assert key in PAGE, key
    assert set(KEYS_1_1_6 + EXTENSION_KEYS) == set(DEFAULT_CONFIG.key_names())


def test_page_fallbacks_are_the_configuration_defaults():
    # The page is a static asset, so it restates the defaults: this keeps the copies equal.
    fallbacks = {key: int(value) for key, value in
                 re.findall(r"key: '(\w+)',\n(?:\s+\w+: .*\n)*?\s+fallback: (\d+),", PAGE)}
    numeric = {key for key in DEFAULT_CONFIG.key_names() if type(getattr(DEFAULT_CONFIG, key)) is int}
    assert fallbacks == {key: getattr(DEFAULT_CONFIG, key) for key in numeric}
    assert f"placeholder: '{DEFAULT_CONFIG.lease_dir}'" in PAGE
    # A choice field's arguments: the text shown while the key is left out, then its on and off values.
    assert "'off (error)', 'drop_oldest', 'error')" in PAGE and DEFAULT_CONFIG.overflow_fallback == "error"
    assert "'off (heuristic)', 'auto', 'heuristic')" in PAGE and DEFAULT_CONFIG.estimator == "heuristic"
    fractions = {key: float(value) for key, value in
                 re.findall(r"key: '(\w+)',\n(?:\s+\w+: .*\n)*?\s+fallback: (\d+\.\d+),", PAGE)}
    assert fractions == {key: getattr(DEFAULT_CONFIG, key) for key in DEFAULT_CONFIG.key_names()
                         if type(getattr(DEFAULT_CONFIG, key)) is float}


def test_page_is_an_esm_module_importing_only_shared_specifiers():
    allowed = {"react", "react-dom", "react-dom/client", "react/jsx-runtime", "@iii-dev/console-ui"}
    imports = re.findall(r"^import\s.*?from\s+'([^']+)'", PAGE, flags=re.MULTILINE)
    assert imports and set(imports) <= allowed
    assert "require(" not in PAGE
    assert re.search(r"^export default function setup\(host\)", PAGE, flags=re.MULTILINE)


# --- styles.css (§4.5) -------------------------------------------------------------------


def _selectors(css: str) -> list[str]:
    without_comments = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    return [s.strip() for block in re.findall(r"([^{}]+)\{", without_comments) for s in block.split(",")]


def test_every_rule_is_scoped():
    selectors = _selectors(STYLES)
    assert selectors
    for selector in selectors:
        assert selector.startswith('[data-iii-ui="context-manager"] .ctx-cfg'), selector
    assert "@font-face" not in STYLES
    rules = re.sub(r"/\*.*?\*/", "", STYLES, flags=re.DOTALL)
    assert not re.search(r"(^|[\s,}]):root|\bhtml\b|\bbody\b|(^|\s)\*", rules)


def test_colours_come_from_console_variables():
    assert not re.search(r"#[0-9a-fA-F]{3,8}\b|rgb\(|hsl\(", STYLES)
    used = set(re.findall(r"var\((--[a-z0-9-]+)\)", STYLES))
    assert used <= {"--color-ink", "--color-ink-faint", "--color-rule", "--color-rule-2", "--color-bg",
                    "--color-accent", "--color-alert"}


# --- the form's behaviour (§4.4), rendered with stub React and console components --------

NODE = shutil.which("node")


def render(scenarios: list[dict], tmp_path: Path) -> dict:
    done = subprocess.run(
        [NODE, str(HARNESS), str(UI_DIR / "page.js"), str(tmp_path / "work")],
        input=json.dumps(scenarios), capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def node_available() -> bool:
    # The behavioural checks need Node.js; without it the static contract above still runs.
    return NODE is not None


def test_form_sections_fields_and_defaults(tmp_path, node_available):
    if not node_available:
        assert "SettingsSection" in PAGE
        return
    out = render([{"value": {}}], tmp_path)
    assert out["families"] == ["context-manager"]
    result = out["results"][0]
    assert [(s["title"], s["fields"]) for s in result["sections"]] == [
        ("Profile", ["profile"]),
        ("Budget defaults", ["reserved_tokens_cap", "reserved_pct", "max_history_tokens", "allow_fallback_limits"]),
        ("Pruning and compaction", ["protect_recent_tokens", "decay_user_turns", "protected_user_turns",
                                    "min_free_tokens", "max_output_chars", "max_result_tokens", "tail_turns"]),
        ("Runtime", ["lease_ttl_secs", "summarizer_timeout_ms", "lease_dir", "lease_store", "session_store",
                     "session_ttl_secs"]),
        ("Overflow and counting", ["overflow_fallback", "estimator", "count_calibration", "user_less_compaction"]),
        ("Task retention", ["anchor_messages", "summary_check", "summarizer_fallback", "working_set",
                            "plan_functions"]),
        ("Cache-aware reduction", ["report_prefix", "reduce_to", "eager_compaction_at", "compact_ahead_at", "summary_reuse",
                                   "summary_placement", "summarizer_request"]),
        ("Retention policy", ["retention"]),
        ("Other settings", ["policy_write_token", "summarizer_model", "compaction_instructions"]),
    ]
    controls = result["controls"]
    numbers = {k: c for k, c in controls.items() if c["type"] == "Input" and c["inputType"] == "number"}
    assert {k: (c["placeholder"], c["min"], c["step"], c["value"]) for k, c in numbers.items()} == {
        "reserved_tokens_cap": ("20000", 0, 1, ""),
        "reserved_pct": ("10", 0, 1, ""),
        "max_history_tokens": ("the window", 1, 1, ""),
        "protect_recent_tokens": ("40000", 0, 1, ""),
        "decay_user_turns": ("0", 0, 1, ""),
        "protected_user_turns": ("2", 0, 1, ""),
        "min_free_tokens": ("20000", 0, 1, ""),
        "max_output_chars": ("2000", 0, 1, ""),
        "max_result_tokens": ("20000", 0, 1, ""),
        "tail_turns": ("2", 0, 1, ""),
        "lease_ttl_secs": ("300", 0, 1, ""),
        "summarizer_timeout_ms": ("320000", 0, 1, ""),
        "session_ttl_secs": ("3600", 1, 1, ""),
        "anchor_messages": ("0", 0, 1, ""),
        "reduce_to": ("1", 0, 0.05, ""),
        "eager_compaction_at": ("off", 0, 0.05, ""),
        "compact_ahead_at": ("off", 0, 0.05, ""),
    }
    assert controls["reserved_tokens_cap"]["meta"] == "Default: 20,000"
    assert controls["summarizer_timeout_ms"]["meta"] == "Default: 320,000"
    assert controls["lease_dir"]["type"] == "Input" and controls["lease_dir"]["inputType"] == "text"
    assert controls["lease_dir"]["placeholder"] == "data/context-manager"
    assert "III_COMPOSE_DIR" in controls["lease_dir"]["meta"]
    switches = {k: c["checked"] for k, c in controls.items() if c["type"] == "Switch"}
    assert switches == {"allow_fallback_limits": True, "overflow_fallback": False, "estimator": False,
                        "user_less_compaction": True, "summary_check": False, "summarizer_fallback": False,
                        "working_set": False, "report_prefix": False, "summary_reuse": False, "summary_placement": False,
                        "count_calibration": False, "lease_store": False, "session_store": False,
                        "summarizer_request": False}
    assert result["alert"] is None
    assert result["proposals"] == []


def test_form_editing_rules(tmp_path, node_available):
    if not node_available:
        assert "Number.isSafeInteger" in PAGE
        return
    base = {"tail_turns": 5, "lease_dir": "/x", "other": 1}
    scenarios = [
        {"value": base, "edit": {"key": "tail_turns", "raw": ""}},
        {"value": base, "edit": {"key": "tail_turns", "raw": "7"}},
        {"value": base, "edit": {"key": "tail_turns", "raw": "-1"}},
        {"value": base, "edit": {"key": "tail_turns", "raw": "1.5"}},
        {"value": base, "edit": {"key": "tail_turns", "raw": "9007199254740992"}},
        {"value": base, "edit": {"key": "reserved_pct", "raw": "9007199254740991"}},
        {"value": base, "edit": {"key": "lease_dir", "raw": ""}},
        {"value": base, "edit": {"key": "lease_dir", "raw": " ~/leases "}},
        {"value": base, "edit": {"key": "allow_fallback_limits", "checked": False}},
        {"value": {"allow_fallback_limits": False}, "edit": {"key": "allow_fallback_limits", "checked": True}},
        {"value": "not an object", "edit": {"key": "tail_turns", "raw": "3"}},
        {"value": {}, "edit": {"key": "overflow_fallback", "checked": True}},
        {"value": {"overflow_fallback": "drop_oldest"}, "edit": {"key": "overflow_fallback", "checked": False}},
        {"value": {}, "edit": {"key": "estimator", "checked": True}},
        {"value": {}, "edit": {"key": "user_less_compaction", "checked": False}},
        {"value": {}, "edit": {"key": "count_calibration", "checked": True}},
        {"value": {"count_calibration": "usage"}, "edit": {"key": "count_calibration", "checked": False}},
        {"value": {}, "edit": {"key": "anchor_messages", "raw": "1"}},
        {"value": {}, "edit": {"key": "summary_check", "checked": True}},
        {"value": {"summary_check": "append"}, "edit": {"key": "summary_check", "checked": False}},
        {"value": {}, "edit": {"key": "summarizer_fallback", "checked": True}},
        {"value": {"summarizer_fallback": "extractive"}, "edit": {"key": "summarizer_fallback", "checked": False}},
        {"value": {}, "edit": {"key": "working_set", "checked": True}},
        {"value": {"working_set": True}, "edit": {"key": "working_set", "checked": False}},
        {"value": {}, "edit": {"key": "reduce_to", "raw": "0.6"}},
        {"value": {}, "edit": {"key": "reduce_to", "raw": "0"}},
        {"value": {}, "edit": {"key": "reduce_to", "raw": "1.5"}},
        {"value": {"reduce_to": 0.6}, "edit": {"key": "reduce_to", "raw": ""}},
        {"value": {}, "edit": {"key": "report_prefix", "checked": True}},
        {"value": {}, "edit": {"key": "summary_reuse", "checked": True}},
        {"value": {}, "edit": {"key": "summary_placement", "checked": True}},
        {"value": {"summary_placement": "message"}, "edit": {"key": "summary_placement", "checked": False}},
        {"value": {}, "edit": {"key": "summarizer_request", "checked": True}},
        {"value": {"summarizer_request": "conversation"}, "edit": {"key": "summarizer_request", "checked": False}},
        {"value": {}, "edit": {"key": "eager_compaction_at", "raw": "0.8"}},
        {"value": {"eager_compaction_at": 0.8}, "edit": {"key": "eager_compaction_at", "raw": ""}},
        {"value": {}, "edit": {"key": "lease_store", "checked": True}},
        {"value": {"lease_store": "state"}, "edit": {"key": "lease_store", "checked": False}},
        {"value": {}, "edit": {"key": "session_store", "checked": True}},
        {"value": {"session_store": "state"}, "edit": {"key": "session_store", "checked": False}},
        {"value": {}, "edit": {"key": "session_ttl_secs", "raw": "60"}},
        {"value": {}, "edit": {"key": "session_ttl_secs", "raw": "0"}},
    ]
    proposals = [r["proposals"] for r in render(scenarios, tmp_path)["results"]]
    assert proposals == [
        [{"lease_dir": "/x", "other": 1}],
        [{"tail_turns": 7, "lease_dir": "/x", "other": 1}],
        [],
        [],
        [],
        [{"tail_turns": 5, "lease_dir": "/x", "other": 1, "reserved_pct": 9007199254740991}],
        [{"tail_turns": 5, "other": 1}],
        [{"tail_turns": 5, "lease_dir": " ~/leases ", "other": 1}],
        [{"tail_turns": 5, "lease_dir": "/x", "other": 1, "allow_fallback_limits": False}],
        [{"allow_fallback_limits": True}],
        [{"tail_turns": 3}],
        [{"overflow_fallback": "drop_oldest"}],
        [{"overflow_fallback": "error"}],
        [{"estimator": "auto"}],
        [{"user_less_compaction": False}],
        [{"count_calibration": "usage"}],
        [{"count_calibration": "off"}],
        [{"anchor_messages": 1}],
        [{"summary_check": "append"}],
        [{"summary_check": "off"}],
        [{"summarizer_fallback": "extractive"}],
        [{"summarizer_fallback": "none"}],
        [{"working_set": True}],
        [{"working_set": False}],
        [{"reduce_to": 0.6}],
        [],
        [],
        [{}],
        [{"report_prefix": True}],
        [{"summary_reuse": True}],
        [{"summary_placement": "message"}],
        [{"summary_placement": "system_prompt"}],
        [{"summarizer_request": "conversation"}],
        [{"summarizer_request": "rendered"}],
        [{"eager_compaction_at": 0.8}],
        [{}],
        [{"lease_store": "state"}],
        [{"lease_store": "file"}],
        [{"session_store": "state"}],
        [{"session_store": "memory"}],
        [{"session_ttl_secs": 60}],
        [],
    ]


def test_form_shows_current_values(tmp_path, node_available):
    if not node_available:
        assert "typeof current === 'number'" in PAGE
        return
    value = {"tail_turns": 0, "reserved_pct": "12", "lease_dir": 5, "allow_fallback_limits": False,
             "estimator": "auto", "user_less_compaction": False}
    controls = render([{"value": value}], tmp_path)["results"][0]["controls"]
    assert controls["tail_turns"]["value"] == "0"
    assert controls["reserved_pct"]["value"] == ""
    assert controls["lease_dir"]["value"] == ""
    assert controls["allow_fallback_limits"]["checked"] is False
    assert controls["estimator"]["checked"] is True
    assert controls["user_less_compaction"]["checked"] is False


def test_form_errors(tmp_path, node_available):
    if not node_available:
        assert 'role: \'alert\'' in PAGE
        return
    errors = [["/tail_turns", "must be >= 0"], ["", "value is not an object"], ["/lease dir/x", "bad"]]
    result = render([{"value": {}, "errors": errors}], tmp_path)["results"][0]
    assert result["alert"] == [
        {"id": "context-manager-cfg-error--tail_turns", "text": "/tail_turns: must be >= 0"},
        {"id": "context-manager-cfg-error-root", "text": "value is not an object"},
        {"id": "context-manager-cfg-error--lease-dir-x", "text": "/lease dir/x: bad"},
    ]
    invalid = sorted(k for k, c in result["controls"].items() if c["invalid"])
    assert invalid == ["tail_turns"]


# --- the retention policy editor -----------------------------------------------------------

CODING_POLICY = {
    "verbatim_turns": 1,
    "tools": {"rules": [{"function": "fs::read_file", "result": {"mode": "over", "over": 2000, "to": 500, "keep": "both"}}],
              "errors": {"mode": "keep"}},
    "reasoning": {"keep_turns": 1},
    "media": {"rules": [{"mime": "image/*", "keep_turns": 1}]},
}


def _schema_help() -> list[str]:
    """The help list the editor shows: each path, then the schema's description of it."""
    definitions = retention_definitions()
    policy = definitions["RetentionPolicy"]["properties"]
    tools = policy["tools"]["properties"]
    rule = tools["rules"]["items"]["properties"]
    media_rule = policy["media"]["properties"]["rules"]["items"]["properties"]
    truncation = definitions["Truncation"]
    pairs = [
        ("verbatim_turns", policy["verbatim_turns"]), ("tools", policy["tools"]), ("tools.default", tools["default"]),
        ("tools.rules", tools["rules"]), ("tools.rules[].function", rule["function"]), ("tools.errors", tools["errors"]),
        ("tools.mark_truncations", tools["mark_truncations"]), ("text", policy["text"]),
        ("reasoning", policy["reasoning"]), ("media", policy["media"]), ("media.rules[].mime", media_rule["mime"]),
        ("Truncation", truncation), ("Truncation.keep", truncation["oneOf"][1]["properties"]["keep"]),
    ]
    return [text for path, fragment in pairs for text in (path, fragment["description"])]


def test_retention_editor_renders_empty_with_the_schema_help(tmp_path, node_available):
    if not node_available:
        assert "retentionProblem" in PAGE
        return
    editor = render([{"value": {}}], tmp_path)["results"][0]["controls"]["retention"]
    assert editor["type"] == "textarea"
    assert (editor["value"], editor["problem"], editor["invalid"], editor["meta"]) == ("", "", False, "Default: none")
    assert json.loads(editor["placeholder"]) == {
        "verbatim_turns": 1,
        "tools": {"rules": [{"function": "read_file", "result": {"mode": "over", "over": 2000, "to": 500, "keep": "both"}}],
                  "errors": {"mode": "keep"}},
        "reasoning": {"keep_turns": 1},
    }
    parse_config_value({"retention": json.loads(editor["placeholder"])})
    assert editor["help"] == _schema_help()


def test_retention_editor_shows_the_stored_policy(tmp_path, node_available):
    if not node_available:
        return
    editor = render([{"value": {"retention": CODING_POLICY}}], tmp_path)["results"][0]["controls"]["retention"]
    assert editor["value"] == json.dumps(CODING_POLICY, indent=2)
    host_error = render([{"value": {"retention": 5}, "errors": [["/retention", "5 is not valid"]]}], tmp_path)
    assert host_error["results"][0]["controls"]["retention"]["invalid"] is True


def test_retention_editor_proposes_exactly_the_json_the_worker_accepts(tmp_path, node_available):
    if not node_available:
        return
    raw = json.dumps(CODING_POLICY, indent=4)
    scenarios = [
        {"value": {"tail_turns": 3}, "edit": {"key": "retention", "raw": raw}},
        {"value": {"tail_turns": 3, "retention": CODING_POLICY}, "edit": {"key": "retention", "raw": "  \n"}},
        {"value": {}, "edits": [{"key": "retention", "raw": "{\"reasoning\": {"},
                                {"key": "retention", "raw": "{\"reasoning\": {\"keep_turns\": 2}}"}]},
        {"value": {}, "edit": {"key": "retention", "raw": "null"}},
    ]
    results = render(scenarios, tmp_path)["results"]
    assert [r["proposals"] for r in results] == [
        [{"tail_turns": 3, "retention": CODING_POLICY}],
        [{"tail_turns": 3}],
        [{"retention": {"reasoning": {"keep_turns": 2}}}],
        [{"retention": None}],
    ]
    assert parse_config_value(results[0]["proposals"][0]).retention == parse_config_value({"retention": CODING_POLICY}).retention
    assert parse_config_value(results[3]["proposals"][0]).retention is None
    editor = results[2]["controls"]["retention"]
    assert (editor["problem"], editor["invalid"]) == ("", False)


def test_retention_editor_keeps_what_is_typed_and_names_the_fault(tmp_path, node_available):
    if not node_available:
        return
    result = render([{"value": {}, "edit": {"key": "retention", "raw": "{\"tools\": "}}], tmp_path)["results"][0]
    editor = result["controls"]["retention"]
    assert result["proposals"] == []
    assert editor["value"] == "{\"tools\": "
    assert editor["problem"].startswith("retention: not JSON (")
    assert editor["invalid"] is True


BAD_POLICIES = [
    5, [], {"tool": {}}, {"verbatim_turns": -1}, {"verbatim_turns": 1.5}, {"verbatim_turns": True},
    {"verbatim_turns": "2"}, {"tools": {"rules": {}}}, {"tools": {"rules": [{"result": {"mode": "keep"}}]}},
    {"tools": {"rules": [{"function": "fs::*"}, {"function": "a[b"}]}}, {"tools": {"rules": [{"function": "a]"}]}},
    {"tools": {"rules": [{"function": ""}]}}, {"tools": {"rules": [{"function": 3}]}},
    {"tools": {"rules": [{"function": "f", "result": {"mode": "over", "over": 500, "to": 600}}]}},
    {"tools": {"rules": [{"function": "f", "result": {"mode": "over", "to": 6}}]}},
    {"tools": {"rules": [{"function": "f", "arguments": {"mode": "always"}}]}},
    {"tools": {"rules": [{"function": "f", "arguments": {"mode": "cut", "to": 1}}]}},
    {"tools": {"rules": [{"function": "f", "arguments": {"mode": "toString", "to": 1}}]}},
    {"tools": {"rules": [{"function": "f", "arguments": {"to": 1}}]}},
    {"tools": {"rules": [{"function": "f", "arguments": {"mode": "keep", "to": 1}}]}},
    {"tools": {"rules": [{"function": "f", "arguments": {"mode": "always", "to": 1, "keep": "middle"}}]}},
    {"tools": {"rules": [{"function": "f", "arguments": {"mode": "always", "to": 1, "keep": None}}]}},
    {"tools": {"default": {"results": {"mode": "keep"}}}}, {"tools": {"errors": "keep"}},
    {"tools": {"mark_truncations": "yes"}}, {"text": {"prompts": {}}}, {"reasoning": {}},
    {"reasoning": {"keep_turns": -1}}, {"media": {"rules": [{"mime": "png", "keep_turns": 1}]}},
    {"media": {"rules": [{"mime": "image/[png", "keep_turns": 1}]}}, {"media": {"rules": [{"mime": "image/png"}]}},
    {"media": {"default_keep_turns": None}}, {"media": {"rules": [{"mime": 7, "keep_turns": 1}]}},
]


def test_retention_editor_names_the_same_fault_as_the_worker(tmp_path, node_available):
    if not node_available:
        return
    scenarios = [{"value": {}, "edit": {"key": "retention", "raw": json.dumps(bad)}} for bad in BAD_POLICIES]
    results = render(scenarios, tmp_path)["results"]
    expected = []
    for bad in BAD_POLICIES:
        with pytest.raises(ConfigError) as caught:
            parse_config_value({"retention": bad})
        expected.append(caught.value.detail)
    assert [r["controls"]["retention"]["problem"] for r in results] == expected
    assert all(r["proposals"] == [] for r in results)


def test_retention_editor_lists_the_tool_rules_in_the_order_they_are_tried(tmp_path, node_available):
    if not node_available:
        assert "toolRuleLines" in PAGE
        return
    policy = {"tools": {"rules": [{"function": "fs::read_file", "result": {"mode": "over", "over": 2000, "to": 500}},
                                  {"function": "fs::write_file", "arguments": {"mode": "always", "to": 200, "keep": "head"},
                                   "result": {"mode": "keep"}},
                                  {"function": "web::*"}],
                        "default": {"result": {"mode": "always", "to": 1000, "keep": "tail"}},
                        "errors": {"mode": "keep"}}}
    scenarios = [{"value": {"retention": policy}}, {"value": {}}, {"value": {"retention": {"tools": {"rules": 5}}}}]
    results = render(scenarios, tmp_path)["results"]
    assert [r["controls"]["retention"]["rules"] for r in results] == [
        ["1. fs::read_file: result over 2,000 tokens cut to 500 (head and tail)",
         "2. fs::write_file: arguments cut to 200 tokens (head); result kept whole",
         "3. web::*: no change",
         "otherwise: result cut to 1,000 tokens (tail)",
         "error results: kept whole"],
        [],
        [],
    ]


def test_profile_selector_shows_and_proposes_the_profile(tmp_path, node_available):
    if not node_available:
        assert "const PROFILES = {" in PAGE
        return
    scenarios = [
        {"value": {}},
        {"value": {"profile": "recommended", "working_set": False}},
        {"value": {}, "edit": {"key": "profile", "raw": "recommended"}},
        {"value": {"profile": "recommended", "tail_turns": 3}, "edit": {"key": "profile", "raw": "faithful"}},
        {"value": {"profile": "recommended"}, "edit": {"key": "summary_check", "checked": False}},
    ]
    results = render(scenarios, tmp_path)["results"]
    controls = [r["controls"] for r in results]
    assert [c["profile"]["value"] for c in controls] == ["faithful", "recommended", "faithful", "recommended", "recommended"]
    assert controls[0]["profile"]["type"] == "select" and controls[0]["profile"]["meta"] == "Default: faithful"
    # Under the recommended profile the switches it implies show on, unless the value says otherwise.
    implied = controls[1]
    assert {k: implied[k]["checked"] for k in ("summary_check", "summarizer_fallback", "working_set",
                                               "overflow_fallback", "summary_reuse", "report_prefix")} == {
        "summary_check": True, "summarizer_fallback": True, "working_set": False,
        "overflow_fallback": True, "summary_reuse": True, "report_prefix": False}
    assert implied["summary_check"]["meta"] == 'Default: "append" (recommended profile)'
    assert (implied["eager_compaction_at"]["placeholder"], implied["eager_compaction_at"]["meta"]) == (
        "0.8", "Default: 0.8 (recommended profile)")
    assert (implied["reduce_to"]["placeholder"], implied["reduce_to"]["meta"]) == ("1", "Default: 1")
    assert controls[0]["summary_check"]["meta"] == "Default: off"
    assert [r["proposals"] for r in results[2:]] == [
        [{"profile": "recommended"}],
        [{"tail_turns": 3}],
        [{"profile": "recommended", "summary_check": "off"}],
    ]
    for proposal in (p for r in results for p in r["proposals"]):
        parse_config_value(proposal)


def test_page_profiles_are_the_worker_profiles():
    # The page is a static asset, so it restates the profiles: this keeps the copies equal.
    block = re.search(r"const PROFILES = \{\n(.*?)\n\}\n", PAGE, re.S).group(1)
    profiles: dict[str, dict[str, object]] = {}
    for name, body in re.findall(r"  (\w+): \{(.*?)\}", block, re.S):
        pairs = re.findall(r"(\w+): ('[^']*'|true|false|[\d.]+)", body)
        profiles[name] = {k: json.loads(v.replace("'", '"')) for k, v in pairs}
    assert profiles == PROFILE_KEYS


# --- the Policies section (docs/console.md): drawn only when the host gives `invoke` ----------


def test_page_names_the_policy_functions_it_calls():
    for function_id in ("context::policy::resolve", "context::policy::list", "context::policy::activate",
                        "context::policy::withdraw"):
        assert f"'{function_id}'" in PAGE
    # The view never proposes: the write token typed into it is never part of the configuration.
    view = PAGE[PAGE.index("export function PolicyView"):PAGE.index("export function ContextManagerConfigForm")]
    assert "onChange(" not in view and "propose(" not in view
    assert "type: 'password'" in view


def test_policy_view_only_with_the_hosts_invoke(tmp_path, node_available):
    if not node_available:
        assert "typeof props.invoke === 'function'" in PAGE
        return
    out = render([{"value": {}}, {"value": {}, "invoke": True},
                  {"value": {"policy_write_token": "s3cret"}, "invoke": True}], tmp_path)
    without, given, with_token = out["results"]
    assert without["policy"] is None
    assert given["policy"] == {"invoke": "function", "tokenConfigured": False}
    assert with_token["policy"] == {"invoke": "function", "tokenConfigured": True}
    # The configuration's own sections and fields are the same either way, and nothing is proposed.
    assert given["sections"] == without["sections"] and given["proposals"] == []
    assert with_token["controls"]["policy_write_token"]["value"] == "s3cret"


def test_policy_view_wording(tmp_path, node_available):
    if not node_available:
        return
    helpers = render([], tmp_path)["policyHelpers"]
    assert helpers["levels"] == [[None], ["acme", None], ["acme/proj-7/user-99", "acme/proj-7", "acme", None]]
    assert helpers["requests"] == [{"surface": "budget"}, {"surface": "settings", "namespace": "acme", "model_id": "gpt-a"}]
    assert helpers["sources"] == ["the worker's configuration", "settings::1:gpt-4o (org-global, tagged gpt-4o, version 1)"]
    assert helpers["warnings"] == [
        "context_budget_resolved_at: the budget comes from org-global",
        "retention_policy_overridden: the retention policy of acme hides that of acme/proj-7",
        '{"code":"something_new","namespace":"acme"}',
    ]
    assert helpers["faults"] == ["context/unauthorized: no", "gone", "x"]
