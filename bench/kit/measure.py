"""Timing and memory primitives shared by every workload set."""

from __future__ import annotations

import gc
import math
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# "wall" (default) is latency; "cpu" is this process's CPU time, which a busy shared machine
# disturbs far less (time spent descheduled is not counted). Children inherit the choice.
CLOCKS = {"wall": time.perf_counter_ns, "cpu": time.process_time_ns}
CLOCK = os.environ.get("BENCH_CLOCK", "wall")
_now = CLOCKS[CLOCK]


def clock_ms(fn: Callable[[], T]) -> tuple[float, T]:
    """Time of one call in milliseconds, with a collection beforehand so earlier garbage is
    not charged to it."""
    gc.collect()
    start = _now()
    value = fn()
    return (_now() - start) / 1e6, value


def cpu_ms(fn: Callable[[], object]) -> float:
    """This process's CPU time of one call in milliseconds (the single-target scripts, which
    always report CPU time whatever ``BENCH_CLOCK`` says)."""
    start = time.process_time_ns()
    fn()
    return (time.process_time_ns() - start) / 1e6


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def p95(samples: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    return percentile(samples, 0.95)


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank ``q`` quantile (``q`` in (0, 1])."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def paired_ratio(measured: list[float], baseline: list[float]) -> float | None:
    """Median of run-by-run ratios: each pair ran back to back, so load from other processes
    on a shared machine hits both sides of a ratio alike."""
    ratios = [m / b for m, b in zip(measured, baseline) if b > 0]
    return median(ratios) if ratios else None


def summary(samples: list[float]) -> dict[str, float]:
    return {"median_ms": median(samples), "p95_ms": p95(samples), "runs": len(samples)}


def max_rss_bytes() -> int:
    """High-water resident set size of this process (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024
