"""``options.explain``: ``applied.actions`` (assemble) and ``actions`` (prune), exact values."""

from __future__ import annotations

import pytest

from context_manager import CallError, call
from context_manager.core.explain import Explanation, action
from context_manager.core.passes.prune import Candidate


def _user(text: str, ts: int) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def _call(call_id: str, ts: int, function_id: str = "fs::read") -> dict:
    return {"role": "assistant", "stop_reason": "function_call", "model": "m", "provider": "p",
            "timestamp": ts, "content": [{"type": "function_call", "id": call_id, "function_id": function_id}]}


def _result(call_id: str, text: str, ts: int, function_id: str = "fs::read") -> dict:
    return {"role": "function_result", "function_call_id": call_id, "function_id": function_id,
            "content": [{"type": "text", "text": text}], "timestamp": ts}


def _model(window: int, output: int = 1000) -> dict:
    return {"id": "m", "limits": {"context_window": window, "max_output_tokens": output}}


def test_explanation_orders_by_request_index_and_keeps_pass_order_per_message():
    explanation = Explanation()
    explanation.cap([(2, 900, 100, "fs::read")], [1, 3, 5])
    explanation.prune([Candidate(2, 100, "fs::read", 86), Candidate((0, 1), 40, "sh::run", 26)], [1, 3, 5])
    explanation.drop([(1, 7)])
    assert explanation.actions() == [
        {"pass": "prune", "index": 1, "function_id": "sh::run", "tokens_before": 40, "tokens_after": 14},
        {"pass": "drop", "index": 1, "tokens_before": 7, "tokens_after": 0},
        {"pass": "cap", "index": 5, "function_id": "fs::read", "tokens_before": 900, "tokens_after": 100},
        {"pass": "prune", "index": 5, "function_id": "fs::read", "tokens_before": 100, "tokens_after": 14},
    ]
    assert action("compact", 0, None, 10, 2) == {"pass": "compact", "index": 0, "tokens_before": 10,
                                                  "tokens_after": 2}


def _capped_session() -> dict:
    # A custom message shifts request indices away from view indices.
    return {"model": _model(200000),
            "messages": [_user("task", 1),
                         {"role": "custom", "custom_type": "note", "timestamp": 2,
                          "content": [{"type": "text", "text": "n"}]},
                         _call("c1", 3), _result("c1", "x" * 40000, 4), _user("next", 5)],
            "options": {"max_result_tokens": 1000}}


def test_assemble_cap_action_exact():
    plain = call("context::assemble", _capped_session())
    assert "actions" not in plain["applied"]
    payload = _capped_session()
    payload["options"]["explain"] = True
    response = call("context::assemble", payload)
    applied = response["applied"]
    assert applied["capped_parts"] == 1 and applied["capped_tokens"] == 9099
    assert applied["actions"] == [
        {"pass": "cap", "index": 3, "function_id": "fs::read", "tokens_before": 10039, "tokens_after": 940},
    ]
    # Everything else is the answer without explain.
    del applied["actions"]
    assert response == plain


def test_explain_false_or_null_adds_nothing():
    for value in (False, None):
        payload = _capped_session()
        payload["options"]["explain"] = value
        assert "actions" not in call("context::assemble", payload)["applied"]


def test_explain_must_be_a_boolean():
    payload = _capped_session()
    payload["options"]["explain"] = "yes"
    with pytest.raises(CallError, match=r"serialization error: invalid type: string \"yes\", expected a boolean"):
        call("context::assemble", payload)


def _pruned_history() -> list[dict]:
    messages = [_user("task", 1)]
    for i in range(4):
        messages += [_call(f"c{i}", 2 + 3 * i), _result(f"c{i}", "y" * 12000, 3 + 3 * i)]
        messages.append(_user(f"turn {i}", 4 + 3 * i))
    return messages


def test_prune_actions_exact_and_summing_to_pruned_tokens():
    payload = {"messages": _pruned_history(),
               "options": {"protect_recent_tokens": 3000, "min_free_tokens": 1, "protected_user_turns": 0,
                           "max_output_chars": 100, "explain": True}}
    response = call("context::prune", payload)
    assert response["pruned_parts"] == 3 and response["pruned_tokens"] == 8946 == 3 * (3000 - 18)
    assert response["actions"] == [
        {"pass": "prune", "index": index, "function_id": "fs::read", "tokens_before": 3000, "tokens_after": 18}
        for index in (2, 5, 8)
    ]
    del payload["options"]["explain"]
    plain = call("context::prune", payload)
    assert "actions" not in plain
    del response["actions"]
    assert response == plain


def test_prune_below_min_free_reports_no_actions():
    payload = {"messages": _pruned_history(),
               "options": {"protect_recent_tokens": 3000, "min_free_tokens": 10**9, "explain": True}}
    response = call("context::prune", payload)
    assert response["pruned_tokens"] == 0 and response["actions"] == []


def test_assemble_drop_and_emergency_actions(tmp_path):
    messages = [_user("fix the bug", 1)]
    for i in range(12):
        messages.append({"role": "assistant", "stop_reason": "function_call", "model": "m", "provider": "p",
                         "timestamp": 2 + 2 * i,
                         "content": [{"type": "text", "text": "z" * 3000},
                                     {"type": "function_call", "id": f"c{i}", "function_id": "fs::read"}]})
        messages.append(_result(f"c{i}", "ok", 3 + 2 * i))
    payload = {"model": _model(10000), "messages": messages, "options": {"explain": True}}
    response = call("context::assemble", payload, config={"overflow_fallback": "drop_oldest"})
    applied = response["applied"]
    drops = [a for a in applied["actions"] if a["pass"] == "drop"]
    assert applied["actions"] == drops
    assert len(drops) == applied["dropped_messages"] == 6 and applied["dropped_ranges"] == [[1, 7]]
    assert [a["index"] for a in drops] == list(range(1, 7))
    assert [(a["tokens_before"], a["tokens_after"]) for a in drops] == [(801, 0), (40, 0)] * 3
    assert applied["initial_token_count"] - response["token_count"] == 3 * (801 + 40)


# The largest result (20,000 bytes, request index 5) alone frees enough.
EMERGENCY_ACTIONS = [
    {"pass": "emergency", "index": 5, "function_id": "fs::read", "tokens_before": 5039, "tokens_after": 183},
]


def test_assemble_emergency_actions():
    messages = [_user("task", 1)]
    for i, size in enumerate((8000, 20000, 12000)):
        messages += [_call(f"c{i}", 2 + 3 * i), _result(f"c{i}", "e" * size, 3 + 3 * i),
                     _user(f"turn {i}", 4 + 3 * i)]
    payload = {"model": _model(10000), "messages": messages,
               "options": {"explain": True, "allow_prune": False, "allow_compaction": False,
                           "max_result_tokens": 0}}
    applied = call("context::assemble", payload)["applied"]
    assert applied["actions"] == EMERGENCY_ACTIONS
    assert applied["pruned_tokens"] == 4856 == sum(a["tokens_before"] - a["tokens_after"] for a in EMERGENCY_ACTIONS)


def test_assemble_compact_action(tmp_path):
    messages = [_user("task", 1)]
    for i in range(6):
        messages += [_call(f"c{i}", 2 + 3 * i), _result(f"c{i}", "q" * 8000, 3 + 3 * i),
                     _user(f"turn {i}", 4 + 3 * i)]
    payload = {"model": _model(12000, 1000), "messages": messages,
               "options": {"explain": True, "allow_prune": False, "tail_turns": 1}}
    response = call("context::assemble", payload, config={"lease_dir": str(tmp_path)},
                    summarizer=lambda system, user, model: "SUMMARY")
    applied = response["applied"]
    assert applied["compacted"] is True
    assert applied["actions"][0] == {"pass": "compact", "index": 0, "tokens_before": applied["tokens_before"],
                                     "tokens_after": 1}
