"""The in-process criteria on a 1 MB history of 400 messages: ``python -m bench.speed.large_history``.

* ``context::count-tokens`` on the parsed request (like-for-like, the worker's own call
  context) ≤ 2× one ``orjson.dumps`` of the history;
* a pass-through ``context::assemble`` (a 1,000,000-token model, prune off: nothing capped,
  pruned or compacted), request bytes to response bytes ≤ 4× one ``orjson.loads`` of the request plus one
  ``orjson.dumps`` of the payload.

Each run sends a never-seen history (timestamps moved), so nothing is served from a cache;
ratios are medians of run-by-run ratios over process CPU time.
"""

from __future__ import annotations

import argparse
from typing import Any

import orjson

from bench.kit import workloads
from bench.kit.inproc import call_bytes, call_parsed
from bench.kit.measure import cpu_ms, median
from bench.kit.workloads import shifted

RUNS = 21


def payload() -> dict[str, Any]:
    messages = workloads.build_session(workloads.DEFAULT_SEED + 7, 400, 1_000_000, images=3)
    model = {"id": workloads.MODEL_ID, "provider": workloads.PROVIDER,
             "limits": {"context_window": 1_000_000, "max_output_tokens": 8_000}}
    # Old verbose results would be pruned even under budget: this history passes through.
    return {"messages": messages, "model": model, "system_prompt": workloads.SYSTEM_PROMPT,
            "options": {"allow_prune": False}}


def main(argv: list[str] | None = None) -> None:
    """No arguments: the history, the runs and the targets are fixed (above)."""
    argparse.ArgumentParser(prog="python -m bench.speed large-history", description=__doc__).parse_args(argv)
    base = orjson.loads(orjson.dumps(payload()))
    count_ratio, assemble_ratio = [], []
    applied = None
    for i in range(RUNS + 1):
        counted = shifted(base, 2 * i + 1)
        count_ms = cpu_ms(lambda: call_parsed("context::count-tokens", counted))
        dumps_ms = cpu_ms(lambda: orjson.dumps(counted["messages"]))
        request = orjson.dumps(shifted(base, 2 * i))
        answer: list[bytes] = []
        assemble_ms = cpu_ms(lambda: answer.append(call_bytes("context::assemble", request)))
        floor_ms = cpu_ms(lambda: orjson.dumps(orjson.loads(request)))
        applied = orjson.loads(answer[0])["applied"]
        if i:  # the first run warms up
            count_ratio.append(count_ms / dumps_ms)
            assemble_ratio.append(assemble_ms / floor_ms)
    mb = len(orjson.dumps(base["messages"])) / 1e6
    print(f"history: {len(base['messages'])} messages, {mb:.2f} MB; assemble applied: {applied}")
    c, a = median(count_ratio), median(assemble_ratio)
    print(f"count-tokens / dumps(history): {c:.2f}x (target <= 2x) {'PASS' if c <= 2 else 'MISS'}")
    print(f"assemble / (loads + dumps): {a:.2f}x (target <= 4x) {'PASS' if a <= 4 else 'MISS'}")


if __name__ == "__main__":
    main()
