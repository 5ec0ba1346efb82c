"""`context::assemble`: pass order, `applied`, `breakdown`, budget check (spec 02 §7, §9, §11)."""

from __future__ import annotations

import copy
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shorthand import PNG, A, C, M, R, U, sizes

from context_manager.core.assembly.passes import compaction as compaction_pass
from context_manager.core.compaction.inline import InlineCompaction
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.passes.media import TEXT_ONLY_MARKER
from context_manager.core.settings import WorkerConfig
from context_manager.handlers.assemble import handle
from context_manager.handlers.context import HandlerContext
from context_manager.ports import ModelBudget, RouterModel
from context_manager.wire import codec
from context_manager.wire.errors import DecodeError, HandlerError

E = HEURISTIC
PRUNE_EAGERLY = WorkerConfig(protect_recent_tokens=0, min_free_tokens=1)


class FakeRouter:
    def __init__(self, **record: Any) -> None:
        self.record = record
        self.calls = 0

    async def get_model_budget(self, provider, model_id):
        self.calls += 1
        model = RouterModel(id=model_id, **self.record)
        return ModelBudget(model=model, effective_max_output_tokens=model.max_output_tokens)


def router_200k(**extra: Any) -> FakeRouter:
    return FakeRouter(context_window=200000, max_output_tokens=8000, **extra)


def inline(context_window: int, max_output_tokens: int) -> dict:
    return {"id": "m", "limits": {"context_window": context_window, "max_output_tokens": max_output_tokens}}


def wire(messages: list[dict]) -> list[dict]:
    """Messages as a caller sends them (plain JSON values)."""
    return [codec.loads(codec.dumps(m)) for m in messages]


def run(payload: Any, config: WorkerConfig = WorkerConfig(), resolver=None, summarizer=None) -> dict:
    ctx = HandlerContext(config=config, resolver=resolver, summarizer=summarizer)
    return anyio.run(handle, payload, ctx)


def applied_core(response: dict) -> tuple:
    a = response["applied"]
    return (a["initial_token_count"], a["pruned"], a["pruned_tokens"], a["capped_parts"],
            a["capped_tokens"], a["compacted"])


def from_scratch(response: dict, overhead: int = 0, tools_tokens: int = 0) -> int:
    return (sum(sizes(response["messages"])) + E.text(response["system_prompt"]) + tools_tokens
            + overhead)


def history_h() -> list[dict]:
    return [U("task", 1), C("c1", "shell::run", 2), R("c1", "shell::run", "x" * 20000, 3), A("ok", 4),
            U("next", 5), U("done", 6)]


# --- 11.21 -------------------------------------------------------------------------------------


def test_example_11_21_a_prune_alone():
    response = run({"messages": wire(history_h()), "model": inline(5000, 500)}, PRUNE_EAGERLY)
    assert response["usable"] == 4000
    assert response["token_count"] == 185 == from_scratch(response)
    assert applied_core(response) == (5166, True, 4982, 0, 0, False)
    assert sizes(response["messages"])[2] == 59
    assert set(response["applied"]) == {"initial_token_count", "pruned", "pruned_tokens",
                                        "capped_parts", "capped_tokens", "compacted"}


def test_example_11_21_b_prune_and_compaction_disabled():
    payload = {"messages": wire(history_h()), "model": inline(5000, 500),
               "options": {"allow_prune": False, "allow_compaction": False}}
    response = run(payload, PRUNE_EAGERLY)
    assert response["token_count"] == 310 == from_scratch(response)
    assert applied_core(response) == (5166, True, 4856, 0, 0, False)
    result = response["messages"][2]
    assert sizes([result]) == [184]
    reference = result["details"]["context_reference"]
    assert reference["kind"] == "function_result_reference"
    assert reference["original_bytes"] == 20161
    assert reference["sha256"] == "3805744db64523e8d5909e9b23d36547210b68fde2efe52c1ee1a3d7f2769d36"
    assert reference["original_estimated_tokens"] == 5040
    assert reference["preview"] == "x" * 160 + "\u2026"


def test_example_11_21_c_protected_function_is_still_reduced_by_emergency():
    payload = {"messages": wire(history_h()), "model": inline(5000, 500),
               "options": {"protected_functions": ["shell::run"], "allow_compaction": False}}
    response = run(payload, PRUNE_EAGERLY)
    disabled = run({"messages": wire(history_h()), "model": inline(5000, 500),
                    "options": {"allow_prune": False, "allow_compaction": False}}, PRUNE_EAGERLY)
    assert response == disabled
    assert applied_core(response) == (5166, True, 4856, 0, 0, False)


def history_d() -> list[dict]:
    return [U("dump", 1), C("c1", "engine::traces::list", 2),
            R("c1", "engine::traces::list", "x" * 200000, 3), U("next", 4), U("done", 5)]


def test_example_11_21_d_cap_then_prune_keeps_the_capped_result():
    assert sizes(history_d()) == [17, 47, 50042, 17, 17]
    response = run({"messages": wire(history_d()), "model": {"id": "r"}}, resolver=router_200k())
    assert response["usable"] == 172000
    assert response["model_resolved"] == "router"
    assert response["token_count"] == 18141
    assert applied_core(response) == (50140, False, 0, 1, 31999, False)
    assert sizes(response["messages"])[2] == 18043


def test_example_11_21_d_prune_replaces_the_capped_text():
    response = run({"messages": wire(history_d()), "model": {"id": "r"}}, PRUNE_EAGERLY,
                   resolver=router_200k())
    text = response["messages"][2]["content"][0]["text"]
    assert text == "[output of engine::traces::list pruned: was ~18000 tokens; re-call it if still needed]"
    assert len(text) == 86 and E.text(text) == 21
    assert applied_core(response) == (50140, True, 17979, 1, 31999, False)
    assert response["token_count"] == 162 == from_scratch(response)


# --- 11.20 and 11.2 ----------------------------------------------------------------------------


def test_example_11_20_the_newest_huge_result_is_capped():
    history = [U("review this session", 1), C("latest-call", "session::messages", 2),
               R("latest-call", "session::messages", "x" * 4980000, 3)]
    assert sizes(history) == [21, 49, 1245044]
    config = WorkerConfig(protect_recent_tokens=2000000, min_free_tokens=2000000)
    response = run({"messages": wire(history), "model": inline(272000, 128000)}, config)
    assert response["usable"] == 124000
    assert applied_core(response) == (1245114, False, 0, 1, 1227000, False)
    assert sizes(response["messages"])[2] == 18044
    assert response["token_count"] == 18114 == from_scratch(response)


def test_example_11_2_through_assemble_changes_nothing():
    history = history_h()
    response = run({"messages": wire(history), "model": {"id": "r"}}, resolver=router_200k())
    assert response["usable"] == 172000
    assert applied_core(response) == (5166, False, 0, 0, 0, False)
    assert response["messages"] == history
    assert response["token_count"] == 5166


def test_example_11_2_with_max_result_tokens_4000():
    payload = {"messages": wire(history_h()), "model": {"id": "r"}, "options": {"max_result_tokens": 4000}}
    response = run(payload, resolver=router_200k())
    assert applied_core(response) == (5166, False, 0, 1, 1400, False)
    assert sizes(response["messages"])[2] == 3640
    assert response["token_count"] == 3766


def test_max_result_tokens_option_zero_disables_and_config_applies_otherwise():
    history = [U("dump", 1), R("c1", "f", "x" * 100000, 2)]
    off = run({"messages": wire(history), "model": inline(1000000, 1000),
               "options": {"max_result_tokens": 0}})
    assert (off["applied"]["capped_parts"], off["applied"]["capped_tokens"]) == (0, 0)
    from_config = run({"messages": wire(history), "model": inline(1000000, 1000)},
                      WorkerConfig(max_result_tokens=1000))
    assert from_config["applied"]["capped_parts"] == 1
    null_option = run({"messages": wire(history), "model": inline(1000000, 1000),
                       "options": {"max_result_tokens": None}}, WorkerConfig(max_result_tokens=1000))
    assert null_option == from_config


# --- media and views ---------------------------------------------------------------------------


def test_example_11_15_text_only_router_model_counts_the_marker():
    message = {"role": "user", "content": [{"type": "image", "mime": "image/png", "data": "A" * 400}],
               "timestamp": 1}
    response = run({"messages": [message], "model": {"id": "r"}}, resolver=router_200k())
    assert response["messages"] == [{"role": "user", "content": [{"type": "text", "text": TEXT_ONLY_MARKER}],
                                     "timestamp": 1}]
    assert response["applied"]["initial_token_count"] == 28 == response["token_count"]


@pytest.mark.parametrize(
    ("resolver", "model", "kept"),
    [
        (router_200k(supports_vision=True), {"id": "r"}, False),
        (router_200k(supports_vision=False), {"id": "r"}, False),
        (router_200k(), {"id": "r"}, False),
        (None, inline(200000, 8000), True),
        (None, {"id": "unknown"}, True),
    ],
    ids=["vision", "text-only", "no-flag", "inline", "fallback"],
)
def test_vision_capability_follows_model_resolution(resolver, model, kept):
    history = [M({"role": "user", "content": [PNG], "timestamp": 1}), A("seen", 2), U("next", 3)]
    response = run({"messages": wire(history), "model": model}, resolver=resolver)
    assert (response["messages"][0]["content"][0]["type"] == "image") is kept


def test_custom_messages_are_dropped_from_the_view_and_the_count():
    custom = M({"role": "custom", "custom_type": "ui", "content": [{"type": "text", "text": "x" * 400}],
                "timestamp": 2})
    history = [U("a", 1), custom, U("b", 3)]
    response = run({"messages": wire(history), "model": inline(10000, 1000)})
    assert response["messages"] == [history[0], history[2]]
    assert response["breakdown"]["by_role"]["custom"] == 0
    assert response["token_count"] == sum(sizes([history[0], history[2]]))


def test_the_request_is_never_modified():
    payload = {"messages": wire(history_h()), "model": inline(5000, 500),
               "options": {"allow_prune": False, "allow_compaction": False}}
    before = copy.deepcopy(payload)
    run(payload, PRUNE_EAGERLY)
    assert payload == before


# --- counting, breakdown, response -------------------------------------------------------------


TOOL = {"name": "agent_trigger", "description": "Run an agent function",
        "parameters": {"type": "object", "properties": {"function_id": {"type": "string"}}}}


def test_prompt_tools_overhead_and_breakdown():
    payload = {"messages": wire([U("hello", 1)]), "model": inline(10000, 1000),
               "system_prompt": "Be brief.  \n\t", "tools": [TOOL],
               "parts": {"zeta": "z" * 40, "alpha": "a" * 8},
               "options": {"request_overhead_tokens": 37}}
    response = run(payload)
    tools_tokens = E.function(codec.loads(codec.dumps(TOOL)))
    assert response["system_prompt"] == "Be brief."
    assert response["breakdown"] == {
        "system_prompt_tokens": 2, "tools_tokens": tools_tokens,
        "by_role": {"user": 18, "assistant": 0, "function_result": 0, "custom": 0},
        "by_part": {"alpha": 2, "zeta": 10}, "estimator": "heuristic"}
    assert list(response["breakdown"]["by_part"]) == ["alpha", "zeta"]
    assert response["token_count"] == 18 + 2 + tools_tokens + 37
    assert response["applied"]["initial_token_count"] == response["token_count"]


def test_initial_count_equals_count_tokens_plus_overhead():
    from context_manager.core.reuse import NO_REUSE
    from context_manager.handlers.count_tokens import count_tokens

    messages = wire(history_h())
    counted = count_tokens({"messages": messages, "model": {"id": "m"}, "system_prompt": "Sys",
                            "tools": [TOOL]}, HandlerContext(), NO_REUSE)
    response = run({"messages": messages, "model": inline(100000, 1000), "system_prompt": "Sys",
                    "tools": [TOOL], "options": {"request_overhead_tokens": 5}})
    assert response["applied"]["initial_token_count"] == counted["tokens"] + 5


def test_previous_summary_is_rendered_and_counted():
    payload = {"messages": wire([U("hi", 1)]), "model": inline(10000, 1000), "system_prompt": "Base.",
               "options": {"previous_summary": "S"}}
    response = run(payload)
    assert response["system_prompt"] == "Base.\n\n# Conversation summary\n\nS"
    assert response["breakdown"]["system_prompt_tokens"] == E.text(response["system_prompt"])


def test_response_members_and_wire_bytes():
    response = run({"messages": wire([U("hi", 1)]), "model": inline(10000, 1000)})
    assert list(response) == ["system_prompt", "messages", "token_count", "usable",
                              "effective_max_output_tokens", "model_resolved", "applied", "breakdown"]
    assert response["effective_max_output_tokens"] == 1000
    assert response["model_resolved"] == "inline"
    assert codec.dumps_wire(response).decode() == (
        '{"applied":{"capped_parts":0,"capped_tokens":0,"compacted":false,"initial_token_count":17,'
        '"pruned":false,"pruned_tokens":0},"breakdown":{"by_role":{"assistant":0,"custom":0,'
        '"function_result":0,"user":17},"estimator":"heuristic","system_prompt_tokens":0,'
        '"tools_tokens":0},"effective_max_output_tokens":1000,"messages":[{"content":[{"text":"hi",'
        '"type":"text"}],"role":"user","timestamp":1}],"model_resolved":"inline","system_prompt":"",'
        '"token_count":17,"usable":8000}')


def test_reserved_tokens_and_thinking_level_shape_usable():
    router = FakeRouter(context_window=200000, max_output_tokens=8000,
                        thinking_budgets={"high": 30000})
    response = run({"messages": [], "model": {"id": "r"},
                    "options": {"reserved_tokens": 1000, "thinking_level": "high"}}, resolver=router)
    assert response["usable"] == 200000 - 8000 - 1000 - 30000


# --- failures ----------------------------------------------------------------------------------


def test_overflow_after_emergency_reduction():
    payload = {"messages": wire(history_h()), "model": inline(5000, 500),
               "options": {"reserved_tokens": 4400, "allow_compaction": False}}
    with pytest.raises(HandlerError) as failure:
        run(payload, WorkerConfig(min_free_tokens=10**9))
    assert failure.value.wire_message == (
        "handler error: context/overflow: assembled context requires 310 tokens but usable budget is 100")


def test_overflow_when_compaction_is_unavailable():
    # No summariser: the compaction step is unavailable, so emergency reduction then overflow.
    payload = {"messages": wire(history_h()), "model": inline(5000, 500),
               "options": {"reserved_tokens": 4400}}
    with pytest.raises(HandlerError) as failure:
        run(payload, WorkerConfig(min_free_tokens=10**9))
    assert failure.value.text == (
        "context/overflow: assembled context requires 310 tokens but usable budget is 100")


def test_messages_are_required():
    with pytest.raises(HandlerError) as failure:
        run({"model": {"id": "m"}})
    assert failure.value.text == "context/invalid_request: messages is required"
    with pytest.raises(HandlerError):
        run({"model": {"id": "m"}, "messages": None})


def test_model_unresolved_without_fallback():
    with pytest.raises(HandlerError) as failure:
        run({"messages": [], "model": {"id": "ghost"}}, WorkerConfig(allow_fallback_limits=False))
    assert failure.value.kind == "context/model_unresolved"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "missing field `model`"),
        ({"messages": [], "model": None}, "invalid type: null, expected struct ModelInput"),
        ({"messages": [], "model": {"id": "m"}, "options": {"max_result_tokens": -1}},
         "invalid value: integer `-1`, expected u64"),
        ({"messages": [], "model": {"id": "m"}, "options": {"tail_turns": 1.5}},
         "invalid type: floating point `1.5`, expected usize"),
        ({"messages": [], "model": {"id": "m"}, "options": {"thinking_level": "max"}},
         "unknown variant `max`, expected one of `minimal`, `low`, `medium`, `high`, `xhigh`"),
        ({"messages": [], "model": {"id": "m"}, "options": {"allow_prune": "yes"}},
         'invalid type: string "yes", expected a boolean'),
        ({"messages": [], "model": {"id": "m"}, "options": {"protected_functions": [1]}},
         "invalid type: integer `1`, expected a string"),
        ({"messages": [], "model": {"id": "m"}, "options": []},
         "invalid type: sequence, expected struct AssembleOptions"),
        ({"messages": [], "model": {"id": "m"}, "parts": {"a": 1}},
         "invalid type: integer `1`, expected a string"),
        ({"messages": [], "model": {"id": "m"}, "system_prompt": 5},
         "invalid type: integer `5`, expected a string"),
        ({"messages": [{"role": "wizard"}]}, "unknown variant `wizard`, expected one of `user`, "
         "`assistant`, `function_result`, `custom`"),
    ],
)
def test_decoding_failures(payload, message):
    with pytest.raises(DecodeError) as failure:
        run(payload)
    assert failure.value.wire_message == f"serialization error: {message}"


def test_unknown_option_members_and_prune_thresholds_are_ignored():
    payload = {"messages": wire(history_h()), "model": inline(5000, 500),
               "options": {"protect_recent_tokens": 0, "min_free_tokens": 1, "whatever": True}}
    response = run(payload, WorkerConfig(min_free_tokens=10**9))
    # Prune thresholds come from configuration only: nothing pruned, emergency did the work.
    assert applied_core(response) == (5166, True, 4856, 0, 0, False)


# --- compaction hand-over ----------------------------------------------------------------------


def test_compaction_outcome_is_applied_with_request_indices(monkeypatch):
    custom = M({"role": "custom", "custom_type": "ui", "content": [], "timestamp": 0})
    history = [custom, U("old", 1), A("y" * 12000, 2), U("task", 3), A("ok", 4), U("done", 5)]
    seen: list[Any] = []

    async def fake_step(request, deps, early_due=None):
        seen.append(request)
        return InlineCompaction(summary="S", head_len=2, tail_start_view=2,
                                tokens_before=sum(request.sizes[:2]))

    monkeypatch.setattr(compaction_pass, "compaction_step", fake_step)
    payload = {"messages": wire(history), "model": inline(3000, 500), "system_prompt": "Base.",
               "options": {"lease_key": "session-1", "tail_turns": 1, "previous_summary": "P"}}
    response = run(payload)
    [request] = seen
    assert request.view == history[1:] and request.view_to_orig == [1, 2, 3, 4, 5]
    assert request.sizes == sizes(history[1:])
    assert request.request_messages == history
    assert (request.lease_key, request.tail_turns, request.previous_summary) == ("session-1", 1, "P")
    assert request.system_prompt == "Base.\n\n# Conversation summary\n\nP"
    assert request.usable == 2200
    assert response["system_prompt"] == "Base.\n\n# Conversation summary\n\nS"
    assert response["messages"] == history[3:]
    applied = response["applied"]
    assert applied["compacted"] is True and applied["summary"] == "S"
    assert applied["tail_start_index"] == 3
    assert applied["tokens_before"] == applied["summarized_head_tokens"] == sum(sizes(history[1:3]))
    assert response["token_count"] == from_scratch(response)


def test_compaction_is_not_attempted_when_disallowed_or_within_budget(monkeypatch):
    calls: list[Any] = []

    async def fake_step(request, deps, early_due=None):
        calls.append(request)
        return None

    monkeypatch.setattr(compaction_pass, "compaction_step", fake_step)
    run({"messages": wire(history_h()), "model": inline(5000, 500),
         "options": {"allow_compaction": False}})
    run({"messages": wire(history_h()), "model": inline(100000, 500)})
    assert calls == []
    run({"messages": wire(history_h()), "model": inline(5000, 500)})
    assert len(calls) == 1


class EchoSummarizer:
    async def summarize(self, request) -> str:
        return "SUMMARY"


def test_inline_compaction_end_to_end_with_a_summariser():
    history = [U("old", 1), A("y" * 12000, 2), U("task", 3), A("ok", 4), U("done", 5)]
    response = run({"messages": wire(history), "model": inline(3000, 500),
                    "options": {"tail_turns": 1}}, summarizer=EchoSummarizer())
    applied = response["applied"]
    assert applied["compacted"] is True and applied["summary"] == "SUMMARY"
    assert response["system_prompt"].endswith("# Conversation summary\n\nSUMMARY")
    assert response["messages"] == history[applied["tail_start_index"]:]
    assert response["token_count"] == from_scratch(response) <= response["usable"]


# --- invariants --------------------------------------------------------------------------------


def test_default_pass_through_is_byte_identical():
    history = [U("task", 1), C("c1", "shell::run", 2), R("c1", "shell::run", "x" * 4000, 3),
               A("ok", 4), U("next", 5)]
    response = run({"messages": wire(history), "model": inline(200000, 8000)})
    assert [codec.dumps(m) for m in response["messages"]] == [codec.dumps(m) for m in history]
    assert applied_core(response)[1:] == (False, 0, 0, 0, False)


_message_specs = st.lists(
    st.tuples(st.sampled_from(["user", "assistant", "result", "wrapper", "custom"]),
              st.integers(0, 30000)),
    min_size=0, max_size=10)


def _history_from(specs) -> list[dict]:
    history = []
    for ts, (kind, length) in enumerate(specs):
        call_id = f"c{ts}"
        if kind == "user":
            history.append(U("u" * (length % 50), ts))
        elif kind == "assistant":
            history.append(C(call_id, "tool::run", ts))
        elif kind == "result":
            history.append(R(f"c{ts - 1}", "tool::run", "r" * length, ts))
        elif kind == "wrapper":
            history.append(M({"role": "user", "timestamp": ts, "content": [
                {"type": "function_result", "function_call_id": f"c{ts - 1}",
                 "content": [{"type": "text", "text": "w" * length}, PNG]}]}))
        else:
            history.append(M({"role": "custom", "custom_type": "n", "timestamp": ts,
                              "content": [{"type": "text", "text": "c" * length}]}))
    return history


@settings(max_examples=60, deadline=None)
@given(specs=_message_specs, window=st.integers(0, 40000), cap=st.integers(0, 9000),
       allow_prune=st.booleans())
def test_assemble_invariants(specs, window, cap, allow_prune):
    history = _history_from(specs)
    payload = {"messages": wire(history), "model": inline(window, window // 10),
               "options": {"max_result_tokens": cap, "allow_prune": allow_prune,
                           "allow_compaction": False}}
    config = WorkerConfig(protect_recent_tokens=1000, min_free_tokens=1)
    try:
        response = run(payload, config)
    except HandlerError as failure:
        assert failure.kind == "context/overflow"
        return
    view = [m for m in history if m["role"] != "custom"]
    returned = response["messages"]
    assert response["token_count"] == from_scratch(response) <= response["usable"]
    assert sum(response["breakdown"]["by_role"].values()) == sum(sizes(returned))
    assert [(m["role"], m["timestamp"]) for m in returned] == [(m["role"], m["timestamp"]) for m in view]
    for before, after in zip(view, returned):
        assert len(before["content"]) == len(after["content"])
        if before["role"] == "function_result":
            assert (after["function_call_id"], after["function_id"]) == (
                before["function_call_id"], before["function_id"])
