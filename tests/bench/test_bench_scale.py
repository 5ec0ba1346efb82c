"""``python -m bench.scale``: the quick run at one and two processes answers every call exactly once with the
in-process answer and reports both phases; its checks and frame slicing hold on hand-made input
(timing values are not asserted)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from bench.scale.engine import _split
from bench.scale.report import checks, render
from bench.scale.workload import QUICK, digest, payloads
from testengine.process import processes_flag

ROOT = Path(__file__).resolve().parents[2]


def test_one_process_is_the_default_and_gets_no_flag():
    assert processes_flag(1) == ()
    assert processes_flag(3) == ("--processes", "3")


def test_a_sorted_key_result_frame_is_sliced_without_parsing():
    frame = b'{"function_id":"context::assemble","invocation_id":"bench-7","result":{"a":[1,"}"]},"type":"invocationresult"}'
    assert _split(frame) == ("bench-7", b'{"a":[1,"}"]}')
    error = b'{"error":{"code":"x","message":"y"},"function_id":"f","invocation_id":"bench-8","type":"invocationresult"}'
    assert _split(error) is None


def _phase(calls: int, answers: dict[str, list[str]], lost: int = 0) -> dict:
    kind = {"calls": calls, "wrong": 0, "calls_per_s": 1.0, "mb_per_s": 1.0, "p50_ms": 1.0, "p99_ms": 2.0}
    return {"seconds": 1.0, "lost": lost, "errors": 0, "error_examples": [], "answers": answers,
            "small": kind, "large": {**kind, "calls": 0}}


def _run(processes: int, answers: dict[str, list[str]], **ledger) -> dict:
    return {"processes": processes, "phases": {"small": _phase(2, answers)}, "expected": {"small#0": "d0"},
            "ledger": {"sent": 2, "answered": 2, "doubled": 0, "still_waiting": 0, **ledger}}


def test_checks_name_a_failed_run_a_doubled_reply_and_a_changed_answer():
    good = _run(1, {"small#0": ["d0"]})
    assert checks([good]) == {"ok": True, "problems": [], "identical_across_runs": None, "failed_runs": []}
    failed = checks([good, {"processes": 2, "phases": {}, "failed": "worker exited with status 2"}])
    assert failed["problems"] == ["processes=2: run failed: worker exited with status 2"]
    assert failed["failed_runs"] == [2] and failed["ok"] is False
    doubled = checks([_run(1, {"small#0": ["d0"]}, doubled=1)])
    assert doubled["problems"] == ["processes=1: sent 2, answered 2, answered twice 1, still waiting 0"]
    changed = checks([good, _run(2, {"small#0": ["d0", "d1"]})])
    assert changed["problems"] == ["processes=2: small#0 answered 2 different ways", "answers differ between the runs"]
    assert changed["identical_across_runs"] is False


def _measured(processes: int, small_p99: float, mixed_p99: float, calls_per_s: float, peak_kib: int) -> dict:
    def phase(p99: float, large_calls: int) -> dict:
        cpu = {"worker_tree": 2.0, "worker": {"parent": 0.5, "child 9": 1.5}, "engine_and_callers": 0.8,
               "sampler": 0.01, "others": 0.3}
        return {**_phase(10, {"small#0": ["d0"]}), "small": {"calls": 10, "wrong": 0, "calls_per_s": calls_per_s,
                "mb_per_s": 3.0, "p50_ms": 1.0, "p99_ms": p99},
                "large": {"calls": large_calls, "wrong": 0, "calls_per_s": 0.0, "mb_per_s": 0.0}, "cpu": cpu,
                "peak_rss_kib": peak_kib}

    return {**_run(processes, {}), "phases": {"small": phase(small_p99, 0), "mixed": phase(mixed_p99, 2)},
            "request_bytes": {"small": 320_000, "large": 6_000_000}, "peak_rss_kib": peak_kib,
            "hwm_kib": {"parent": peak_kib}}


def test_the_ratios_of_two_runs_are_printed_from_the_same_invocation():
    runs = [_measured(1, 10.0, 40.0, 100.0, 100 * 1024), _measured(2, 10.0, 15.0, 150.0, 180 * 1024)]
    text = render(runs, checks(runs), QUICK)
    assert "small-call p99 mixed / small-only, processes=1: 4.00× (40.0 / 10.0 ms)" in text
    assert "small-call p99 mixed / small-only, processes=2: 1.50× (15.0 / 10.0 ms)" in text
    assert "throughput 2/1, small-only calls/s: 1.50×" in text
    assert "throughput 2/1, mixed calls/s: 1.50×; mixed MB/s: 1.00×" in text
    assert "peak RSS of the worker tree 2/1: 1.80× (180 / 100 MB)" in text
    assert "processes=2 mixed: worker CPU s parent 0.50, child 9 1.50; engine+callers 0.80; sampler 0.01; other programs 0.30" in text
    assert "answers byte-identical across runs: yes" in text


@pytest.mark.slow  # starts a test engine and two workers, and builds the W1 and W3 histories
def test_quick_run_at_one_and_two_processes_answers_every_call_once_with_the_in_process_answer(tmp_path):
    from bench.kit.summariser import instant_summarizer
    from context_manager import call
    from context_manager.wire.codec import dumps_wire, loads

    out = tmp_path / "scale.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "bench.scale", "--quick", "--processes", "2", "--json", str(out)],
                          capture_output=True, cwd=ROOT, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("processes  phase"))
    assert re.split(r"\s{2,}", lines[header].strip()) == [
        "processes", "phase", "seconds", "small calls", "small/s", "small p50 ms", "small p99 ms", "large calls",
        "large/s", "MB/s", "worker CPU s", "cores", "engine+callers CPU s", "others CPU s", "peak RSS MB"]
    assert [line.split()[:2] for line in lines[header + 2:header + 6]] == [
        ["1", "small"], ["1", "mixed"], ["2", "small"], ["2", "mixed"]]
    assert "answers byte-identical across runs: yes" in lines
    assert "every call answered exactly once with the in-process answer: yes" in lines

    report = orjson.loads(out.read_bytes())
    assert report["checks"] == {"ok": True, "problems": [], "identical_across_runs": True, "failed_runs": []}
    # Every answer seen, per payload, is the library's own answer to that payload.
    expected = {}
    for pool in payloads(QUICK).values():
        for p in pool:
            summarizer = instant_summarizer if p.kind == "large" else None
            answer = dumps_wire(call("context::assemble", loads(p.data), summarizer=summarizer))
            expected[f"{p.kind}#{p.variant}"] = digest(answer)
    one, two = report["runs"]
    assert (one["processes"], one["worker_processes"]) == (1, 1)
    assert (two["processes"], two["worker_processes"]) == (2, 3)
    assert set(one["hwm_kib"]) == {"parent"}
    assert len(two["hwm_kib"]) == 3 and "parent" in two["hwm_kib"]
    for run in (one, two):
        phases = run["phases"]
        assert list(phases) == ["warm", "small", "mixed"]
        assert phases["small"]["small"]["calls"] > 0 and phases["small"]["large"]["calls"] == 0
        assert phases["mixed"]["small"]["calls"] > 0 and phases["mixed"]["large"]["calls"] > 0
        calls = sum(p[kind]["calls"] for p in phases.values() for kind in ("small", "large"))
        assert run["ledger"] == {"sent": calls, "answered": calls, "doubled": 0, "reparsed": 0, "still_waiting": 0}
        assert all(p["lost"] == p["errors"] == p["small"]["wrong"] == p["large"]["wrong"] == 0
                   for p in phases.values())
        assert set(phases["small"]["cpu"]) == {"worker_tree", "worker", "engine_and_callers", "sampler", "others"}
        assert run["peak_rss_kib"] > 0
        assert run["expected"] == expected
        for phase in phases.values():
            assert all(seen == [expected[label]] for label, seen in phase["answers"].items())
        assert set(phases["mixed"]["answers"]) == set(expected)
