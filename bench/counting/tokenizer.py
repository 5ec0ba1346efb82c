"""The tokenizer estimator's targets: ``python -m bench.counting.tokenizer [--quick] [--calls N]``.

* **cold W2**: ``context::assemble`` on W2 with ``estimator: auto`` and model ``gpt-4o``
  (o200k_base), every count uncached (token cache cleared, never-seen history), against
  tiktoken's own ``encode_ordinary_batch`` of the texts the estimator encodes for the same
  messages; target ≤ 1.3×.
* **warm W5**: calls 36–50 of the agent loop against cold calls on the same histories (token
  cache cleared, timestamps moved); target ≤ 0.10×.

Times are process CPU time; each ratio is the median of run-by-run ratios.
"""

from __future__ import annotations

import argparse
from typing import Any

import orjson

from bench.kit import workloads
from bench.kit.inproc import call_bytes, make_config
from bench.kit.measure import cpu_ms, median
from bench.kit.workloads import grown, shifted
from context_manager.adapters.tokenizers import SHARED_CACHE, tokenizer_for_model
from context_manager.adapters.tokenizers.estimator import message_pieces
from context_manager.wire import decode as t

MODEL = "gpt-4o"
FUNCTION_ID = "context::assemble"


def _on_gpt(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "model": {**payload["model"], "id": MODEL}}


def cold_w2(runs: int) -> dict[str, float]:
    config = make_config(estimator="auto")
    base = _on_gpt(orjson.loads(workloads.w2().request_bytes()))
    tokenizer = tokenizer_for_model(MODEL)
    assert tokenizer is not None, MODEL
    encoding = tokenizer.encoding
    call_bytes(FUNCTION_ID, orjson.dumps(shifted(base, 10**9)), config)  # loads the encoding
    calls, batches = [], []
    for i in range(1, runs + 1):
        payload = shifted(base, 10**6 * i)
        decoded = [t.decode_message(m) for m in payload["messages"] if m["role"] != "custom"]
        texts = [piece for m in decoded for piece in message_pieces(m)[0] if piece]
        request = orjson.dumps(payload)
        SHARED_CACHE.clear()
        calls.append(cpu_ms(lambda: call_bytes(FUNCTION_ID, request, config)))
        batches.append(cpu_ms(lambda: encoding.encode_ordinary_batch(texts)))
    return {"call_ms": median(calls), "batch_ms": median(batches),
            "ratio": median([c / b for c, b in zip(calls, batches)])}


def warm_w5(calls: int) -> dict[str, float]:
    config = make_config(estimator="auto")
    base = _on_gpt(orjson.loads(workloads.w2().request_bytes()))
    growth = orjson.loads(orjson.dumps(workloads.w5_growth(calls=calls)))
    call_bytes(FUNCTION_ID, orjson.dumps(shifted(base, 10**9)), config)
    first = max(2, calls - 14)
    warm = []
    for k in range(1, calls + 1):
        request = orjson.dumps(grown(base, growth, k))
        ms = cpu_ms(lambda: call_bytes(FUNCTION_ID, request, config))
        if k >= first:
            warm.append(ms)
    cold = []
    for k in range(first, calls + 1):
        request = orjson.dumps(shifted(grown(base, growth, k), 2 * 10**9 + k * 10**6))
        SHARED_CACHE.clear()
        cold.append(cpu_ms(lambda: call_bytes(FUNCTION_ID, request, config)))
    return {"warm_ms": median(warm), "cold_ms": median(cold),
            "ratio": median([w / c for w, c in zip(warm, cold)])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.counting.tokenizer", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="3 cold runs and a 20-call loop")
    args = parser.parse_args(argv)
    w2 = cold_w2(3 if args.quick else 9)
    w5 = warm_w5(20 if args.quick else workloads.W5_CALLS)
    print(f"W2 cold call {w2['call_ms']:.1f} ms, encode_ordinary_batch {w2['batch_ms']:.1f} ms: "
          f"{w2['ratio']:.2f}x (target <= 1.3x) {'PASS' if w2['ratio'] <= 1.3 else 'MISS'}")
    print(f"W5 warm call {w5['warm_ms']:.2f} ms, cold {w5['cold_ms']:.1f} ms: "
          f"{w5['ratio']:.3f}x (target <= 0.10x) {'PASS' if w5['ratio'] <= 0.10 else 'MISS'}")


if __name__ == "__main__":
    main()
