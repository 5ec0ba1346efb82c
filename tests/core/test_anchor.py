"""Pinned anchor messages (``anchor_messages``): the split, the passes, the round trip."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from compaction_support import AC, FR, A, C, U, U_inline_result, X, decoded, history

from context_manager import CallError, call
from context_manager.core.anchor import anchor_length
from context_manager.core.passes.media import TEXT_ONLY_MARKER
from context_manager.core.settings import WorkerConfig
from context_manager.handlers.assemble import handle
from context_manager.handlers.context import HandlerContext
from context_manager.ports import ModelBudget, RouterModel
from context_manager.wire.decode import decode_messages

MODEL = {"id": "m", "limits": {"context_window": 4000, "max_output_tokens": 1000}}


def view_of(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    return decoded(*messages)


# --- the split ------------------------------------------------------------------------------


@pytest.mark.parametrize("requested,expected", [(0, 0), (1, 1), (2, 2), (9, 4)])
def test_anchor_length_without_calls(requested, expected):
    assert anchor_length(view_of(U("task"), A("ok"), U("more"), A("done")), requested) == expected


def test_an_anchor_ending_in_a_call_takes_its_results():
    view = view_of(U("task"), AC("c1", "read"), FR("c1", "read", "r1"), A("next"))
    assert anchor_length(view, 2) == 3


def test_an_anchor_takes_every_result_of_a_parallel_call_and_what_lies_between():
    calls = {**AC("c1", "read"), "content": [
        {"type": "function_call", "id": "c1", "function_id": "read", "arguments": {}},
        {"type": "function_call", "id": "c2", "function_id": "grep", "arguments": {}}]}
    view = view_of(U("task"), calls, FR("c1", "read", "r1"), A("aside"), FR("c2", "grep", "r2"),
                   A("next"))
    assert anchor_length(view, 2) == 5


def test_an_inline_result_counts_as_the_answer():
    view = view_of(U("task"), AC("c1", "grep"), U_inline_result("c1"), A("next"))
    assert anchor_length(view, 2) == 3


def test_a_result_answering_a_later_call_with_the_same_id_does_not_extend():
    view = view_of(U("task"), AC("c1", "read"), FR("c1", "read", "r1"), AC("c1", "read"),
                   FR("c1", "read", "r2"))
    assert anchor_length(view, 2) == 3


def test_an_unanswered_call_does_not_extend():
    assert anchor_length(view_of(U("task"), AC("c1", "read"), A("gave up")), 2) == 2


# --- through context::assemble ----------------------------------------------------------------


def long_session(rounds: int = 12, result_tokens: int = 300) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [U("Fix the failing test in tests/test_app.py")]
    for i in range(rounds):
        messages += [AC(f"c{i}", "read"), FR(f"c{i}", "read", X(result_tokens))]
    return history(*messages)


def test_defaults_report_nothing_new():
    out = call("context::assemble", {"messages": history(U("hi")), "model": MODEL})
    assert set(out["applied"]) == {"initial_token_count", "pruned", "pruned_tokens",
                                   "capped_parts", "capped_tokens", "compacted"}


def test_the_anchor_survives_emergency_reduction_and_drop_oldest_verbatim():
    messages = long_session()
    task = {**messages[0]}
    out = call("context::assemble", {"messages": messages, "model": MODEL},
               config={"anchor_messages": 1, "overflow_fallback": "drop_oldest"})
    assert out["messages"][0] == task
    assert out["applied"]["anchor_tokens"] == 27  # 108 JSON bytes // 4
    assert out["token_count"] <= out["usable"] == 2600
    assert out["applied"]["compacted"] is False


def test_the_option_overrides_the_configuration():
    messages = history(U("task"), A("ok"))
    out = call("context::assemble", {"messages": messages, "model": MODEL,
                                     "options": {"anchor_messages": 0}},
               config={"anchor_messages": 3})
    assert "anchor_tokens" not in out["applied"]
    out = call("context::assemble", {"messages": messages, "model": MODEL,
                                     "options": {"anchor_messages": 2}})
    assert out["applied"]["anchor_tokens"] == 17 + 33
    assert out["breakdown"]["by_role"] == {"user": 17, "assistant": 33, "function_result": 0,
                                           "custom": 0}


class TextOnlyRouter:
    async def get_model_budget(self, provider: Any, model_id: str) -> ModelBudget:
        model = RouterModel(id=model_id, context_window=200000, max_output_tokens=8000,
                            supports_vision=False)
        return ModelBudget(model=model, effective_max_output_tokens=8000)


def test_media_normalisation_leaves_the_anchor_alone():
    image_task = {"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "mime": "image/png", "data": "AAAA"}]}
    messages = history(image_task, A("a cat"), image_task)
    ctx = HandlerContext(config=WorkerConfig(anchor_messages=1), resolver=TextOnlyRouter())
    out = anyio.run(handle, {"messages": messages, "model": {"id": "r"}}, ctx)
    kinds = [[b["type"] for b in m["content"]] for m in out["messages"]]
    assert kinds == [["text", "image"], ["text"], ["text", "text"]]
    assert out["messages"][2]["content"][1] == {"type": "text", "text": TEXT_ONLY_MARKER}


def test_an_anchor_that_cannot_fit_is_an_overflow():
    messages = history(U(X(3000)), A("ok"))
    with pytest.raises(CallError) as err:
        call("context::assemble", {"messages": messages, "model": MODEL,
                                   "options": {"anchor_messages": 1}},
             config={"overflow_fallback": "drop_oldest"})
    assert err.value.message == ("handler error: context/overflow: assembled context requires "
                                 "3016 tokens but usable budget is 2600")


def test_compaction_summarises_only_what_lies_between_anchor_and_tail():
    model = {"id": "m", "limits": {"context_window": 8000, "max_output_tokens": 1000}}
    messages = history(U("task"), C("ui"), *long_session(rounds=24)[1:])
    requests: list[str] = []

    def summarizer(system_prompt: str, user_prompt: str, model: Any) -> str:
        requests.append(user_prompt)
        return "## Goal\n- keep going"

    out = call("context::assemble", {"messages": messages, "model": model,
                                     "options": {"anchor_messages": 1}}, summarizer=summarizer)
    applied = out["applied"]
    assert applied["compacted"] is True
    assert out["messages"][0]["content"] == [{"type": "text", "text": "task"}]
    tail = applied["tail_start_index"]
    assert out["messages"][1:] == [m for m in decoded(*messages)[tail:] if m["role"] != "custom"]
    prompt = "".join(requests)  # fragments are consecutive pieces of one rendered head
    assert "[user]" not in prompt  # the anchor never reaches the summariser
    assert prompt.count("[assistant]") == (tail - 2) // 2
    assert out["system_prompt"].endswith("## Goal\n- keep going")
    # The round trip: the caller resends the anchor, then its messages from tail_start_index.
    again = call("context::assemble", {"messages": messages[:2] + messages[tail:], "model": model,
                                       "options": {"anchor_messages": 1,
                                                   "previous_summary": applied["summary"]}},
                 summarizer=summarizer)
    assert again["messages"] == out["messages"]
    assert again["system_prompt"] == out["system_prompt"]


# --- the anchor carried in the summary --------------------------------------------------------

TASK = "Fix the failing test in tests/test_app.py"
SECTION = ('\n\n<!-- context-manager:anchor -->\n[{"role":"user","content":[{"type":"text","text":'
           '"Fix the failing test in tests/test_app.py"}],"timestamp":1}]\n'
           '<!-- /context-manager:anchor -->')
WIDE = {"id": "m", "limits": {"context_window": 8000, "max_output_tokens": 1000}}


def goal_summarizer(system_prompt: str, user_prompt: str, model: Any) -> str:
    return "## Goal\n- keep going"


def assemble_with(messages: list[dict[str, Any]], summary: str | None = None,
                  config: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    opts: dict[str, Any] = {"anchor_messages": 1, **options}
    if summary is not None:
        opts["previous_summary"] = summary
    return call("context::assemble", {"messages": messages, "model": WIDE, "options": opts},
                config=config, summarizer=goal_summarizer)


def task_count(response: dict[str, Any]) -> int:
    texts = [response["system_prompt"]] + [b.get("text", "") for m in response["messages"]
                                           for b in m["content"]]
    return sum(text.count(TASK) for text in texts)


def grown(messages: list[dict[str, Any]], rounds: int, start: int) -> list[dict[str, Any]]:
    """``messages`` and ``rounds`` more read rounds, timestamps continuing after the last one."""
    more: list[dict[str, Any]] = []
    for i in range(start, start + rounds):
        more += [AC(f"c{i}", "read"), FR(f"c{i}", "read", X(300))]
    return messages + history(*more, first_timestamp=messages[-1]["timestamp"] + 1)


def test_a_compaction_with_an_anchor_returns_a_summary_carrying_it():
    out = assemble_with(long_session(rounds=24))
    applied = out["applied"]
    assert (applied["compacted"], applied["tail_start_index"]) == (True, 45)
    assert applied["summary"] == "## Goal\n- keep going" + SECTION
    assert out["system_prompt"].endswith("\n## Goal\n- keep going")
    assert task_count(out) == 1


def test_a_caller_sending_only_the_tail_gets_the_anchor_back_once():
    messages = long_session(rounds=24)
    first = assemble_with(messages)
    summary, tail = first["applied"]["summary"], first["applied"]["tail_start_index"]
    tail_only = assemble_with(messages[tail:], summary)
    resent = assemble_with(messages[:1] + messages[tail:], summary)
    for out in (tail_only, resent):
        assert out["messages"] == first["messages"]
        assert out["system_prompt"] == first["system_prompt"]
        assert (out["token_count"], out["applied"]["anchor_tokens"]) == (816, 27)
        assert out["applied"]["compacted"] is False
        assert task_count(out) == 1


def test_after_two_compactions_both_callers_hold_the_anchor_once():
    """The tail-only caller keeps request indices of what it sent; the re-sending one of its own."""
    messages = long_session(rounds=24)
    first = assemble_with(messages)
    summary, tail = first["applied"]["summary"], first["applied"]["tail_start_index"]
    assert tail == 45
    tail_only = grown(messages[tail:], 20, 24)
    resent = messages[:1] + tail_only
    second_tail_only = assemble_with(tail_only, summary)
    second_resent = assemble_with(resent, summary)
    assert second_tail_only["applied"]["tail_start_index"] == 40
    assert second_resent["applied"]["tail_start_index"] == 41
    for out in (second_tail_only, second_resent):
        assert out["applied"]["compacted"] is True
        assert out["applied"]["summary"] == "## Goal\n- keep going" + SECTION
        assert out["messages"][0] == decode_messages(messages[:1])[0]
        assert out["messages"][1:] == decode_messages(tail_only[40:])
        assert task_count(out) == 1
        assert out["token_count"] <= out["usable"] == 6200
    # The third call of each caller: the tail from its second answer, three more rounds.
    third_tail_only = assemble_with(grown(tail_only[40:], 3, 44), second_tail_only["applied"]["summary"])
    third_resent = assemble_with(messages[:1] + grown(tail_only[40:], 3, 44),
                                 second_resent["applied"]["summary"])
    assert third_tail_only["messages"] == third_resent["messages"]
    assert [m["timestamp"] for m in third_tail_only["messages"]] == [1, *range(86, 96)]
    assert task_count(third_tail_only) == task_count(third_resent) == 1


def test_the_summary_message_follows_the_restored_anchor():
    messages = long_session(rounds=24)
    config = {"summary_placement": "message"}
    first = assemble_with(messages, config=config)
    summary, tail = first["applied"]["summary"], first["applied"]["tail_start_index"]
    assert summary == "## Goal\n- keep going" + SECTION
    out = assemble_with(messages[tail:], summary, config=config)
    assert out["messages"] == first["messages"]
    assert out["messages"][1] == {"role": "user", "content": [
        {"type": "text", "text": "# Conversation summary\n\n## Goal\n- keep going"}],
        "timestamp": messages[tail]["timestamp"]}
    assert task_count(out) == 1


def test_the_extractive_fallback_carries_the_anchor_too():
    messages = long_session(rounds=24)
    out = call("context::assemble", {"messages": messages, "model": WIDE,
                                     "options": {"anchor_messages": 1}},
               config={"summarizer_fallback": "extractive"})
    applied = out["applied"]
    assert (applied["compacted"], applied["summary_kind"]) == (True, "extractive")
    assert applied["summary"].endswith(SECTION)
    again = call("context::assemble", {"messages": messages[applied["tail_start_index"]:],
                                       "model": WIDE,
                                       "options": {"anchor_messages": 1,
                                                   "previous_summary": applied["summary"]}},
                 config={"summarizer_fallback": "extractive"})
    assert again["messages"] == out["messages"]
    assert again["system_prompt"] == out["system_prompt"]
    assert "context-manager:anchor" not in out["system_prompt"]


def test_a_carried_anchor_is_counted_and_can_overflow():
    summary = "s" + SECTION.replace(TASK, X(3000))
    with pytest.raises(CallError) as err:
        call("context::assemble", {"messages": history(U("next")), "model": MODEL,
                                   "options": {"anchor_messages": 1, "previous_summary": summary}})
    assert err.value.message == ("handler error: context/overflow: assembled context requires "
                                 "3022 tokens but usable budget is 2600")


def test_without_an_anchor_the_section_is_only_taken_off():
    out = call("context::assemble", {"messages": history(U("next")), "model": MODEL,
                                     "options": {"previous_summary": "## Goal\n- g" + SECTION}})
    assert [m["content"][0]["text"] for m in out["messages"]] == ["next"]
    assert out["system_prompt"].endswith("\n## Goal\n- g")
    assert "anchor_tokens" not in out["applied"]


@pytest.mark.parametrize("summary,detail", [
    ("s\n<!-- /context-manager:anchor -->", "no opening line before the closing one"),
    ("s\n\n<!-- context-manager:anchor -->\n[1]\n<!-- /context-manager:anchor -->",
     "invalid type: integer `1`, expected internally tagged enum AgentMessage"),
    ("s\n\n<!-- context-manager:anchor -->\n[]\n<!-- /context-manager:anchor -->",
     "it must hold model-facing messages"),
    ("s\n\n<!-- context-manager:anchor -->\n{\n<!-- /context-manager:anchor -->",
     "unexpected end of data: line 1 column 2 (char 1)"),
])
def test_a_malformed_section_is_an_invalid_request(summary, detail):
    with pytest.raises(CallError) as err:
        call("context::assemble", {"messages": history(U("next")), "model": MODEL,
                                   "options": {"anchor_messages": 1, "previous_summary": summary}})
    assert (err.value.code, err.value.message) == (
        "invocation_failed",
        f"handler error: context/invalid_request: options.previous_summary: malformed anchor "
        f"section ({detail})")


def test_context_compact_carries_the_section_on():
    messages = long_session(rounds=24)[1:]
    out = call("context::compact", {"messages": messages, "model": WIDE,
                                    "options": {"previous_summary": "## Goal\n- g" + SECTION}},
               summarizer=goal_summarizer)
    assert (out["status"], out["summary"], out["used_prior_summary"]) == (
        "ok", "## Goal\n- keep going" + SECTION, True)


def test_summary_reuse_rewrites_into_the_round_trip_that_keeps_the_anchor_once():
    config = {"summary_reuse": True}
    messages = long_session(rounds=24)
    first = assemble_with(messages, config=config, lease_key="anchor-reuse")
    assert first["applied"]["summary"] == "## Goal\n- keep going" + SECTION
    whole = grown(messages, 1, 24)  # the caller resends its whole history, one round longer
    reused = assemble_with(whole, config=config, lease_key="anchor-reuse")
    tail_only = assemble_with(whole[45:], first["applied"]["summary"])
    assert (reused["applied"]["summary_reused"], reused["applied"]["reused_from_index"]) == (True, 45)
    assert reused["messages"] == tail_only["messages"]
    assert reused["system_prompt"] == tail_only["system_prompt"]
    assert task_count(reused) == 1
