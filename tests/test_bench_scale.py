"""``python -m bench.scale``: the quick run at one process answers every call exactly once with the
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
from engine_harness.process import processes_flag

from bench.scale_engine import _split
from bench.scale_report import checks
from bench.scale_workload import QUICK, digest, payloads

ROOT = Path(__file__).resolve().parent.parent


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


@pytest.mark.slow  # starts a test engine and a worker subprocess, and builds the W1 and W3 histories
def test_quick_run_at_one_process_answers_every_call_once_with_the_in_process_answer(tmp_path):
    from bench.child import instant_summarizer
    from context_manager import call
    from context_manager.wire.codec import dumps_wire, loads

    out = tmp_path / "scale.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "bench.scale", "--quick", "--processes", "1", "--json", str(out)],
                          capture_output=True, cwd=ROOT, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("processes  phase"))
    assert re.split(r"\s{2,}", lines[header].strip()) == [
        "processes", "phase", "seconds", "small calls", "small/s", "small p50 ms", "small p99 ms", "large calls",
        "large/s", "MB/s", "worker CPU s", "cores", "engine+callers CPU s", "peak RSS MB"]
    assert [line.split()[:2] for line in lines[header + 2:header + 4]] == [["1", "small"], ["1", "mixed"]]
    assert "every call answered exactly once with the in-process answer: yes" in lines

    report = orjson.loads(out.read_bytes())
    assert report["checks"] == {"ok": True, "problems": [], "identical_across_runs": None, "failed_runs": []}
    [run] = report["runs"]
    assert run["processes"] == 1 and run["worker_processes"] == 1
    phases = run["phases"]
    assert list(phases) == ["warm", "small", "mixed"]
    assert phases["small"]["small"]["calls"] > 0 and phases["small"]["large"]["calls"] == 0
    assert phases["mixed"]["small"]["calls"] > 0 and phases["mixed"]["large"]["calls"] > 0
    calls = sum(p[kind]["calls"] for p in phases.values() for kind in ("small", "large"))
    assert run["ledger"] == {"sent": calls, "answered": calls, "doubled": 0, "reparsed": 0, "still_waiting": 0}
    assert all(p["lost"] == p["errors"] == p["small"]["wrong"] == p["large"]["wrong"] == 0 for p in phases.values())
    assert set(phases["small"]["cpu"]) == {"worker_tree", "worker", "engine_and_callers", "sampler"}
    assert run["peak_rss_kib"] > 0 and set(run["hwm_kib"]) == {"parent"}

    # Every answer seen, per payload, is the library's own answer to that payload.
    expected = {}
    for pool in payloads(QUICK).values():
        for p in pool:
            summarizer = instant_summarizer if p.kind == "large" else None
            answer = dumps_wire(call("context::assemble", loads(p.data), summarizer=summarizer))
            expected[f"{p.kind}#{p.variant}"] = digest(answer)
    assert run["expected"] == expected
    for phase in phases.values():
        assert all(seen == [expected[label]] for label, seen in phase["answers"].items())
    assert set(phases["mixed"]["answers"]) == set(expected)
