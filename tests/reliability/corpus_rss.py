"""Run the malformed-input corpus in this process several times and print resident-memory
figures as one JSON line (run as a subprocess so the measurement is not the test runner's)."""

from __future__ import annotations

import gc
import json
import logging
import sys

from .corpus import KNOWN_BUG_CASES, cases, run_in_process


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("VmRSS not found")


def one_pass() -> int:
    count = 0
    for case in cases():
        if case.id not in KNOWN_BUG_CASES:
            run_in_process(case)
            count += 1
    gc.collect()
    return count


def main(passes: int = 3) -> None:
    logging.disable(logging.CRITICAL)
    start = rss_kib()
    count = one_pass()  # warm-up: imports, tokenizer tables, allocator arenas
    warm = rss_kib()
    after = []
    for _ in range(passes - 1):
        one_pass()
        after.append(rss_kib())
    print(json.dumps({"cases": count, "passes": passes, "start_kib": start, "warm_kib": warm,
                      "after_kib": after}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
