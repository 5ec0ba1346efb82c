"""Timing and memory primitives shared by every workload set."""

from __future__ import annotations

import gc
import math
import resource
import statistics
import sys
import time
from typing import Callable


def clock_ms(fn: Callable[[], object]) -> tuple[float, object]:
    """Wall time of one call in milliseconds, with a collection beforehand so earlier garbage
    is not charged to it."""
    gc.collect()
    start = time.perf_counter_ns()
    value = fn()
    return (time.perf_counter_ns() - start) / 1e6, value


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def p95(samples: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def summary(samples: list[float]) -> dict[str, float]:
    return {"median_ms": median(samples), "p95_ms": p95(samples), "runs": len(samples)}


def max_rss_bytes() -> int:
    """High-water resident set size of this process (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024
