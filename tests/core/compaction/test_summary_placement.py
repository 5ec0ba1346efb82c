"""`summary_placement: message` and `eager_compaction_at`."""

from __future__ import annotations

from helpers import user

from context_manager import call
from context_manager.core.compaction.prompts import summary_message
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.wire.decode import decode_message
from tests.core.passes.test_drop_oldest import _session

MESSAGE = {"summary_placement": "message"}


def summariser(system: str, prompt: str, model: dict) -> str:
    return "SUMMARY"


def _payload(rounds: int, **extra) -> dict:
    return {**_session(rounds, "ok"), "system_prompt": "base", **extra}


def test_a_new_summary_leads_the_messages_and_the_system_prompt_stays():
    answer = call("context::assemble", _payload(12), config={**MESSAGE, "report_prefix": True},
                  summarizer=summariser)
    applied = answer["applied"]
    assert applied["compacted"] is True and applied["summary"] == "SUMMARY"
    assert answer["system_prompt"] == "base"
    tail = applied["tail_start_index"]
    request = _payload(12)["messages"]
    lead = answer["messages"][0]
    assert lead == {"role": "user", "content": [{"type": "text", "text": "# Conversation summary\n\nSUMMARY"}],
                    "timestamp": request[tail]["timestamp"]}
    assert len(answer["messages"]) == 1 + len(request) - tail
    assert answer["messages"][1]["timestamp"] == request[tail]["timestamp"]
    assert answer["token_count"] <= answer["usable"]
    assert applied["system_prompt_changed"] is False and applied["cache_break_index"] == 0


def test_the_round_trip_sends_the_summary_back_as_the_same_message():
    first = call("context::assemble", _payload(12), config=MESSAGE, summarizer=summariser)
    tail = first["applied"]["tail_start_index"]
    again = _payload(13, options={"previous_summary": first["applied"]["summary"]})
    again["messages"] = again["messages"][tail:]
    second = call("context::assemble", again, config={**MESSAGE, "report_prefix": True})
    assert second["system_prompt"] == "base"
    # the same leading message and tail as before: the provider's cached prefix holds
    assert second["messages"][:len(first["messages"])] == first["messages"]
    assert second["applied"]["cache_break_index"] is None
    assert second["applied"]["system_prompt_changed"] is False
    # the count includes the summary message
    default = call("context::assemble", again)
    assert "SUMMARY" in default["system_prompt"] and len(default["messages"]) == len(second["messages"]) - 1


def test_the_summary_message_follows_a_pinned_anchor():
    answer = call("context::assemble", _payload(12), config={**MESSAGE, "anchor_messages": 1},
                  summarizer=summariser)
    assert answer["applied"]["compacted"] is True
    assert answer["messages"][0]["content"][0]["text"] == "fix the bug"
    assert answer["messages"][1]["content"][0]["text"] == "# Conversation summary\n\nSUMMARY"
    # both leading messages are counted as user messages
    assert answer["breakdown"]["by_role"]["user"] == sum(
        HEURISTIC.message(decode_message(m)) for m in answer["messages"] if m["role"] == "user")


def test_default_placement_is_the_system_prompt():
    answer = call("context::assemble", _payload(12), summarizer=summariser)
    assert answer["system_prompt"] == "base\n\n# Conversation summary\n\nSUMMARY"
    tail = answer["applied"]["tail_start_index"]
    assert len(answer["messages"]) == len(_payload(12)["messages"]) - tail
    assert answer["messages"][0]["timestamp"] == _payload(12)["messages"][tail]["timestamp"]


def test_summary_message_shape():
    assert summary_message("s", None) == {"role": "user", "content": [{"type": "text",
                                                                       "text": "# Conversation summary\n\ns"}],
                                          "timestamp": 0}
    assert summary_message("s", user("x", ts=42))["timestamp"] == 42


# --- eager compaction ---------------------------------------------------------------------------


def test_eager_compaction_runs_before_the_window_is_full_when_it_compacts_deeper():
    payload = _payload(9)  # 7,589 tokens of 8,000 usable: fits, 411 of headroom
    plain = call("context::assemble", payload, summarizer=summariser)
    assert plain["applied"]["compacted"] is False
    assert plain["applied"]["initial_token_count"] == 7589
    eager = call("context::assemble", payload, config={"eager_compaction_at": 0.8}, summarizer=summariser)
    # Tail budget max(2,000 - 1,600, 1,000) = 1,000: the newest round only, one round (833
    # tokens, at least twice the headroom) less than a full-window compaction would keep.
    assert eager["applied"]["compacted"] is True
    assert eager["applied"]["tail_start_index"] == 17
    assert eager["token_count"] == 850
    late = call("context::assemble", payload, config={"eager_compaction_at": 0.95}, summarizer=summariser)
    assert late == plain  # 7,589 is not past floor(0.95 * 8,000) = 7,600


def test_eager_compaction_waits_when_compacting_now_would_not_move_the_next_one_away():
    # 1,252 of headroom: compacting one round deeper (833 tokens) does not pay for running early.
    payload = _payload(8)
    plain = call("context::assemble", payload, summarizer=summariser)
    assert plain["applied"]["initial_token_count"] == 6748
    assert call("context::assemble", payload, config={"eager_compaction_at": 0.8},
                summarizer=summariser) == plain
    # On the reduce_to grid (step 3,200) both tail budgets put the head on the same grid point,
    # message 17, the first cut past 6,400 tokens: compacting early would only rewrite sooner.
    stepped = {"eager_compaction_at": 0.8, "reduce_to": 0.6}
    assert call("context::assemble", _payload(9), config=stepped, summarizer=summariser) \
        == call("context::assemble", _payload(9), config={"reduce_to": 0.6}, summarizer=summariser)


def test_a_full_window_compaction_keeps_its_tail_budget_with_the_key():
    payload = _payload(12)
    plain = call("context::assemble", payload, summarizer=summariser)
    assert plain["applied"]["initial_token_count"] > 8000
    eager = call("context::assemble", payload, config={"eager_compaction_at": 0.8}, summarizer=summariser)
    assert eager == plain
    assert plain["applied"]["tail_start_index"] == 21


def test_eager_compaction_without_a_summariser_changes_nothing():
    payload = _payload(8)
    assert (call("context::assemble", payload, config={"eager_compaction_at": 0.5})
            == call("context::assemble", payload))
