"""The ``--config`` seed file (spec 04 §2.9): env expansion, YAML 1.2 scalars, strict parsing."""

from __future__ import annotations

import logging

import pytest

from context_manager.config.parse import ConfigError
from context_manager.config.seed import expand_env, load_seed, load_seed_file, parse_seed_text, read_seed_file
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig

ENV = {"CTX": "/tmp/l", "EMPTY": "", "A": "1"}


def seed_error(text: str) -> str:
    with pytest.raises(ConfigError) as err:
        parse_seed_text(text, ENV)
    assert err.value.prefix == "yaml parse"
    return str(err.value)


# --- worked examples ---------------------------------------------------------------------


def test_variable_is_expanded():
    assert parse_seed_text('lease_dir: "${CTX}"', ENV).lease_dir == "/tmp/l"


def test_undefined_variable_expands_to_nothing_with_a_warning(caplog):
    log = logging.getLogger("test.seed")
    with caplog.at_level(logging.WARNING, logger="test.seed"):
        got = parse_seed_text('lease_dir: "${MISSING}"', ENV, log)
    assert got.lease_dir == ""
    assert "MISSING" in caplog.text
    assert caplog.records[0].levelno == logging.WARNING


def test_unterminated_reference_is_literal():
    assert parse_seed_text('lease_dir: "a${b"', ENV).lease_dir == "a${b"


# --- expansion rules ---------------------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("${CTX}", "/tmp/l"),
    ("x${CTX}y${A}z", "x/tmp/ly1z"),
    ("${EMPTY}|", "|"),
    ("${MISSING}|", "|"),
    ("a${b", "a${b"),
    ("${A}${", "1${"),
    ("${ A}", ""),  # the name is " A": undefined
    ("${A:default}", ""),  # no default syntax: the name is "A:default"
    ("${}", ""),
    ("$A {A} $", "$A {A} $"),
    ("${${A}}", "}"),  # name "${A": undefined; the rest "}" is kept
    ("é${A}😀", "é1😀"),
])
def test_expand_env(text, expected):
    assert expand_env(text, ENV) == expected


def test_expansion_does_not_nest():
    assert expand_env("${REF}", {"REF": "${A}", "A": "1"}) == "${A}"


def test_expansion_happens_before_yaml_parsing():
    assert parse_seed_text("tail_turns: ${A}\nallow_fallback_limits: ${F}", {"A": "7", "F": "false"}) == \
        WorkerConfig(tail_turns=7, allow_fallback_limits=False)


# --- YAML 1.2 scalars --------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "allow_fallback_limits: yes",
    "allow_fallback_limits: on",
    "allow_fallback_limits: no",
    "allow_fallback_limits: off",
    "allow_fallback_limits: y",
    "user_less_compaction: yes",
    "reserved_tokens_cap: 20_000",
    "reserved_pct: 010",
    "tail_turns: 0_1",
    "lease_ttl_secs: 1:30",
    "reserved_pct: 0b101",
])
def test_yaml_1_1_forms_are_strings_and_fail_typed_keys(text):
    value = text.split(": ", 1)[1]
    assert seed_error(text).startswith(f'yaml parse: invalid type: string "{value}"')


@pytest.mark.parametrize("text,key,expected", [
    ("allow_fallback_limits: true", "allow_fallback_limits", True),
    ("allow_fallback_limits: False", "allow_fallback_limits", False),
    ("allow_fallback_limits: TRUE", "allow_fallback_limits", True),
    ("reserved_tokens_cap: 20000", "reserved_tokens_cap", 20000),
    ("reserved_pct: 0", "reserved_pct", 0),
    ("reserved_pct: 0x10", "reserved_pct", 16),
    ("reserved_pct: 0o17", "reserved_pct", 15),
    ("reserved_pct: +5", "reserved_pct", 5),
    ("summarizer_timeout_ms: 18446744073709551615", "summarizer_timeout_ms", 18446744073709551615),
    ("lease_dir: /var/lib/iii", "lease_dir", "/var/lib/iii"),
    ("lease_dir: yes", "lease_dir", "yes"),
    ("lease_dir: 010", "lease_dir", "010"),
    ("lease_dir: 123", "lease_dir", "123"),
    ("lease_dir: ''", "lease_dir", ""),
    ("estimator: auto", "estimator", "auto"),
    ("overflow_fallback: drop_oldest", "overflow_fallback", "drop_oldest"),
    ("summary_check: off", "summary_check", "off"),
    ("summary_check: append", "summary_check", "append"),
    ("summarizer_fallback: extractive", "summarizer_fallback", "extractive"),
    ("working_set: true", "working_set", True),
    ("working_set: false", "working_set", False),
    ("anchor_messages: 1", "anchor_messages", 1),
    ("count_calibration: usage", "count_calibration", "usage"),
    ("count_calibration: off", "count_calibration", "off"),
    ("lease_store: state", "lease_store", "state"),
    ("session_store: state", "session_store", "state"),
    ("session_ttl_secs: 60", "session_ttl_secs", 60),
])
def test_yaml_1_2_scalars(text, key, expected):
    assert getattr(parse_seed_text(text, ENV), key) == expected


@pytest.mark.parametrize("text,detail", [
    ("tail_turns: 1.0", "invalid type: floating point `1.0`, expected usize"),
    ("tail_turns: 1e3", "invalid type: floating point `1000.0`, expected usize"),
    ("tail_turns: -1", "invalid value: integer `-1`, expected usize"),
    ("tail_turns: ~", "invalid type: null, expected usize"),
    ("tail_turns:", "invalid type: null, expected usize"),
    ("tail_turns: null", "invalid type: null, expected usize"),
    ('tail_turns: "5"', 'invalid type: string "5", expected usize'),
    ("allow_fallback_limits: 1", "invalid type: integer `1`, expected a boolean"),
    ("reserved_pct: 18446744073709551616", "invalid value: integer `18446744073709551616`, expected u64"),
    ("lease_dir: ~", "invalid type: null, expected a string"),
    ("lease_dir: [a]", "invalid type: sequence, expected a string"),
    ("tail_turns: 1\ntail_turns: 2", "duplicate field `tail_turns`"),
    ("- a", "invalid type: sequence, expected struct WorkerConfig"),
    ("just text", 'invalid type: string "just text", expected struct WorkerConfig'),
    ("", "invalid type: null, expected struct WorkerConfig"),
])
def test_seed_rejections(text, detail):
    assert seed_error(text) == f"yaml parse: {detail}"


def test_unknown_key_is_rejected():
    assert seed_error("tail_truns: 3").startswith("yaml parse: unknown field `tail_truns`")


def test_first_fault_in_document_order_is_reported():
    assert seed_error("tail_turns: x\nallow_fallback_limits: 1") == (
        'yaml parse: invalid type: string "x", expected usize'
    )


def test_malformed_yaml():
    assert seed_error("{a: [").startswith("yaml parse: ")


def test_empty_mapping_is_all_defaults():
    assert parse_seed_text("{}", ENV) == DEFAULT_CONFIG
    assert parse_seed_text("# only a comment\n{}\n", ENV) == DEFAULT_CONFIG


def test_full_seed_file():
    text = """
reserved_tokens_cap: 1
reserved_pct: 2
tail_turns: 3
protect_recent_tokens: 4
decay_user_turns: 12
protected_user_turns: 13
min_free_tokens: 5
max_output_chars: 6
max_result_tokens: 9
lease_ttl_secs: 7
allow_fallback_limits: false
summarizer_timeout_ms: 8
lease_dir: /tmp/leases
overflow_fallback: drop_oldest
estimator: auto
user_less_compaction: false
anchor_messages: 2
summary_check: append
summarizer_fallback: extractive
"""
    assert parse_seed_text(text, ENV) == WorkerConfig(1, 2, 3, 4, 12, 13, 5, 6, 9, 7, False, 8, "/tmp/leases",
                                                       "drop_oldest", "auto", False,
                                                       2, "append", "extractive")


# --- files -------------------------------------------------------------------------------


def test_read_seed_file(tmp_path):
    path = tmp_path / "seed.yaml"
    path.write_text("tail_turns: 4\nlease_dir: ${CTX}\n", encoding="utf-8")
    assert read_seed_file(str(path), ENV) == WorkerConfig(tail_turns=4, lease_dir="/tmp/l")


def test_unreadable_seed_file(tmp_path):
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError) as err:
        read_seed_file(missing, ENV)
    assert str(err.value) == f"read {missing}: No such file or directory"


def test_load_seed_failures_are_warnings_and_no_seed(tmp_path, caplog):
    bad = tmp_path / "bad.yaml"
    bad.write_text("allow_fallback_limits: yes\n", encoding="utf-8")
    log = logging.getLogger("test.seed")
    with caplog.at_level(logging.WARNING, logger="test.seed"):
        assert load_seed(str(bad), ENV, log) is None
        assert load_seed(str(tmp_path / "missing.yaml"), ENV, log) is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.WARNING]
    assert "yaml parse" in caplog.records[0].getMessage()
    assert "read " in caplog.records[1].getMessage()


def test_load_seed_without_a_path():
    assert load_seed(None) is None


def test_load_seed_success(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("tail_turns: 9\n", encoding="utf-8")
    assert load_seed(str(good), ENV) == WorkerConfig(tail_turns=9)


def test_load_seed_file_for_the_call_command(tmp_path):
    path = tmp_path / "call.yaml"
    path.write_text("tail_turns: ${A}\n", encoding="utf-8")
    assert load_seed_file(str(path), ENV) == WorkerConfig(tail_turns=1)
    path.write_text("tail_turns: yes\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_seed_file(str(path), ENV)
    assert str(err.value) == 'yaml parse: invalid type: string "yes", expected usize'
    with pytest.raises(OSError):
        load_seed_file(str(tmp_path / "missing.yaml"), ENV)
