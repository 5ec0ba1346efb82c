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

from .corpus import (
    ALL_FUNCTIONS,
    CLI_SAMPLE,
    KNOWN_BUG_CASES,
    Case,
    Outcome,
    allowed_prefixes,
    cases,
    problem,
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
