"""``bench.replay.harness``: a recorded session driven as the agent harness drives assemble."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from bench.replay import harness

TS = 1_700_000_000_000


def recorded_session(rounds: int = 24) -> dict[str, Any]:
    """Rounds of a 2,000-byte request and a short answer whose ``usage`` counts the whole
    history before it at 0.8 provider tokens per estimated token, as a provider did for a
    session that began before any context manager ran."""
    messages: list[dict[str, Any]] = []
    history_bytes = 400  # the system prompt
    for n in range(rounds):
        text = f"step {n}: " + "x" * 2000
        messages.append({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": TS})
        history_bytes += len(text) + 60
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"done {n}"}],
                         "stop_reason": "end", "model": "deepseek-chat", "provider": "deepseek",
                         "timestamp": TS, "usage": {"input": history_bytes // 5, "output": 10}})
        history_bytes += 80
    return {"system_prompt": "s" * 400, "messages": messages}


def test_the_harness_loop_compacts_and_sends_the_tail(tmp_path: Path):
    path = tmp_path / "one.json"
    path.write_bytes(orjson.dumps(recorded_session()))
    off = harness.run_session(path, {}, window=8000, max_output=1000)
    assert (off.turns, off.failed, off.compactions, off.calibrated) == (24, 0, 2, 0)
    usage = harness.run_session(path, {"count_calibration": "usage"}, window=8000, max_output=1000)
    # The tail's usage counted the whole earlier history: after the first compaction no anchor
    # is plausible (before these rules, 5 turns failed with context/overflow at ratios up to
    # 2.54), and no turn fails.
    assert (usage.turns, usage.failed, usage.compactions) == (24, 0, 2)
    assert (usage.calibrated, usage.max_ratio) == (14, 0.7939)
    text = harness.render([off, usage], {"count_calibration": "usage"}, 8000, 1000)
    assert text.splitlines()[-1].split()[:3] == ["all", "48", "0"]
