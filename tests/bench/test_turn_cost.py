"""The warm-turn instrument (``bench.speed.turn_cost``): its interleaved loop answers every
history under both configurations, and with ``BENCH_AHEAD_JOBS`` every call past the share
starts a job that runs after its timer."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.speed import runner
from bench.speed.sets import run_w5_interleaved

pytestmark = pytest.mark.slow  # writes the W5 workload and runs its loop twice per case


@pytest.mark.parametrize(("on", "jobs"), [('{"compact_ahead_at": 0.01}', [1] * 10), ("{}", [0] * 10)])
def test_the_interleaved_loop_times_both_sides_and_counts_the_jobs_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on: str, jobs: list[int]
) -> None:
    runner.write_workloads(tmp_path, ("W5",), runner.QUICK)
    monkeypatch.setenv("BENCH_AHEAD_JOBS", "1")
    monkeypatch.setenv("BENCH_CONFIG_OFF", "{}")
    monkeypatch.setenv("BENCH_CONFIG_ON", on)
    result = run_w5_interleaved(tmp_path)
    assert (len(result["off_ms"]), len(result["on_ms"]), result["jobs"]) == (10, 10, jobs)
    assert min(result["off_ms"] + result["on_ms"]) > 0
