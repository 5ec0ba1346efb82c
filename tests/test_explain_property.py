"""Property: ``explain`` entries add up to the reported totals exactly, on generated requests."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from context_manager import CallError, call

pytestmark = pytest.mark.slow

PNG = {"type": "image", "mime": "image/png", "data": "AAAA"}
_FUNCTIONS = ("fs::read", "sh::run", "web::get")

_specs = st.lists(
    st.tuples(st.sampled_from(["user", "call", "result", "wrapper", "custom", "image"]),
              st.integers(0, 24000), st.integers(0, 2)),
    min_size=1, max_size=14)


def _history(specs) -> list[dict]:
    history: list[dict] = []
    for ts, (kind, length, fn) in enumerate(specs):
        function_id = _FUNCTIONS[fn]
        if kind == "user":
            history.append({"role": "user", "timestamp": ts, "content": [{"type": "text", "text": "u" * (length % 300)}]})
        elif kind == "call":
            history.append({"role": "assistant", "stop_reason": "function_call", "model": "m", "provider": "p",
                            "timestamp": ts, "content": [
                                {"type": "text", "text": "a" * (length % 2000)},
                                {"type": "function_call", "id": f"c{ts}", "function_id": function_id}]})
        elif kind == "result":
            history.append({"role": "function_result", "function_call_id": f"c{ts - 1}", "function_id": function_id,
                            "content": [{"type": "text", "text": "r" * length}], "timestamp": ts,
                            "details": {"bytes": length}})
        elif kind == "wrapper":
            history.append({"role": "user", "timestamp": ts, "content": [
                {"type": "function_result", "function_call_id": f"c{ts - 1}",
                 "content": [{"type": "text", "text": "w" * length}, PNG]},
                {"type": "function_result", "function_call_id": f"c{ts - 2}",
                 "content": [{"type": "text", "text": "v" * (length // 2)}]}]})
        elif kind == "image":
            history.append({"role": "user", "timestamp": ts, "content": [{"type": "text", "text": "see"}, PNG]})
        else:
            history.append({"role": "custom", "custom_type": "n", "timestamp": ts,
                            "content": [{"type": "text", "text": "c" * (length % 500)}]})
    return history


@pytest.fixture(scope="module")
def lease_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("leases"))


def _answer(payload: dict, config: dict, summarizer) -> dict | str:
    try:
        return call("context::assemble", payload, config=config, summarizer=summarizer)
    except CallError as failure:
        return failure.message


def _check_assemble(response: dict, payload: dict) -> None:
    applied = response["applied"]
    actions = applied["actions"]
    assert [a["index"] for a in actions] == sorted(a["index"] for a in actions)
    by_pass: dict[str, list[dict]] = {}
    for entry in actions:
        assert set(entry) <= {"pass", "index", "function_id", "tokens_before", "tokens_after"}
        assert 0 <= entry["index"] < len(payload["messages"])
        assert payload["messages"][entry["index"]]["role"] != "custom"
        by_pass.setdefault(entry["pass"], []).append(entry)
    assert set(by_pass) <= {"cap", "prune", "emergency", "compact", "drop"}
    for name in sorted(by_pass):
        event(f"assemble made {name} entries")  # --hypothesis-show-statistics: what was covered

    def freed(*names: str) -> int:
        return sum(e["tokens_before"] - e["tokens_after"] for n in names for e in by_pass.get(n, []))

    assert freed("cap") == applied["capped_tokens"]
    assert len(by_pass.get("cap", [])) <= applied["capped_parts"]
    assert bool(by_pass.get("cap")) == (applied["capped_parts"] > 0)
    assert freed("prune", "emergency") == applied["pruned_tokens"]
    assert bool(by_pass.get("prune") or by_pass.get("emergency")) == applied["pruned"]
    compacts = by_pass.get("compact", [])
    assert len(compacts) == (1 if applied["compacted"] else 0)
    if compacts:
        assert compacts[0]["tokens_before"] == applied["tokens_before"]
        assert compacts[0]["index"] < applied["tail_start_index"]
    drops = by_pass.get("drop", [])
    assert len(drops) == applied.get("dropped_messages", 0)
    assert all(e["tokens_after"] == 0 for e in drops)
    ranges = [i for start, end in applied.get("dropped_ranges", []) for i in range(start, end)]
    assert [e["index"] for e in drops] == [i for i in ranges if payload["messages"][i]["role"] != "custom"]


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=_specs, window=st.integers(2000, 40000), cap=st.sampled_from([None, 0, 500, 3000]),
       allow_prune=st.booleans(), allow_compaction=st.booleans(), drop=st.booleans(),
       summary=st.sampled_from([None, "S", "a longer summary " * 20]), min_free=st.sampled_from([1, 2000]))
def test_explain_entries_sum_to_the_reported_totals(lease_dir, specs, window, cap, allow_prune,
                                                     allow_compaction, drop, summary, min_free):
    history = _history(specs)
    options = {"allow_prune": allow_prune, "allow_compaction": allow_compaction, "tail_turns": 1}
    if cap is not None:
        options["max_result_tokens"] = cap
    config = {"lease_dir": lease_dir, "protect_recent_tokens": 1500, "min_free_tokens": min_free,
              "protected_user_turns": 1, "overflow_fallback": "drop_oldest" if drop else "error"}
    summarizer = (lambda system, user, model: summary) if summary is not None else None
    model = {"id": "m", "limits": {"context_window": window, "max_output_tokens": window // 8}}
    plain = _answer({"messages": history, "model": model, "options": options}, config, summarizer)
    payload = {"messages": history, "model": model, "options": {**options, "explain": True}}
    explained = _answer(payload, config, summarizer)
    if isinstance(plain, str):
        assert explained == plain  # the same failure, explained or not
        event(f"failed: {plain.split(':')[1]}")
        return
    assert isinstance(explained, dict)
    _check_assemble(explained, payload)
    without = {**explained, "applied": {k: v for k, v in explained["applied"].items() if k != "actions"}}
    assert without == plain

    prune_options = {"protect_recent_tokens": 1500, "min_free_tokens": min_free, "protected_user_turns": 0,
                     "max_output_chars": 400, "explain": True}
    pruned = call("context::prune", {"messages": history, "options": prune_options})
    assert sum(e["tokens_before"] - e["tokens_after"] for e in pruned["actions"]) == pruned["pruned_tokens"]
    assert len(pruned["actions"]) == pruned["pruned_parts"]
