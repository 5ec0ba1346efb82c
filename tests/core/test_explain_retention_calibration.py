"""``options.explain`` for the retention pass and under usage calibration, with exact values.

Counts are the heuristic's (``floor(utf8 bytes / 4)`` over a message's compact serialization).
"""

from __future__ import annotations

from typing import Any

import jsonschema

from context_manager import call
from context_manager.core.counting.calibration import Calibration
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.explain import Explanation, action
from context_manager.core.passes.retention import RetentionChange
from context_manager.schemas import function_definition
from context_manager.wire.decode import decode_message

INLINE = {"id": "m", "provider": "p", "limits": {"context_window": 100000, "max_output_tokens": 1000}}
BIG = "line of output\n" * 400


def _always(to: int) -> dict[str, Any]:
    return {"mode": "always", "to": to, "keep": "both"}


def _size(message: dict[str, Any]) -> int:
    return HEURISTIC.message(decode_message(message))


def _retention_session() -> list[dict[str, Any]]:
    # The custom message shifts request indices away from view indices.
    return [
        {"role": "user", "content": [{"type": "text", "text": "p" * 2000},
                                     {"type": "image", "mime": "image/png", "data": "AAAA"}], "timestamp": 1},
        {"role": "custom", "custom_type": "note", "timestamp": 1, "content": [{"type": "text", "text": "n"}]},
        {"role": "assistant", "content": [{"type": "thinking", "text": "t" * 400},
                                          {"type": "function_call", "id": "c1", "function_id": "fs::read_file",
                                           "arguments": {"path": "x" * 800}}],
         "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": 2},
        {"role": "function_result", "function_call_id": "c1", "function_id": "fs::read_file",
         "content": [{"type": "text", "text": BIG}], "is_error": False, "timestamp": 3},
        {"role": "assistant", "content": [{"type": "text", "text": "a" * 2000}], "stop_reason": "end",
         "model": "m", "provider": "p", "timestamp": 4},
        {"role": "user", "content": [{"type": "text", "text": "now"}], "timestamp": 7},
    ]


POLICY = {"tools": {"default": {"arguments": _always(20), "result": _always(20)}},
          "text": {"prompt": _always(30), "message": _always(30)},
          "reasoning": {"keep_turns": 1}, "media": {"default_keep_turns": 1}}


def test_retention_entries_one_per_rewrite_summing_to_each_warning():
    messages = _retention_session()
    payload = {"messages": messages, "model": INLINE}
    plain = call("context::assemble", payload, config={"retention": POLICY})
    out = call("context::assemble", {**payload, "options": {"explain": True}}, config={"retention": POLICY})
    applied = out["applied"]
    assert applied["warnings"] == [
        {"code": "truncated", "function_id": "fs::read_file", "count": 2, "tokens_freed": 1760},
        {"code": "text_truncated", "role": "assistant", "count": 1, "tokens_freed": 468},
        {"code": "text_truncated", "role": "user", "count": 1, "tokens_freed": 469},
        {"code": "reasoning_dropped", "count": 1, "tokens_freed": 107},
        {"code": "media_dropped", "mime": "image/png", "count": 1},
    ]
    assert applied["actions"] == [
        {"pass": "retention", "index": 0, "code": "text_truncated", "tokens_before": 4624, "tokens_after": 4155},
        {"pass": "retention", "index": 0, "code": "media_dropped", "tokens_before": 4155, "tokens_after": 76},
        {"pass": "retention", "index": 2, "code": "truncated", "function_id": "fs::read_file",
         "tokens_before": 355, "tokens_after": 173},
        {"pass": "retention", "index": 2, "code": "reasoning_dropped", "tokens_before": 173, "tokens_after": 66},
        {"pass": "retention", "index": 3, "code": "truncated", "function_id": "fs::read_file",
         "tokens_before": 1641, "tokens_after": 63},
        {"pass": "retention", "index": 4, "code": "text_truncated", "tokens_before": 529, "tokens_after": 61},
    ]
    # A message's first entry starts at its request estimate and its last ends at its answer's.
    returned = out["messages"]
    assert [_size(messages[i]) for i in (0, 2, 3, 4)] == [4624, 355, 1641, 529]
    assert [_size(returned[i]) for i in (0, 1, 2, 3)] == [76, 66, 63, 61]
    # truncated: 182 + 1578 = 1760; user prose 469; assistant prose 468; reasoning 107.
    jsonschema.validate(out, function_definition("context::assemble")["response_schema"])
    del applied["actions"]
    assert out == plain


def test_explanation_calibrate_shares_each_total_by_largest_remainders():
    explanation = Explanation()
    explanation._entries = [
        action("cap", 0, "f", 433, 100), action("cap", 1, "f", 333, 0), action("cap", 2, "f", 384, 50),
        action("prune", 3, "f", 15, 5), action("emergency", 4, "f", 10, 7),
        action("compact", 5, None, 500, 20), action("drop", 6, None, 9, 0),
        action("retention", 7, None, 50, 30, "text_truncated"),
    ]
    # growth 0.8: cap's 1,000 freed is 800 calibrated, shared 333:333:334 -> 267, 266, 267 on
    # top of the calibrated afters 80, 0, 40; prune + emergency's 13 is ceil(10.4) = 11, shared
    # 10:3 -> 8 and 3 (remainder 7 of 13 beats 6); compact and drop convert each side rounded up;
    # retention stays in estimator units, as its warnings do.
    explanation.calibrate(Calibration(0, 800, 1000))
    assert explanation.actions() == [
        action("cap", 0, "f", 347, 80), action("cap", 1, "f", 266, 0), action("cap", 2, "f", 307, 40),
        action("prune", 3, "f", 12, 4), action("emergency", 4, "f", 9, 6),
        action("compact", 5, None, 400, 16), action("drop", 6, None, 8, 0),
        action("retention", 7, None, 50, 30, "text_truncated"),
    ]


def test_apportion_amount_sums_to_the_calibrated_amount():
    c = Calibration(0, 800, 1000)
    assert c.apportion_amount([333, 333, 334]) == [267, 266, 267]
    assert c.apportion_amount([10, 3]) == [8, 3] and c.amount(13) == 11
    assert c.apportion_amount([]) == [] and c.apportion_amount([0, 0]) == [0, 0]


def _calibrated_session() -> list[dict[str, Any]]:
    def user(text: str, ts: int) -> dict[str, Any]:
        return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}

    def call_message(call_id: str, ts: int) -> dict[str, Any]:
        return {"role": "assistant", "content": [{"type": "function_call", "id": call_id, "function_id": "fs::read",
                                                  "arguments": {}}],
                "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": ts}

    def result(call_id: str, text: str, ts: int) -> dict[str, Any]:
        return {"role": "function_result", "function_call_id": call_id, "function_id": "fs::read",
                "content": [{"type": "text", "text": text}], "is_error": False, "timestamp": ts}

    answered = {"role": "assistant", "content": [{"type": "text", "text": "ok " * 200}], "stop_reason": "end",
                "model": "m", "provider": "p", "timestamp": 2, "usage": {"input": 400}}
    return [user("task " * 200, 1), answered, call_message("c1", 3), result("c1", "x" * 40000, 4),
            call_message("c2", 5), result("c2", "y" * 30000, 6), user("next", 7)]


def test_calibrated_cap_entries_add_up_to_the_calibrated_capped_tokens():
    payload = {"messages": _calibrated_session(),
               "model": {"id": "m", "limits": {"context_window": 200000, "max_output_tokens": 1000}},
               "options": {"max_result_tokens": 1000, "explain": True}}
    estimated = call("context::assemble", payload)["applied"]
    assert estimated["capped_tokens"] == 15698
    assert estimated["actions"] == [
        {"pass": "cap", "index": 3, "function_id": "fs::read", "tokens_before": 10039, "tokens_after": 940},
        {"pass": "cap", "index": 5, "function_id": "fs::read", "tokens_before": 7539, "tokens_after": 940},
    ]
    calibrated = call("context::assemble", payload, config={"count_calibration": "usage"})["applied"]
    # 15,698 estimated is 23,607 calibrated, shared 9,099:6,599 as 13,683 and 9,924 (the larger
    # remainder), above 940's calibrated 1,414.
    assert calibrated["capped_tokens"] == 23607
    assert calibrated["actions"] == [
        {"pass": "cap", "index": 3, "function_id": "fs::read", "tokens_before": 15097, "tokens_after": 1414},
        {"pass": "cap", "index": 5, "function_id": "fs::read", "tokens_before": 11338, "tokens_after": 1414},
    ]
    assert sum(e["tokens_before"] - e["tokens_after"] for e in calibrated["actions"]) == 23607


def test_retention_entry_carries_code_in_a_fixed_key_order():
    explanation = Explanation()
    explanation.retention([RetentionChange(0, "truncated", "fs::read", 10, 4),
                           RetentionChange(1, "media_dropped", None, 90, 2)], [2, 5])
    assert [list(e) for e in explanation.actions()] == [
        ["pass", "index", "code", "function_id", "tokens_before", "tokens_after"],
        ["pass", "index", "code", "tokens_before", "tokens_after"],
    ]
    assert [e["index"] for e in explanation.actions()] == [2, 5]
