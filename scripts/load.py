"""Full load run: 500 concurrent `context::assemble` calls, 10,000 in all, through the in-process
test engine against a worker subprocess. Prints one JSON report; exit status 1 when any call is
unanswered or wrong, something is left pending, or resident memory keeps growing.

    python scripts/load.py [--concurrency 500] [--total 10000] [--processes N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "src")]

from reliability.load import LoadReport, run_load  # noqa: E402

RSS_GROWTH_LIMIT_KIB = 16 * 1024


def verdict(report: LoadReport, processes: int = 1) -> list[str]:
    problems = []
    if report.errors:
        problems.append(f"{len(report.errors)} calls failed, e.g. {report.errors[0]}")
    if report.answered != report.total or report.wrong:
        problems.append(f"answered {report.answered}/{report.total}, wrong {report.wrong}")
    if report.engine_pending_after or report.caller_pending_after:
        problems.append("invocations left pending")
    if (report.threads_after, report.fds_after) != (report.threads_before, report.fds_before):
        problems.append("worker threads or descriptors changed")
    warm_at = min(report.total, max(1000, report.total // 10))
    # Each serving process fills its own caches the first time a payload reaches it.
    growth = report.rss_growth_kib(warm_at)
    if growth > RSS_GROWTH_LIMIT_KIB * processes:
        problems.append(f"RSS peak rose by {growth} KiB in the later half of the run")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=500)
    parser.add_argument("--total", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=1,
                        help="worker processes (passed to the worker as --processes N when N is not 1)")
    parser.add_argument("--json", help="also write the report to this file")
    args = parser.parse_args()
    try:
        report = run_load(args.concurrency, args.total, sample_every=max(1, args.total // 20),
                          processes=args.processes)
    except AssertionError as exc:  # the worker did not start: say why, as a report
        tail = str(exc).strip().splitlines()[-1:] or ["no output"]
        result: dict = {"processes": args.processes, "problems": [f"worker did not start: {tail[0]}"]}
    else:
        result = {**report.as_dict(), "problems": verdict(report, args.processes)}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
