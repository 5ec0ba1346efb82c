"""``bench.counting.realsessions`` on a small recorded session written here (no shared data needed)."""

from __future__ import annotations

from pathlib import Path

import orjson

from bench.counting import realsessions


def session() -> dict:
    def user(text: str) -> dict:
        return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}

    def assistant(text: str, prompt: int) -> dict:
        return {"role": "assistant", "content": [{"type": "text", "text": text}], "stop_reason": "end",
                "model": "m", "provider": "p", "timestamp": 2, "usage": {"input": prompt, "output": 3}}

    return {"system_prompt": "sys " * 50,
            "messages": [user("a " * 400), assistant("b " * 200, 500), user("c " * 400), assistant("d", 900)]}


def test_session_table_and_replay(tmp_path: Path):
    (tmp_path / "one.json").write_bytes(orjson.dumps(session()))
    rows = realsessions.session_table(tmp_path)
    assert [row["session"] for row in rows] == ["one", "all (pooled)"]
    heuristic = rows[0]["modes"]["heuristic"]
    calibrated = rows[0]["modes"]["heuristic+usage"]
    assert heuristic["calls"] == calibrated["calls"] == 2
    # The second call is anchored on the first: 500 plus the growth at the observed ratio.
    assert abs(calibrated["p95_abs_error"]) < abs(heuristic["p95_abs_error"])
    replay = realsessions.replay_row(tmp_path / "one.json", realsessions.SimulatedProvider(), 8000, "usage")
    assert (replay["calls"], replay["over_window"], replay["overflows"]) == (2, 0, 0)
    assert "simulated replay" in realsessions.render(rows, [replay])


def test_replay_with_the_tokenizer_against_a_scaled_provider(tmp_path: Path):
    (tmp_path / "one.json").write_bytes(orjson.dumps(session()))
    provider = realsessions.SimulatedProvider(1.2)
    replay = realsessions.replay_row(tmp_path / "one.json", provider, 8000, "usage", "tokenizer")
    assert (replay["estimator"], replay["provider_scale"]) == ("tokenizer", 1.2)
    assert (replay["calls"], replay["over_window"], replay["overflows"]) == (2, 0, 0)
    text = realsessions.render([], [replay])
    assert "simulated replay (o200k_base + framing writes usage, tokenizer estimator, provider count x 1.2)" in text
    # The default replay keeps its title.
    default = realsessions.replay_row(tmp_path / "one.json", realsessions.SimulatedProvider(), 8000, "off")
    assert "simulated replay (o200k_base + framing writes usage): calls" in realsessions.render([], [default])
