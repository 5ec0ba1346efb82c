"""The ``--manifest`` document (spec 04 §3.1), the registry manifest and the example config (§3.2)."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import yaml

from context_manager import __version__
from context_manager.config.parse import parse_config_value
from context_manager.config.seed import read_seed_file
from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.manifest import manifest, manifest_json, render_manifest

ROOT = Path(__file__).resolve().parents[2]

EXPECTED = """{
  "name": "context-manager",
  "version": "0.1.0",
  "description": "Turns a raw conversation history plus a target model into a model-ready context \u2014 token counting, function-result pruning, and history compaction.",
  "default_config": {
    "allow_fallback_limits": true,
    "anchor_messages": 0,
    "compact_ahead_at": null,
    "compaction_instructions": null,
    "count_calibration": "off",
    "decay_user_turns": 0,
    "eager_compaction_at": null,
    "estimator": "heuristic",
    "lease_dir": "data/context-manager",
    "lease_store": "file",
    "lease_ttl_secs": 300,
    "max_history_tokens": null,
    "max_output_chars": 2000,
    "max_result_tokens": 20000,
    "min_free_tokens": 20000,
    "overflow_fallback": "error",
    "plan_functions": [
      "TodoWrite",
      "update_plan",
      "write_todos",
      "task_tracker",
      "todo_write"
    ],
    "policy_write_token": null,
    "profile": "faithful",
    "protect_recent_tokens": 40000,
    "protected_user_turns": 2,
    "reduce_to": 1.0,
    "report_prefix": false,
    "reserved_pct": 10,
    "reserved_tokens_cap": 20000,
    "retention": null,
    "session_store": "memory",
    "session_ttl_secs": 3600,
    "summarizer_fallback": "none",
    "summarizer_model": null,
    "summarizer_request": "rendered",
    "summarizer_timeout_ms": 320000,
    "summary_check": "off",
    "summary_placement": "system_prompt",
    "summary_reuse": false,
    "tail_turns": 2,
    "user_less_compaction": true,
    "working_set": false
  },
  "supported_targets": [
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-unknown-linux-musl",
    "aarch64-apple-darwin",
    "armv7-unknown-linux-gnueabihf"
  ],
  "profiles": {
    "faithful": {},
    "recommended": {
      "eager_compaction_at": 0.8,
      "overflow_fallback": "drop_oldest",
      "summarizer_fallback": "extractive",
      "summarizer_request": "conversation",
      "summary_check": "append",
      "summary_reuse": true,
      "working_set": true
    }
  }
}
"""


def test_manifest_text_is_exact():
    assert render_manifest() == EXPECTED
    assert manifest_json() + "\n" == EXPECTED


def test_top_level_key_order():
    assert list(manifest()) == ["name", "version", "description", "default_config", "supported_targets", "profiles"]


def test_contract():
    doc = manifest()
    assert doc["name"] == "context-manager"
    assert doc["version"] == __version__ == "0.1.0"
    assert doc["description"]
    assert list(doc["default_config"]) == sorted(doc["default_config"])
    assert parse_config_value(doc["default_config"]) == DEFAULT_CONFIG
    assert doc["supported_targets"]


def test_version_matches_the_installed_distribution():
    assert metadata.version("context-manager") == __version__


def test_non_ascii_is_kept_raw():
    assert "\u2014" in render_manifest()
    assert "\\u2014" not in render_manifest()


def test_manifest_flag_prints_the_document_and_exits_zero():
    done = subprocess.run([sys.executable, "-m", "context_manager", "--manifest"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0
    assert done.stdout == EXPECTED


# --- iii.worker.yaml and config.example.yaml ----------------------------------------------


def test_registry_manifest():
    doc = yaml.safe_load((ROOT / "iii.worker.yaml").read_text(encoding="utf-8"))
    assert doc["iii"] == "v1"
    assert doc["name"] == "context-manager"
    assert doc["language"] == "python"
    assert doc["manifest"] == "pyproject.toml"
    assert doc["tags"] == ["context", "tokens", "compaction", "pruning", "llm"]
    assert doc["description"] == manifest()["description"]
    assert set(doc["dependencies"]) == {"configuration", "llm-router"}
    assert doc["scripts"]["start"] == "context-manager"


def test_example_config_documents_every_key_with_its_default():
    text = (ROOT / "config.example.yaml").read_text(encoding="utf-8")
    assert read_seed_file(str(ROOT / "config.example.yaml"), environ={}) == DEFAULT_CONFIG
    keys = re.findall(r"^([a-z_]+):", text, flags=re.MULTILINE)
    assert sorted(keys) == sorted(DEFAULT_CONFIG.key_names())
    # Each key is preceded by a comment line explaining it.
    lines = text.splitlines()
    for key in keys:
        index = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
        assert lines[index - 1].startswith("#"), key
    assert "${" not in text  # comments are expanded too; the example must not warn
