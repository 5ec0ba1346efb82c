"""Where the time goes: ``python -m bench.speed.profile [W1 W2 W4 ...] [--runs N] [--top K] [--sort tottime]``.

Profiles the in-process bytes-to-bytes call (cProfile) over ``N`` never-seen-before variants of
each workload and prints the top functions, plus a phase split measured without the profiler:
parse, decode, handler core, write.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sys
import tempfile
from typing import Any

import anyio
import orjson

from bench.kit import workloads
from bench.kit.inproc import call_bytes, make_config
from bench.kit.measure import clock_ms, median
from bench.kit.summariser import instant_summarizer
from bench.kit.workloads import shifted
from context_manager.core.settings import DEFAULT_CONFIG

SETS = {"W1": workloads.w1, "W2": workloads.w2, "W2-prune": workloads.w2_prune, "W3": workloads.w3,
        "W4": workloads.w4}


def _call_args(name: str) -> tuple[Any, Any]:
    """(config, summariser) of a set: W3 compacts with the instant summariser in a scratch lease dir."""
    if name != "W3":
        return DEFAULT_CONFIG, None
    return make_config(lease_dir=tempfile.mkdtemp(prefix="bench-leases-")), instant_summarizer


def profile(name: str, runs: int, top: int, sort: str) -> str:
    workload = SETS[name]()
    base = workload.payload
    requests = [orjson.dumps(shifted(base, i + 1)) for i in range(runs)]
    config, summarizer = _call_args(name)
    call_bytes(workload.function_id, orjson.dumps(shifted(base, 10**6)), config, summarizer)  # warm-up
    profiler = cProfile.Profile()
    profiler.enable()
    for request in requests:
        call_bytes(workload.function_id, request, config, summarizer)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats(sort).print_stats(top)
    return f"== {name} {workload.function_id} ({runs} calls, sorted by {sort})\n" + out.getvalue()


def phases(name: str, runs: int) -> dict[str, float]:
    """Median milliseconds of each phase of a call, and of the orjson floor pieces."""
    from context_manager.api import build_context, call_async
    from context_manager.handlers import registry
    from context_manager.wire.codec import dumps_wire, loads

    workload = SETS[name]()
    handler_module = {
        "context::assemble": "context_manager.handlers.assemble",
        "context::prune": "context_manager.handlers.prune",
        "context::count-tokens": "context_manager.handlers.count_tokens",
    }[workload.function_id]
    module = sys.modules[handler_module]
    decode = getattr(module, "decode_request", None)
    samples: dict[str, list[float]] = {}

    def add(key: str, ms: float) -> None:
        samples.setdefault(key, []).append(ms)

    for i in range(runs + 1):
        request = orjson.dumps(shifted(workload.payload, i + 1))
        parse_ms, payload = clock_ms(lambda: loads(request))
        ctx = build_context(*_call_args(name))
        handler = registry.FUNCTIONS[workload.function_id]
        call_ms, result = clock_ms(lambda: anyio.run(call_async, workload.function_id, payload, ctx))
        reused_ms, _ = clock_ms(lambda: _LOOP.run_until_complete(handler(payload, ctx)))
        write_ms, _ = clock_ms(lambda: dumps_wire(result))
        if decode is not None:
            decode_ms, _ = clock_ms(lambda: decode(payload))
        else:
            decode_ms = None
        dumps_msgs_ms, _ = clock_ms(lambda: orjson.dumps(payload["messages"]))
        if i == 0:
            continue
        add("parse (loads)", parse_ms)
        add("handler via anyio.run", call_ms)
        add("handler on a reused loop", reused_ms)
        if decode_ms is not None:
            add("decode_request only", decode_ms)
        add("write (dumps_wire)", write_ms)
        add("orjson.dumps(messages)", dumps_msgs_ms)
    return {key: median(values) for key, values in samples.items()}


_LOOP = asyncio.new_event_loop()  # what a per-thread reused loop would cost instead of anyio.run


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.speed.profile")
    parser.add_argument("sets", nargs="*", default=["W1", "W2", "W4"])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--sort", default="tottime")
    args = parser.parse_args(argv)
    for name in args.sets:
        print(profile(name, args.runs, args.top, args.sort))
        print(f"== {name} phases (median ms over {args.runs} calls)")
        for key, value in phases(name, args.runs).items():
            print(f"  {key:28} {value:8.3f}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
