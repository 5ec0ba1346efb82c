"""What one workload set's child process measures (``bench.speed.child`` runs it).

Every timed call except W5's warm sequence sees a history it has never seen: run ``i`` shifts
every message timestamp by ``i`` milliseconds, which changes the bytes (and any content-keyed
cache key) without changing the work.
"""


from __future__ import annotations

import gc
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

from bench.kit.inproc import WorkerTurn, call_bytes, call_parsed, make_config
from bench.kit.measure import clock_ms, max_rss_bytes, summary
from bench.kit.summariser import instant_summarizer
from bench.kit.workloads import grown, shifted
from bench.speed import langchain_peer as peer


def floor(request: bytes, answer: Any) -> bytes:
    """The least any worker must do: read the request once, write the answer once."""
    orjson.loads(request)
    return orjson.dumps(answer, option=orjson.OPT_SORT_KEYS)


def _tiny_call() -> None:
    """Load every lazily imported module before the idle measurement."""
    request = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}],
               "model": {"id": "m", "limits": {"context_window": 1000, "max_output_tokens": 10}}}
    call_bytes("context::count-tokens", orjson.dumps(request))
    call_bytes("context::assemble", orjson.dumps(request))


_FUNCTION = {"W1": "context::assemble", "W2": "context::assemble", "W2-prune": "context::prune",
             "W3": "context::assemble", "W4": "context::count-tokens"}


def run_set(name: str, data_dir: Path, runs: int) -> dict[str, Any]:
    function_id = _FUNCTION[name]
    summarizer = instant_summarizer if name == "W3" else None
    lease_dir = tempfile.mkdtemp(prefix="bench-leases-")
    config = make_config(lease_dir=lease_dir)
    _tiny_call()
    raw = (data_dir / f"{name}.json").read_bytes()
    idle = max_rss_bytes()
    out: dict[str, Any] = {"set": name, "function_id": function_id, "request_bytes": len(raw)}

    try:
        first = call_bytes(function_id, raw, config, summarizer)
    except Exception as exc:  # a pending feature (e.g. compaction) makes the whole set pending
        out["pending"] = f"{type(exc).__name__}: {exc}"
        return out
    peak = max_rss_bytes()
    out["rss"] = {"idle": idle, "peak": peak}
    response = orjson.loads(first)
    out["applied"] = response.get("applied")
    if name == "W3" and not (response.get("applied") or {}).get("compacted"):
        out["pending"] = "compaction did not run with the summariser given"
        return out

    base = orjson.loads(raw)
    usable = response.get("usable")
    lc = peer.to_langchain(base["messages"]) if peer.AVAILABLE else None
    tools = base.get("tools")

    converted = lc if lc is not None else []  # do_peer runs only when there is a peer

    def do_peer() -> object:
        if function_id == "context::assemble":
            return peer.trim(converted, usable)
        if function_id == "context::count-tokens":
            return peer.count(converted, tools)
        return None

    has_peer = lc is not None and function_id != "context::prune"
    samples: dict[str, list[float]] = {"call": [], "like": [], "floor": [], "peer": [], "dumps_messages": []}

    def one_run(i: int, record: bool) -> None:
        request = orjson.dumps(shifted(base, 2 * i))
        ms, answer = clock_ms(lambda: call_bytes(function_id, request, config, summarizer))
        answer_obj = orjson.loads(answer)
        floor_ms, _ = clock_ms(lambda: floor(request, answer_obj))
        parsed = shifted(base, 2 * i + 1)
        like_ms, _ = clock_ms(lambda: call_parsed(function_id, parsed, config, summarizer))
        dumps_ms, _ = clock_ms(lambda: orjson.dumps(parsed["messages"]))
        peer_ms = clock_ms(do_peer)[0] if has_peer else None
        if record:
            samples["call"].append(ms)
            samples["floor"].append(floor_ms)
            samples["like"].append(like_ms)
            samples["dumps_messages"].append(dumps_ms)
            if peer_ms is not None:
                samples["peer"].append(peer_ms)

    one_run(0, record=False)  # warm-up, discarded
    for i in range(1, runs + 1):
        one_run(i, record=True)
    out["stats"] = {key: summary(values) for key, values in samples.items() if values}
    out["samples"] = {key: values for key, values in samples.items() if values}
    out["usable"] = usable
    out["messages"] = len(base["messages"])
    return out


def run_w5_warm(data_dir: Path) -> dict[str, Any]:
    """The agent loop: call ``k`` sees call ``k-1``'s history plus one round, in one process,
    served the way the worker serves an engine invocation (see ``WorkerTurn``)."""
    base = orjson.loads((data_dir / "W2.json").read_bytes())
    growth = orjson.loads((data_dir / "W5-growth.json").read_bytes())
    _tiny_call()
    turn = WorkerTurn()
    # BENCH_NAMESPACE: every call names that namespace, which has a settings policy (the worker's
    # own tail_turns, so the work is the same): the cost of resolving and serving a policy.
    namespace = os.environ.get("BENCH_NAMESPACE")
    if namespace:
        turn.publish({"surface": "settings", "namespace": namespace,
                      "document": {"tail_turns": turn.worker.services.config.tail_turns}})
    # BENCH_AHEAD_JOBS=1: the worker has a summariser, and the jobs a call starts
    # (``compact_ahead_at``) run to their end after its timer stops (``WorkerTurn.settle_jobs``).
    settle = os.environ.get("BENCH_AHEAD_JOBS") == "1"
    if settle:
        turn.summarize_with(instant_summarizer)
    calls, floors, jobs = [], [], []
    for k in range(1, len(growth) + 1):
        history = grown(base, growth, k)
        if namespace:
            history = {**history, "options": {**(history.get("options") or {}), "namespace": namespace}}
        request = orjson.dumps(history)
        frame = turn.frame("context::assemble", request, k)
        ms, reply = clock_ms(lambda: turn(frame))
        answer_obj = orjson.loads(reply)["result"]
        floor_ms, _ = clock_ms(lambda: floor(request, answer_obj))
        calls.append(ms)
        floors.append(floor_ms)
        if settle:
            jobs.append(turn.settle_jobs())
            gc.collect()  # the job's garbage is collected here, not inside the next timed call
    return {"set": "W5-warm", "calls_ms": calls, "floor_ms": floors, "jobs": jobs,
            "rss": {"peak": max_rss_bytes()}}


def run_w5_interleaved(data_dir: Path) -> dict[str, Any]:
    """The agent loop of :func:`run_w5_warm` twice in one process, call by call: one worker under
    ``BENCH_CONFIG_OFF``, one under ``BENCH_CONFIG_ON`` (JSON objects), each with its own caches,
    the order of each call's pair alternating and the garbage collected before each timed call,
    so that drift of a shared machine falls on both alike. With ``BENCH_AHEAD_JOBS=1`` both have
    a summariser and the jobs a call starts run to their end after its timer
    (``WorkerTurn.settle_jobs``)."""
    from context_manager.config.parse import parse_config_value

    base = orjson.loads((data_dir / "W2.json").read_bytes())
    growth = orjson.loads((data_dir / "W5-growth.json").read_bytes())
    _tiny_call()
    settle = os.environ.get("BENCH_AHEAD_JOBS") == "1"
    turns = {}
    for side in ("off", "on"):
        turn = WorkerTurn()
        turn.worker.services.config = parse_config_value(orjson.loads(os.environ[f"BENCH_CONFIG_{side.upper()}"]))
        if settle:
            turn.summarize_with(instant_summarizer)
        turns[side] = turn
    times: dict[str, list[float]] = {"off": [], "on": []}
    jobs: list[int] = []
    for k in range(1, len(growth) + 1):
        frame = WorkerTurn.frame("context::assemble", orjson.dumps(grown(base, growth, k)), k)
        for side in (("off", "on") if k % 2 else ("on", "off")):
            turn = turns[side]
            gc.collect()
            ms, _ = clock_ms(lambda: turn(frame))
            times[side].append(ms)
            if settle:
                started = turn.settle_jobs()
                if side == "on":
                    jobs.append(started)
    return {"set": "W5-interleaved", "off_ms": times["off"], "on_ms": times["on"], "jobs": jobs}


def run_w5_cold(data_dir: Path, indices: list[int]) -> dict[str, Any]:
    """Cold calls on the same histories, in a process as warmed up as the loop's.

    History ``k`` is sent with every timestamp moved by its own offset, so no call here extends
    or repeats a history this process (or any content-keyed cache) has seen: same work, no reuse.
    """
    base = orjson.loads((data_dir / "W2.json").read_bytes())
    growth = orjson.loads((data_dir / "W5-growth.json").read_bytes())
    _tiny_call()
    turn = WorkerTurn()
    for i in range(3):  # the same amount of code warm-up as the loop's first calls
        turn(turn.frame("context::assemble", orjson.dumps(shifted(base, 10**9 + i)), i))
    cold = []
    for k in indices:
        request = orjson.dumps(shifted(grown(base, growth, k), 2 * 10**9 + k * 10**6))
        frame = turn.frame("context::assemble", request, k)
        cold.append(clock_ms(lambda: turn(frame))[0])
    return {"set": "W5-cold", "indices": indices, "calls_ms": cold}
