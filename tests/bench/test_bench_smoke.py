"""The benchmark suite runs: seeded workloads are reproducible and sized as stated, and the
quick table has its rows (timing values are not asserted)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from bench.kit import workloads as w

pytestmark = pytest.mark.slow  # builds every workload and runs the benchmark command

ROOT = Path(__file__).resolve().parents[2]


def _results(messages):
    return [m for m in messages if m["role"] == "function_result"]


def _result_bytes(message) -> int:
    return len(message["content"][0]["text"].encode("utf-8"))


@pytest.mark.parametrize("builder", [w.w1, w.w2, w.w2_prune, w.w3, w.w4])
def test_same_seed_gives_the_same_bytes(builder):
    assert builder(7).request_bytes() == builder(7).request_bytes()


def test_another_seed_gives_other_bytes():
    assert w.w1(7).request_bytes() != w.w1(8).request_bytes()


def test_w5_growth_is_reproducible():
    first = [orjson.dumps(h.payload) for h in w.w5_histories(7, quick=True)]
    second = [orjson.dumps(h.payload) for h in w.w5_histories(7, quick=True)]
    assert first == second
    assert len(first) == w.W5_CALLS_QUICK


@pytest.mark.parametrize(
    ("builder", "messages", "target"),
    [(w.w1, 200, 300_000), (w.w2, 400, 1_500_000), (w.w3, 2_000, 6_000_000)],
)
def test_history_sizes_are_as_stated(builder, messages, target):
    history = builder().payload["messages"]
    assert len(history) == messages
    size = sum(len(orjson.dumps(m)) + 1 for m in history)
    assert abs(size - target) <= target * 0.05


def test_w1_results_stay_within_200_bytes_and_60_kb():
    sizes = [_result_bytes(m) for m in _results(w.w1().payload["messages"])]
    assert min(sizes) >= w.RESULT_MIN - 3  # a cut multibyte character may shorten a text
    assert max(sizes) <= w.RESULT_MAX


def test_w2_has_exactly_three_results_of_100_to_200_kb():
    sizes = [_result_bytes(m) for m in _results(w.w2().payload["messages"])]
    big = [s for s in sizes if s > w.RESULT_MAX]
    assert len(big) == 3
    assert all(w.BIG_RESULT_MIN - 3 <= s <= w.BIG_RESULT_MAX for s in big)
    assert all(w.RESULT_MIN - 3 <= s <= w.RESULT_MAX for s in sizes if s <= w.RESULT_MAX)


def test_histories_hold_every_kind_of_content():
    history = w.w2().payload["messages"]
    roles = {m["role"] for m in history}
    blocks = {b["type"] for m in history for b in m["content"]}
    assert roles == {"user", "assistant", "function_result", "custom"}
    assert {"text", "thinking", "function_call", "image"} <= blocks
    assert any(not m["content"][0]["text"].isascii() for m in _results(history))
    assert all(isinstance(b["arguments"], dict) for m in history for b in m["content"]
               if b["type"] == "function_call")


def test_w4_counts_w2_messages_with_30_tools():
    payload = w.w4().payload
    assert payload["messages"] == w.w2().payload["messages"]
    assert len(payload["tools"]) == 30


def test_w1_passes_through_and_w2_caps_and_prunes():
    from context_manager import call

    w1 = call("context::assemble", w.w1().payload)
    assert w1["applied"]["pruned"] is False and w1["applied"]["capped_parts"] == 0
    w2 = call("context::assemble", w.w2().payload)
    assert w2["applied"]["capped_parts"] == 3 and w2["applied"]["pruned"] is True
    assert w2["usable"] == 172_000


EXPECTED_ROWS = [
    ("W1", "assemble", "call bytes→bytes", "floor: loads(req)+dumps(resp)", "≤ 3× floor"),
    ("W1", "assemble", "like-for-like (parsed in, dict out)", "peer: LC trim_messages", ""),
    ("W4", "count-tokens", "call bytes→bytes", "floor: loads(req)+dumps(resp)", ""),
    ("W4", "count-tokens", "like-for-like (parsed in, dict out)", "peer: LC count_tokens_approximately", ""),
    ("W4", "count-tokens", "like-for-like (parsed in, dict out)", "orjson.dumps(messages)", "≤ 2× dumps(messages)"),
]


def test_quick_table_for_w1_and_w4_has_the_expected_rows():
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--only", "W1,W4", "--no-e2e"],
                          capture_output=True, cwd=ROOT, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    header = re.split(r"\s{2,}", lines[0].strip())
    assert header == ["workload", "function", "measured", "median ms", "p95 ms", "baseline", "base ms",
                      "ratio", "target", "verdict", "e2e ms"]
    rows = []
    for line in lines[2:]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows.append(cells)
    assert [(r[0], r[1], r[2], r[5]) for r in rows] == [e[:4] for e in EXPECTED_ROWS]
    for cells, expected in zip(rows, EXPECTED_ROWS):
        assert re.fullmatch(r"\d+\.\d\d", cells[3])
        # The peer is an optional extra: without it its cells read "—".
        assert re.fullmatch(r"\d+\.\d\d×", cells[7]) or (cells[5].startswith("peer") and cells[7] == "—")
        if expected[4]:
            assert cells[8] == expected[4] and cells[9] in ("PASS", "MISS")
    memory = [line.split()[0] for line in lines if re.match(r"^(W1|W4)\s+\d", line)]
    assert memory == ["W1", "W4"]


def test_p95_is_the_nearest_rank_and_ratios_are_paired():
    from bench.kit.measure import p95, paired_ratio

    assert p95([float(i) for i in range(1, 21)]) == 19.0
    assert p95([3.0, 1.0, 2.0]) == 3.0
    # Run-by-run ratios 2, 3, 10: their median, not the ratio of the medians (4 / 2 = 2).
    assert paired_ratio([2.0, 3.0, 10.0], [1.0, 1.0, 1.0]) == 3.0


def _set(call: float, floor: float, **extra):
    samples = {"call": [call] * 3, "floor": [floor] * 3, **extra}
    stats = {key: {"median_ms": values[0], "p95_ms": values[0], "runs": 3} for key, values in samples.items()}
    return {"function_id": "context::assemble", "request_bytes": 1000, "stats": stats, "samples": samples,
            "rss": {"idle": 10_000_000, "peak": 10_003_000}}


def test_targets_are_judged_on_the_stated_ratios():
    from bench.speed.report import build

    results = {"W1": _set(2.9, 1.0), "W2": _set(2.6, 1.0),
               "W3": {**_set(5.0, 1.0), "request_bytes": 1000}}
    report = build(results, {})
    verdicts = {(r.workload, r.measured): (r.target, r.verdict) for r in report.rows}
    assert verdicts[("W1", "call bytes→bytes")] == ("≤ 3× floor", "PASS")
    assert verdicts[("W2", "call bytes→bytes")] == ("≤ 2.5× floor", "MISS")
    memory = {m.workload: m.verdict for m in report.memory}
    assert memory == {"W1": "", "W2": "", "W3": "PASS"}  # 3,000 bytes above idle for 1,000 sent


def test_a_pending_set_is_reported_not_measured():
    from bench.speed.report import build

    report = build({"W3": {"function_id": "context::assemble", "request_bytes": 5, "pending": "no summariser"}}, {})
    assert report.rows == []
    assert report.pending == ["W3 (context::assemble): pending — no summariser"]
    assert [(m.workload, m.verdict) for m in report.memory] == [("W3", "pending")]


def test_quick_w5_runs_the_worker_turn_against_its_cold_baseline():
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--only", "W5", "--no-e2e"],
                          capture_output=True, cwd=ROOT, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("workload  function"))
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[start + 2:start + 4]]
    assert [(r[0], r[1], r[2], r[5]) for r in rows] == [
        ("W5", "assemble", "warm worker turn (agent loop)", "cold worker turn, same history"),
        ("W5", "assemble", "warm worker turn (agent loop)", "floor: loads(req)+dumps(resp)"),
    ]
    assert rows[0][8] == "≤ 0.40× cold" and rows[0][9] in ("PASS", "MISS")
