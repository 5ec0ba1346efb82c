"""`report_prefix`: where an answer stops repeating its request, and whether the prompt changed."""

from helpers import user

from context_manager import call
from context_manager.core.prefix import cache_break_index
from tests.core.passes.test_drop_oldest import _session

REPORT = {"report_prefix": True}


def test_the_members_are_absent_by_default():
    applied = call("context::assemble", _session(1, "ok"))["applied"]
    assert "cache_break_index" not in applied and "system_prompt_changed" not in applied


def test_an_untouched_request_has_no_break_and_custom_messages_do_not_count():
    payload = _session(2, "ok")
    payload["messages"].insert(1, {"role": "custom", "custom_type": "note", "content": [{"type": "text", "text": "x"}],
                                   "timestamp": 1})
    payload["system_prompt"] = "be brief"
    response = call("context::assemble", payload, config=REPORT)
    assert len(response["messages"]) == 5
    assert response["applied"]["cache_break_index"] is None
    assert response["applied"]["system_prompt_changed"] is False


def test_drop_oldest_breaks_right_after_the_kept_task():
    response = call("context::assemble", _session(12, "ok"),
                    config={**REPORT, "overflow_fallback": "drop_oldest"})
    applied = response["applied"]
    assert applied["dropped_ranges"][0][0] == 1
    assert applied["cache_break_index"] == 1
    assert applied["system_prompt_changed"] is False


def test_a_previous_summary_sent_back_is_part_of_the_baseline():
    payload = {**_session(1, "ok"), "system_prompt": "base", "options": {"previous_summary": "so far"}}
    response = call("context::assemble", payload, config=REPORT)
    assert "so far" in response["system_prompt"]
    assert response["applied"]["system_prompt_changed"] is False
    assert response["applied"]["cache_break_index"] is None


def test_a_compaction_changes_the_prompt_and_breaks_at_the_first_message():
    payload = {**_session(12, "ok"), "system_prompt": "base"}
    response = call("context::assemble", payload, config=REPORT, summarizer=lambda system, prompt, model: "SUMMARY")
    applied = response["applied"]
    assert applied["compacted"] is True
    assert applied["system_prompt_changed"] is True
    assert applied["cache_break_index"] == 0


def test_cache_break_index_on_lists():
    a, b, c = user("a"), user("b"), user("c")
    assert cache_break_index([a, b], [a, b]) is None
    assert cache_break_index([a, b], [a, c]) == 1
    assert cache_break_index([a, b, c], [a, b]) == 2
    assert cache_break_index([a], [a, b]) == 1
    assert cache_break_index([], []) is None
    assert cache_break_index([a], [user("a")]) is None  # equal content, another object
