"""context::count-tokens (spec 01 §6, W17, W18, W22)."""

from context_manager import call
from context_manager.wire.codec import dumps_wire

W16_TOOL = {"name": "agent_trigger", "description": "Call one permitted iii function.",
            "parameters": {"type": "object", "properties": {"function": {"type": "string"}}}}

W17_MESSAGES = [
    {"role": "user", "content": [{"type": "text", "text": "how warm is it now?"}], "timestamp": 1001},
    {"role": "assistant", "content": [{"type": "text", "text": "clear skies and a light wind."}],
     "stop_reason": "end", "model": "test-model", "provider": "test", "timestamp": 1002},
    {"role": "function_result", "function_call_id": "c1", "function_id": "weather::get",
     "content": [{"type": "text", "text": "22 degrees"}], "details": {}, "is_error": False, "timestamp": 1003},
    {"role": "custom", "custom_type": "ui_marker",
     "content": [{"type": "text", "text": "app-facing bookkeeping"}], "timestamp": 1004},
]


def count(**payload):
    return call("context::count-tokens", {"model": {"id": "m1"}, **payload})


def test_w17_all_roles_and_wire_bytes():
    response = count(messages=W17_MESSAGES)
    assert dumps_wire(response) == (
        b'{"by_role":{"assistant":40,"custom":30,"function_result":44,"user":22},"estimator":"heuristic","tokens":136}'
    )


def test_w18_prompt_tools_and_parts():
    assert count(messages=[]) == {"tokens": 0, "by_role": {"user": 0, "assistant": 0, "function_result": 0, "custom": 0},
                                  "estimator": "heuristic"}
    prompt = count(messages=[], system_prompt="x" * 16)
    assert prompt["tokens"] == 4 and "tools_tokens" not in prompt and "by_part" not in prompt
    tools = count(messages=[], tools=[W16_TOOL])
    assert (tools["tokens"], tools["tools_tokens"]) == (37, 37)
    empty_tools = count(messages=[], tools=[])
    assert (empty_tools["tokens"], empty_tools["tools_tokens"]) == (0, 0)
    parts = count(messages=[], parts={"identity": "x" * 16, "guidance": "x" * 8})
    assert parts["tokens"] == 0
    assert dumps_wire(parts["by_part"]) == b'{"guidance":2,"identity":4}'
    assert count(messages=[], parts={})["by_part"] == {}


def test_w22_prompt_and_tools_add_to_the_messages():
    response = count(
        messages=[{"role": "user", "content": [{"type": "text", "text": "question"}], "timestamp": 1},
                  {"role": "assistant", "content": [{"type": "text", "text": "answer"}], "stop_reason": "end",
                   "model": "m", "provider": "p", "timestamp": 2}],
        system_prompt="system prompt",
        tools=[{"name": "agent_trigger", "description": "Call an iii function.", "parameters": {"type": "object"}}],
    )
    assert response["tokens"] == 75
    assert response["tools_tokens"] == 23


def test_the_system_prompt_is_counted_raw_and_untrimmed():
    assert count(messages=[], system_prompt="abc   \n")["tokens"] == 1
    assert count(messages=[], system_prompt="héllo 😀")["tokens"] == 2
