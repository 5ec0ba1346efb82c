"""Reduced load for CI: 100 concurrent `context::assemble` calls, 1,000 in all, through the test
engine, to a worker in one process and to one with two serving processes (the full 500 x 10,000
run is `python scripts/load.py [--processes 2]`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .load import run_load
from .support import record


@pytest.mark.parametrize("processes", [1, 2], ids=["one-process", "two-processes"])
def test_concurrent_assemble_calls_are_all_answered_correctly(tmp_path: Path, processes: int) -> None:
    report = run_load(concurrency=100, total=1000, sample_every=100, workdir=tmp_path, processes=processes)
    record("load-ci" if processes == 1 else f"load-ci-{processes}-processes", **report.as_dict())
    assert report.errors == []
    assert (report.answered, report.wrong) == (1000, 0)
    # Nothing is left waiting anywhere, and the worker holds no extra threads or descriptors.
    assert (report.engine_pending_after, report.caller_pending_after) == (0, 0)
    assert report.threads_after == report.threads_before
    assert report.fds_after == report.fds_before
    # Resident memory is flat once warm (after the first 100 calls): the later half's peak stays
    # within 8 MiB per serving process of the peak before it.
    assert report.rss_growth_kib(warm_at=100) < processes * 8 * 1024, report.rss_kib
    assert report.p99_ms > 0
