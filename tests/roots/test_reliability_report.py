"""RELIABILITY.md keeps the figures of every property suite: each suite records its outcomes
under its own key, and the report reads each suite's figures from that key."""

from __future__ import annotations

import ast
import importlib.util
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from tests.reliability.support import record_outcomes

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "reliability_report.py"
PROPERTIES_DIR = ROOT / "tests" / "properties"


@pytest.fixture(scope="module")
def report() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reliability_report", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def figures_key(suite: str) -> str | None:
    """The ``FIGURES_KEY`` a property suite records under, read from its source."""
    tree = ast.parse((PROPERTIES_DIR / suite).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["FIGURES_KEY"]:
            return ast.literal_eval(node.value)
    return None


def test_each_property_suite_records_under_the_key_the_report_reads(report: ModuleType) -> None:
    suites = {file for file, _, _ in report.PROPERTIES.values()}
    recording = {suite: figures_key(suite) for suite in suites if figures_key(suite) is not None}
    assert recording == report.PROPERTY_FIGURES
    assert len(set(recording.values())) == len(recording) == 2


def test_the_report_keeps_the_figures_of_both_suites(report: ModuleType, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "figures.jsonl"
    monkeypatch.setenv("RELIABILITY_FIGURES", str(path))
    # What each suite's module fixture records after its run (the stateful suite may finish first).
    record_outcomes(report.PROPERTY_FIGURES["test_stateful_properties.py"],
                    Counter({("opt-in", "cases"): 250, ("opt-in", "compacted"): 44}))
    record_outcomes(report.PROPERTY_FIGURES["test_properties.py"],
                    Counter({("assemble", "cases"): 2000, ("assemble", "pruned"): 95}))
    cases = [{"file": file, "name": test, "time": 1.0, "status": "passed"}
             for file, test, _ in report.PROPERTIES.values()]

    text = report.render(cases, report.read_figures(path), {}, True, 1.0, 2000)

    rows = {line.split(" | ")[0].strip("|` "): line for line in text.splitlines() if line.startswith("| `")}
    assert "| 2000 | pruned 95 | pass |" in rows["assemble"]
    assert "| 250 | compacted 44 | pass |" in rows["opt-in"]
