"""The accuracy report script runs offline and is reproducible from its seed."""

import importlib.util
import random
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "counting" / "accuracy.py"


@pytest.fixture(scope="module")
def accuracy():
    spec = importlib.util.spec_from_file_location("bench_accuracy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sessions_are_seeded(accuracy):
    first = accuracy.session(random.Random(3), 4)
    again = accuracy.session(random.Random(3), 4)
    assert first == again
    assert {m["role"] for _, m in first} >= {"user", "assistant"}


def test_report_lists_both_encodings(accuracy, capsys):
    assert accuracy.main(["--sessions", "3", "--turns", "3", "--timing-mb", "0", "--replay-budget", ""]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sessions: 3 (seed 7)\n")
    assert "o200k_base   message" in out and "cl100k_base  session" in out


def test_timing_totals_agree_with_tiktoken(accuracy):
    # timing() asserts that cold, warm and tiktoken's own counts agree before reporting.
    result = accuracy.timing(20_000, seed=1, encoding_name="o200k_base", repeat=1)
    assert result["text_bytes"] >= 20_000 and result["tokens"] > 0
