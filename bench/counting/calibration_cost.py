"""What ``count_calibration: usage`` adds to a warm worker turn (W5's agent loop).

    python -m bench.counting.calibration_cost [--calls 30] [--rounds 7]

Runs W5's growing history through a fresh ``WorkerTurn`` per measurement, with the key off and
on, and prints the CPU time per warm turn (turns 6..N) of each, the part spent choosing the
anchor and keeping the ledger, and the ratio on / off. Three inputs: W5 with the ``usage``
members removed (both modes take the same decisions: the difference is the calibration's own
cost); W5 with the ``usage`` a provider would write (each assistant message carries the count of
the context the loop sent before it: the answer's ``token_count``, as a provider whose count
matches the estimate would bill it); and W5 as generated (its ``usage`` members are random, far
below any real count, so the calibrated calls prune less and return more). Both modes see the same frames from the same cold state (the shared
message memo and sent ledger are emptied before each measurement); the modes alternate, and the
medians over ``--rounds`` measurements are compared, so the machine's drift hits both alike.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

import orjson

import context_manager.core.assembly.finish as finish_module
import context_manager.core.assembly.prepare as prepare_module
from bench.kit import workloads
from bench.kit.inproc import WorkerTurn, bench_config
from context_manager.core.counting.calibration import SHARED_LEDGER
from context_manager.core.memo import SHARED_MEMO

WARMUP = 5
MODES: tuple[Literal["off", "usage"], ...] = ("off", "usage")


def _timed(function: Callable[..., Any], spent: dict[str, float]) -> Callable[..., Any]:
    def wrapper(*args: Any) -> Any:
        start = time.process_time()
        try:
            return function(*args)
        finally:
            spent["calibration"] += time.process_time() - start
    return wrapper


def _strip(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != "usage"}


def _requests(calls: int, usage: str) -> list[bytes]:
    """The request bytes of calls 1..N of W5 (W2 quick grown by one round per call); ``usage``
    is ``none``, ``provider`` or ``generated`` (see the module docstring)."""
    base = workloads._assemble_request(workloads.session_for("W2", quick=True), workloads.DEFAULT_SEED)
    growth = workloads.w5_growth(calls=calls)
    if usage == "generated":
        return [orjson.dumps({**base, "messages": base["messages"] + [m for r in growth[:k] for m in r]})
                for k in range(1, calls + 1)]
    history = [_strip(m) for m in base["messages"]]
    requests: list[bytes] = []
    sent = _sent_tokens({**base, "messages": history})
    for round_ in growth:
        for message in round_:
            message = _strip(message)
            if usage == "provider" and message["role"] == "assistant":
                message["usage"] = {"input": sent, "output": 0, "cache_read": 0, "cache_write": 0}
            history.append(message)
        request = {**base, "messages": list(history)}
        requests.append(orjson.dumps(request))
        if usage == "provider":
            sent = _sent_tokens(request)
    return requests


def _sent_tokens(request: dict[str, Any]) -> int:
    """The count of the context assemble returns for ``request`` (calibration off)."""
    from context_manager import call

    return int(call("context::assemble", request, config={"count_calibration": "off"})["token_count"])


def measure(requests: list[bytes], mode: Literal["off", "usage"], spent: dict[str, float]) -> tuple[float, float, int]:
    """(CPU seconds per warm turn, of which calibration code, reply bytes per warm turn) of one
    fresh worker over ``requests``."""
    SHARED_MEMO.clear()
    SHARED_LEDGER.clear()
    turn = WorkerTurn()
    turn.worker.services.config = replace(bench_config(), count_calibration=mode)
    frames = [turn.frame("context::assemble", request, k) for k, request in enumerate(requests, 1)]
    total = 0.0
    replied = 0
    for k, frame in enumerate(frames):
        if k == WARMUP:
            spent["calibration"] = 0.0
        start = time.process_time()
        reply = turn(frame)
        if k >= WARMUP:
            total += time.process_time() - start
            replied += len(reply)
    turn.loop.close()
    turns = len(frames) - WARMUP
    return total / turns, spent["calibration"] / turns, replied // turns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=7, help="measurements per mode; medians are compared")
    args = parser.parse_args(argv)
    spent = {"calibration": 0.0}
    prepare_module.usage_calibration = _timed(prepare_module.usage_calibration, spent)
    finish_module.remember_sent = _timed(finish_module.remember_sent, spent)
    print(f"W5 warm turns {WARMUP + 1}..{args.calls}, CPU ms per turn, median of {args.rounds} "
          f"alternating measurements per mode")
    inputs = (("usage members removed (same decisions)", "none"),
              ("usage a provider would write", "provider"),
              ("W5 as generated (random usage)", "generated"))
    for label, usage in inputs:
        requests = _requests(args.calls, usage)
        times: dict[str, list[float]] = {mode: [] for mode in MODES}
        calibration: list[float] = []
        replies: dict[str, int] = {}
        for round_ in range(args.rounds):
            for mode in MODES if round_ % 2 == 0 else MODES[::-1]:
                per_turn, in_calibration, replies[mode] = measure(requests, mode, spent)
                times[mode].append(per_turn)
                if mode == "usage":
                    calibration.append(in_calibration)
        off, on = (statistics.median(times[mode]) * 1000 for mode in MODES)
        # A larger reply (less reduced) costs its serialization: not calibration work.
        print(f"{label:<40} off {off:.3f}  usage {on:.3f}  ratio {on / off:.3f}  "
              f"calibration code {statistics.median(calibration) * 1000:.3f} ms  "
              f"reply KB off {replies['off'] / 1000:.0f} usage {replies['usage'] / 1000:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
