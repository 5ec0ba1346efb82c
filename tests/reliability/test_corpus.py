"""The malformed-input corpus through the library entry (every case), the command line (a
representative sample) and resident memory across repeated runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import yaml

from .corpus import (
    ALL_FUNCTIONS,
    CLI_SAMPLE,
    CONFIG_CLI_SAMPLE,
    CONFIG_KEYS,
    KNOWN_BUG_CASES,
    Case,
    ConfigCase,
    Outcome,
    allowed_prefixes,
    cases,
    config_cases,
    problem,
    run_config_in_process,
    run_in_process,
)
from .engine_support import FIXED_MMAP_THRESHOLD
from .support import record

TESTS_DIR = Path(__file__).resolve().parents[1]
CORPUS = [c for c in cases() if c.id not in KNOWN_BUG_CASES]
BY_ID = {c.id: c for c in CORPUS}


def test_the_corpus_is_large_and_covers_every_function() -> None:
    assert len(CORPUS) >= 100
    assert {c.function_id for c in CORPUS} == set(ALL_FUNCTIONS)
    names = {c.name for c in CORPUS}
    for kind in ("empty body", "invalid utf-8", "lone high surrogate escape", "nesting 5000 deep",
                 "50 MB string", "role system", "block type video", "timestamp beyond u64",
                 "context_window negative"):
        assert kind in names, kind


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_each_case_gets_a_clean_answer_in_process(case: Case) -> None:
    outcome = run_in_process(case)
    record("corpus-in-process", case=case.id, function=case.function_id, kind=outcome.kind,
           message=outcome.message[:120], problem=problem(case, outcome))
    assert problem(case, outcome) is None, (case.id, outcome)


@pytest.mark.parametrize("case_id", CLI_SAMPLE)
def test_the_command_line_answers_one_json_line(case_id: str, tmp_path: Path) -> None:
    case = BY_ID[case_id]
    body = case.raw()
    assert body is not None
    source = tmp_path / "payload.json"
    source.write_bytes(body)
    done = subprocess.run(
        [sys.executable, "-m", "context_manager", "call", case.function_id, "--input", str(source)],
        capture_output=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "LOG_LEVEL": "error"},
    )
    record("corpus-cli", case=case_id, exit=done.returncode,
           stderr=done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:])
    assert b"Traceback" not in done.stderr
    if done.returncode == 0:
        assert not case.must_fail, case_id
        assert done.stdout.endswith(b"\n") and done.stdout.count(b"\n") == 1
        orjson.loads(done.stdout)
        return
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    envelope = json.loads(lines[-1])
    assert set(envelope) == {"code", "message"}
    outcome = Outcome("error", envelope["code"], envelope["message"])
    assert problem(case, outcome) is None, envelope
    assert envelope["message"].startswith(allowed_prefixes(case.function_id))


def test_memory_returns_to_its_warm_level_after_repeated_corpus_runs() -> None:
    done = subprocess.run([sys.executable, "-m", "reliability.corpus_rss", "3"],
                          capture_output=True, timeout=600, cwd=TESTS_DIR, check=True,
                          env={**os.environ, **FIXED_MMAP_THRESHOLD})
    figures = json.loads(done.stdout.decode().splitlines()[-1])
    record("corpus-rss", **figures)
    # After the warm-up pass, two more passes (each holding 50 MB strings at times) leave the
    # resident set within 2 MiB of where it was.
    assert max(figures["after_kib"]) - figures["warm_kib"] <= 2 * 1024, figures


# ---------------------------------------------------------------- configuration values

CONFIG_CORPUS = list(config_cases())


def test_the_configuration_corpus_covers_every_key() -> None:
    from context_manager.config.parse import KEY_DECODERS

    assert tuple(CONFIG_KEYS) == tuple(KEY_DECODERS)
    assert len(CONFIG_CORPUS) >= 200


@pytest.mark.parametrize("case", CONFIG_CORPUS, ids=[c.id for c in CONFIG_CORPUS])
def test_each_wrong_configuration_is_refused_cleanly(case: ConfigCase) -> None:
    outcome = run_config_in_process(case)
    record("corpus-config", case=case.id, kind=outcome.kind, message=outcome.message[:120])
    assert outcome.kind == "error", (case.id, outcome)
    assert outcome.message.startswith("json parse: "), outcome.message
    assert "Traceback" not in outcome.message


@pytest.mark.parametrize("case_id", CONFIG_CLI_SAMPLE)
def test_the_command_line_refuses_a_wrong_configuration_file_with_one_line(case_id: str, tmp_path: Path) -> None:
    case = {c.id: c for c in CONFIG_CORPUS}[case_id]
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(case.value))
    done = subprocess.run(
        [sys.executable, "-m", "context_manager", "call", "context::count-tokens", "--config", str(config)],
        input=b'{"model": {"id": "m"}, "messages": []}', capture_output=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "LOG_LEVEL": "error"},
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stdout == b""
    assert done.stderr.decode().splitlines()[-1].startswith("context-manager: yaml parse: ")
    assert b"Traceback" not in done.stderr
