"""``python -m bench.latency [--realdata DIR] [--summarizer-latency 5,30,120] [--window 32000]
[--max-output 4000] [--step-time 10] [--sessions A,B] [--modes ...] [--guidance-hook] [--per-session] [--json FILE]
[--progress] [--trace FILE]``.

Replays the sessions of ``--realdata`` (the generated ones of ``bench/kit/sessions`` without it)
once per mode and prints one Markdown table per summariser latency L: the worker with ``profile:
recommended`` (inline compaction), the same with ``compact_ahead_at: 0.8`` when the worker accepts
the key (else the row says ``n/a (key not supported)``), and the league's peers. Definitions
(clock, step times, wait, p99, recall, cost model): ``bench/latency/__init__.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench.kit.loop import GuidanceHook
from bench.kit.peers import Peer
from bench.kit.sessions import pick_named, sessions_of
from bench.latency.clock import DEFAULT_LATENCIES, DEFAULT_STEP_SECONDS
from bench.latency.peers import LATENCY_PEERS
from bench.latency.run import LEGEND, measure, session_table, table
from bench.latency.worker import WORKER_MODES, WorkerMode


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__)
    parser.add_argument("--realdata", "--data", dest="data", type=Path,
                        help="folder of recorded sessions (default: the generated ones)")
    parser.add_argument("--summarizer-latency", default=",".join(f"{x:g}" for x in DEFAULT_LATENCIES),
                        help="comma-separated seconds per summariser call (default %(default)s)")
    parser.add_argument("--window", type=int, default=32_000, help="the model's context window")
    parser.add_argument("--max-output", type=int, default=4_000, help="the model's output cap")
    parser.add_argument("--step-time", type=float, default=DEFAULT_STEP_SECONDS,
                        help="the agent's seconds between model calls where the source recorded no times")
    parser.add_argument("--sessions", help="comma-separated session names (default: every one)")
    parser.add_argument("--modes", help="comma-separated mode names (default: all)")
    parser.add_argument("--guidance-hook", action="store_true",
                        help="run the kit's pre-generate hook in the worker's turn loop (bench.kit.loop.GuidanceHook)")
    parser.add_argument("--per-session", action="store_true",
                        help="also print, per session and L, the step time source, the agent time and every mode that waited")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--trace", type=Path,
                        help="also write, per worker mode, L and session, every call's trace (how it "
                             "compacted, the jobs it started, whether it rewrote the prefix) as JSON")
    parser.add_argument("--progress", action="store_true", help="time each mode on stderr")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    sessions = sessions_of(args.data, args.sessions)
    if sessions is None:
        return 2
    try:
        latencies = [float(x) for x in args.summarizer_latency.split(",") if x.strip()]
    except ValueError:
        print(f"--summarizer-latency: not a list of seconds: {args.summarizer_latency}", file=sys.stderr)
        return 2
    every: list[WorkerMode | Peer] = [*WORKER_MODES, *LATENCY_PEERS]
    modes = every
    if args.modes:
        picked_modes = pick_named(every, args.modes, "mode(s)", lambda m: m.name)
        if picked_modes is None:
            return 2
        modes = picked_modes
    started = time.monotonic()
    rows = measure(sessions, args.window, args.max_output, latencies, args.step_time, modes, args.progress,
                   GuidanceHook() if args.guidance_hook else None)
    for latency in latencies:
        print(f"### L = {latency:g} s, {args.window}/{args.max_output} ({len(sessions)} sessions)\n")
        print(table([r for r in rows if r.latency == latency]))
        print()
        if args.per_session:
            print(session_table([r for r in rows if r.latency == latency and r.supported], sessions, args.step_time))
            print()
    print(LEGEND)
    print(f"\n{len(sessions)} session(s), {time.monotonic() - started:.0f} s.")
    if args.json is not None:
        args.json.write_text(json.dumps([r.as_json() for r in rows], indent=1) + "\n")
    if args.trace is not None:
        args.trace.write_text(json.dumps([t for r in rows for t in r.trace_json()]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
