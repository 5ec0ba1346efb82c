"""Property: ``explain`` entries add up to the reported totals exactly, on generated requests."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from context_manager import CallError, call
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.wire.decode import decode_message
from tests.properties.test_retention_properties import HISTORIES, POLICIES

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
        assert set(entry) <= {"pass", "index", "code", "function_id", "tokens_before", "tokens_after"}
        assert ("code" in entry) == (entry["pass"] == "retention")
        assert 0 <= entry["index"] < len(payload["messages"])
        assert payload["messages"][entry["index"]]["role"] != "custom"
        by_pass.setdefault(entry["pass"], []).append(entry)
    assert set(by_pass) <= {"retention", "cap", "prune", "emergency", "compact", "drop"}
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
    # Only the first drop of a range that left a working-set note stands for something: the note.
    assert all(e["tokens_after"] == 0 for e in drops[1:])
    assert [e["tokens_after"] for e in drops[:1]] == (
        [applied.get("working_set_note_tokens", 0)] if drops else [])
    ranges = [i for start, end in applied.get("dropped_ranges", []) for i in range(start, end)]
    assert [e["index"] for e in drops] == [i for i in ranges if payload["messages"][i]["role"] != "custom"]
    _check_retention(by_pass.get("retention", []), applied.get("warnings", []), payload)


def _check_retention(entries: list[dict], warnings: list[dict], payload: dict) -> None:
    """Per warning, the entries charged to it: drops floored at 0 sum to its ``tokens_freed``."""
    def key(code: str, function_id: str | None = None, role: str | None = None) -> tuple:
        return (code, function_id if code == "truncated" else None, role if code == "text_truncated" else None)

    charged: dict[tuple, list[dict]] = {}
    for entry in entries:
        role = payload["messages"][entry["index"]]["role"]
        charged.setdefault(key(entry["code"], entry.get("function_id"), role), []).append(entry)
        event(f"retention entry {entry['code']}")
    for previous, entry in zip(entries, entries[1:]):
        if previous["index"] == entry["index"]:  # a message's rewrites chain
            assert entry["tokens_before"] == previous["tokens_after"]
    expected: dict[tuple, dict] = {}
    media_images = 0
    for warning in warnings:
        if warning["code"] == "media_dropped":
            media_images += warning["count"]
        elif warning["code"] != "history_dropped":
            expected[key(warning["code"], warning.get("function_id"), warning.get("role"))] = warning
    assert set(charged) - {key("media_dropped")} == set(expected)
    for group, warning in expected.items():
        mine = charged[group]
        assert sum(max(0, e["tokens_before"] - e["tokens_after"]) for e in mine) == warning["tokens_freed"]
        if warning["code"] == "reasoning_dropped":
            assert 1 <= len(mine) <= warning["count"]
        else:
            assert len(mine) == warning["count"]
    media_entries = len(charged.get(key("media_dropped"), []))
    assert (media_entries > 0) == (media_images > 0) and media_entries <= media_images


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=_specs, window=st.integers(2000, 40000), cap=st.sampled_from([None, 0, 500, 3000]),
       allow_prune=st.booleans(), allow_compaction=st.booleans(), drop=st.booleans(),
       summary=st.sampled_from([None, "S", "a longer summary " * 20]), min_free=st.sampled_from([1, 2000]),
       working_set=st.booleans())
def test_explain_entries_sum_to_the_reported_totals(lease_dir, specs, window, cap, allow_prune,
                                                     allow_compaction, drop, summary, min_free, working_set):
    history = _history(specs)
    options = {"allow_prune": allow_prune, "allow_compaction": allow_compaction, "tail_turns": 1}
    if cap is not None:
        options["max_result_tokens"] = cap
    config = {"lease_dir": lease_dir, "protect_recent_tokens": 1500, "min_free_tokens": min_free,
              "protected_user_turns": 1, "overflow_fallback": "drop_oldest" if drop else "error",
              "working_set": working_set}
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


def _explained_equals_plain(payload: dict, config: dict, summarizer=None) -> dict | None:
    """The explained answer, checked equal to the plain one but for ``actions``; None on a failure."""
    plain = _answer(payload, config, summarizer)
    explained_payload = {**payload, "options": {**payload.get("options", {}), "explain": True}}
    explained = _answer(explained_payload, config, summarizer)
    if isinstance(plain, str):
        assert explained == plain
        return None
    assert isinstance(explained, dict)
    _check_assemble(explained, explained_payload)
    assert {**explained, "applied": {k: v for k, v in explained["applied"].items() if k != "actions"}} == plain
    return explained


def _cutting_everything(to: int, keep: str, keep_turns: int) -> dict:
    cut = {"mode": "always", "to": to, "keep": keep}
    return {"verbatim_turns": 0, "tools": {"default": {"arguments": cut, "result": cut}, "errors": cut},
            "text": {"prompt": cut, "message": cut}, "reasoning": {"keep_turns": keep_turns},
            "media": {"default_keep_turns": keep_turns}}


# Every rule at once, so one message often takes several rewrites.
_CUTTING = st.builds(_cutting_everything, st.integers(0, 30), st.sampled_from(["head", "tail", "both"]),
                     st.integers(0, 1))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=HISTORIES, policy=st.one_of(POLICIES, _CUTTING), window=st.integers(300, 6000), cap=st.sampled_from([None, 0, 40]),
       drop=st.booleans(), verbatim_none=st.booleans())
def test_retention_entries_sum_to_the_warnings(lease_dir, history, policy, window, cap, drop, verbatim_none):
    if verbatim_none:  # no turn kept verbatim: more of the history is open to the rules
        policy = {**policy, "verbatim_turns": 0}
    options = {"allow_compaction": False, "reserved_tokens": 0}
    if cap is not None:
        options["max_result_tokens"] = cap
    config = {"lease_dir": lease_dir, "retention": policy, "protect_recent_tokens": 100, "min_free_tokens": 1,
              "overflow_fallback": "drop_oldest" if drop else "error"}
    model = {"id": "m", "provider": "p", "limits": {"context_window": window, "max_output_tokens": 100}}
    explained = _explained_equals_plain({"messages": history, "model": model, "options": options}, config)
    if explained is not None and explained["applied"].get("warnings"):
        event("retention warned")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=_specs.filter(lambda specs: any(kind == "call" for kind, _, _ in specs[:-1])),
       window=st.integers(2000, 40000), cap=st.sampled_from([None, 0, 500, 3000]),
       allow_prune=st.booleans(), allow_compaction=st.booleans(), drop=st.booleans(),
       ratio=st.sampled_from([0.8, 1.3, 2.2, 3.5]), anchors=st.integers(1, 3))
def test_calibrated_entries_sum_to_the_calibrated_totals(lease_dir, specs, window, cap, allow_prune,
                                                          allow_compaction, drop, ratio, anchors):
    history = _history(specs)
    # Assistant usage anchors at a fixed ratio of the estimate of what preceded them, so
    # calibration mostly engages.
    prefix_tokens = 0
    placed = 0
    for message in history:
        if message["role"] == "assistant" and placed < anchors and prefix_tokens:
            message["usage"] = {"input": max(1, int(prefix_tokens * ratio))}
            placed += 1
        if message["role"] != "custom":
            prefix_tokens += HEURISTIC.message(decode_message(message))
    options = {"allow_prune": allow_prune, "allow_compaction": allow_compaction, "tail_turns": 1}
    if cap is not None:
        options["max_result_tokens"] = cap
    config = {"lease_dir": lease_dir, "protect_recent_tokens": 1500, "count_calibration": "usage",
              "protected_user_turns": 1, "overflow_fallback": "drop_oldest" if drop else "error"}
    model = {"id": "m", "limits": {"context_window": window, "max_output_tokens": window // 8}}
    summarizer = lambda system, user, model: "a summary " * 10  # noqa: E731
    explained = _explained_equals_plain({"messages": history, "model": model, "options": options}, config,
                                        summarizer)
    if explained is None:
        event("failed")
    else:
        event("calibrated" if "calibration" in explained["breakdown"] else "not calibrated")
