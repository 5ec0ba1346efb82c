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
