"""`overflow_fallback: drop_oldest`: units, pairing, what is kept, and assemble's report."""

import pytest
from helpers import assistant, result, user

from context_manager import CallError, call
from context_manager.core.passes.drop_oldest import drop_oldest, units


def call_round(call_id: str, text: str = "x", ts: int = 2):
    return [assistant(calls=[{"id": call_id, "function_id": "f"}], ts=ts), result(call_id, "f", text, ts=ts + 1)]


def test_single_task_session_keeps_the_task_and_drops_the_oldest_rounds():
    view = [user("task"), *call_round("a"), *call_round("b"), *call_round("c")]
    spans, kept = units(view)
    assert spans == [(0, 1), (1, 3), (3, 5), (5, 7)]
    assert kept == 0
    sizes = [10, 5, 100, 5, 100, 5, 100]
    out = drop_oldest(view, sizes, list(range(7)), excess=150)
    assert out.dropped_messages == 4
    assert out.dropped_ranges == [[1, 5]]
    assert [m["role"] for m in out.messages] == ["user", "assistant", "function_result"]
    assert out.sizes == [10, 5, 100]


def test_turns_before_the_newest_user_message_go_whole():
    view = [user("old", ts=1), assistant("reply"), user("older follow-up"), assistant("reply 2"),
            user("newest"), *call_round("a")]
    spans, kept = units(view)
    assert spans == [(0, 2), (2, 4), (4, 5), (5, 7)]
    assert kept == 2
    out = drop_oldest(view, [1] * 7, [0, 1, 3, 4, 5, 6, 7], excess=3)
    # custom messages were filtered out of the view: request index 2 sits inside the range
    assert out.dropped_ranges == [[0, 5]]
    assert out.dropped_messages == 4


def test_a_call_and_its_result_are_never_separated():
    # the result of call "a" arrives after the next assistant message
    view = [user("task"), assistant(calls=[{"id": "a", "function_id": "f"}]), assistant("thinking aloud"),
            result("a", "f", "late"), *call_round("b")]
    spans, _ = units(view)
    assert spans == [(0, 1), (1, 4), (4, 6)]


def test_a_window_without_user_messages_keeps_its_newest_round():
    view = [*call_round("a"), *call_round("b")]
    spans, kept = units(view)
    assert spans == [(0, 2), (2, 4)]
    assert kept == 1
    out = drop_oldest(view, [50, 50, 50, 50], [0, 1, 2, 3], excess=10_000)
    assert out.dropped_ranges == [[0, 2]]
    assert len(out.messages) == 2


def _session(rounds: int, result_text: str) -> dict:
    messages = [{"role": "user", "content": [{"type": "text", "text": "fix the bug"}], "timestamp": 1}]
    for i in range(rounds):
        messages.append({"role": "assistant", "stop_reason": "function_call", "model": "m", "provider": "p",
                         "timestamp": 2 + 2 * i,
                         "content": [{"type": "text", "text": "z" * 3000},
                                     {"type": "function_call", "id": f"c{i}", "function_id": "fs::read"}]})
        messages.append({"role": "function_result", "function_call_id": f"c{i}", "function_id": "fs::read",
                         "content": [{"type": "text", "text": result_text}], "timestamp": 3 + 2 * i})
    return {"model": {"id": "m", "limits": {"context_window": 10000, "max_output_tokens": 1000}},
            "messages": messages}


def test_assemble_reports_what_it_dropped():
    payload = _session(12, "ok")
    with pytest.raises(CallError, match="context/overflow"):
        call("context::assemble", payload)
    response = call("context::assemble", payload, config={"overflow_fallback": "drop_oldest"})
    applied = response["applied"]
    assert response["token_count"] <= response["usable"] == 8000
    assert applied["dropped_ranges"] == [[1, 1 + applied["dropped_messages"]]]
    assert applied["dropped_messages"] % 2 == 0
    kept = response["messages"]
    assert kept[0]["content"][0]["text"] == "fix the bug"
    assert len(kept) == 25 - applied["dropped_messages"]
    # whatever remains still pairs every result with its call
    calls = {b["id"] for m in kept if m["role"] == "assistant" for b in m["content"] if b["type"] == "function_call"}
    assert {m["function_call_id"] for m in kept if m["role"] == "function_result"} <= calls


def test_nothing_dropped_means_no_report_members():
    response = call("context::assemble", _session(1, "ok"), config={"overflow_fallback": "drop_oldest"})
    assert "dropped_messages" not in response["applied"]
    assert "dropped_ranges" not in response["applied"]
