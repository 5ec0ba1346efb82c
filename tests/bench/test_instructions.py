"""The instruction-count A/B refuses what it cannot measure, saying why, before running anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.speed import instructions

ROOT = Path(__file__).resolve().parents[2]


def test_a_tree_without_the_package_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instructions.shutil, "which", lambda name: "/usr/bin/valgrind")
    assert instructions.main([str(tmp_path), str(ROOT), "--sets", "W1,W9"]) == 2
    assert capsys.readouterr().err == (
        f"unknown set(s): ['W9']; not a source tree: ['{tmp_path}']; --calls must be 1..9\n")


def test_without_valgrind_it_says_how_to_get_it(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    assert instructions.main([str(ROOT), str(ROOT)]) == 2
    assert capsys.readouterr().err == "valgrind is not installed (apt-get install -y valgrind)\n"


def test_the_driver_counts_calls_after_one_warm_up() -> None:
    # W5's loop has ten histories: the warm-up takes the first, --calls at most the other nine.
    assert instructions.SETS == ("W1", "W2", "W5")
    assert "histories[1:1 + n]" in instructions.DRIVER and "quick=True" in instructions.DRIVER
