"""Message, tool and text counts of the tokenizer estimator: the pieces a provider receives,
each encoded on its own, plus the per-message framing allowance."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager.adapters.tokenizers import FRAMING_TOKENS_PER_MESSAGE, TokenizerEstimator, tokenizer_for_encoding
from context_manager.adapters.tokenizers import estimator as estimator_module
from context_manager.adapters.tokenizers.cache import TokenCountCache
from context_manager.adapters.tokenizers.estimator import message_pieces
from context_manager.core.counting.estimate import IMAGE_TOKEN_BUDGET
from context_manager.wire import decode as t
from context_manager.wire.codec import dumps


@pytest.fixture(scope="module", params=["o200k_base", "cl100k_base"])
def est(request):
    shared = tokenizer_for_encoding(request.param)
    # A private cache so each test sees its own misses and hits.
    return TokenizerEstimator(shared.encoding, TokenCountCache())


def n(est, text):
    return len(est.encoding.encode_ordinary(text))


def user(*blocks, timestamp=1):
    return t.decode_message({"role": "user", "content": list(blocks), "timestamp": timestamp})


def text(s):
    return {"type": "text", "text": s}


def test_framing_allowance_is_four_tokens_and_documented():
    assert FRAMING_TOKENS_PER_MESSAGE == 4
    doc = estimator_module.__doc__
    assert "FRAMING_TOKENS_PER_MESSAGE`` (4) per message" in doc


def test_empty_message_costs_the_framing_only(est):
    assert est.message(user()) == 4
    assert est.message(user(text(""))) == 4


def test_text_blocks_are_encoded_piece_by_piece(est):
    a, b = "hello", " world"
    m = user(text(a), text(b))
    assert est.message(m) == 4 + n(est, a) + n(est, b)
    assert est.message(user(text("hello world"))) == 4 + n(est, "hello world")


def test_keys_timestamps_and_model_names_do_not_count(est):
    short = user(text("same text"), timestamp=1)
    long_ts = user(text("same text"), timestamp=1_700_000_000_123)
    assert est.message(short) == est.message(long_ts) == 4 + n(est, "same text")
    assistant = t.decode_message({
        "role": "assistant", "content": [text("same text")], "stop_reason": "end",
        "usage": {"input": 10, "output": 20, "cost_usd": 0.5}, "warnings": ["w"],
        "model": "gpt-4o-2024-08-06", "provider": "openai", "timestamp": 5,
    })
    assert est.message(assistant) == 4 + n(est, "same text")


def test_assistant_thinking_and_function_call(est):
    m = t.decode_message({
        "role": "assistant",
        "content": [
            {"type": "thinking", "text": "Let me check the weather.", "signature": "sig-abc"},
            text("Checking."),
            {"type": "function_call", "id": "call_1", "function_id": "weather::get",
             "arguments": {"unit": "c", "city": "Paris", "days": 3, "ratio": 0.5}},
            {"type": "function_call", "id": "call_2", "function_id": "clock::now"},
        ],
        "stop_reason": "function_call", "model": "gpt-4o", "provider": "openai", "timestamp": 2,
    })
    args = '{"city":"Paris","days":3,"ratio":0.5,"unit":"c"}'
    assert dumps(m["content"][2]["arguments"]).decode() == args
    expected = 4 + sum(n(est, s) for s in [
        "Let me check the weather.", "Checking.", "weather::get", args, "clock::now", "null"])
    assert est.message(m) == expected
    assert message_pieces(m) == (
        ["Let me check the weather.", "Checking.", "weather::get", args, "clock::now", "null"], 0)


def function_result(content, details=None, is_error=False):
    payload = {"role": "function_result", "function_call_id": "call_1", "function_id": "weather::get",
               "content": content, "is_error": is_error, "timestamp": 3}
    if details is not None:
        payload["details"] = details
    return t.decode_message(payload)


def test_function_result_counts_its_text_but_not_its_details(est):
    plain = function_result([text("22 degrees, sunny")])
    with_details = function_result([text("22 degrees, sunny")], details={"raw": "x" * 500})
    assert est.message(plain) == est.message(with_details) == 4 + n(est, "22 degrees, sunny")


def test_a_denial_envelope_is_counted(est):
    denied = {"status": "denied", "reason": "not allowed"}
    m = function_result([text("denied")], details=denied)
    envelope = '{"reason":"not allowed","status":"denied"}'
    assert est.message(m) == 4 + n(est, "denied") + n(est, envelope)


def test_images_cost_the_fixed_allowance_at_any_depth(est):
    image = {"type": "image", "mime": "image/png", "data": "iVBORw0KGgo" * 1000}
    top = user(text("look"), image)
    assert est.message(top) == 4 + n(est, "look") + IMAGE_TOKEN_BUDGET
    nested = t.decode_message({
        "role": "custom", "custom_type": "tool_log",
        "content": [{"type": "function_result", "function_call_id": "c", "content": [
            text("outer"), image,
            {"type": "function_result", "function_call_id": "d", "content": [text("inner"), image],
             "is_error": True},
        ]}],
        "timestamp": 4,
    })
    assert est.message(nested) == 4 + n(est, "outer") + n(est, "inner") + 2 * IMAGE_TOKEN_BUDGET


def test_file_blocks_count_their_compact_json(est):
    block = {"type": "file", "attachment_id": "att_1", "name": "report.pdf", "mime": "application/pdf",
             "size": 1234}
    m = user(block)
    serialized = '{"type":"file","attachment_id":"att_1","name":"report.pdf","mime":"application/pdf","size":1234}'
    assert est.message(m) == 4 + n(est, serialized)


def test_tools_count_their_compact_schema(est):
    [tool] = t.decode_tools([{
        "name": "agent_trigger", "description": "Call one permitted iii function.",
        "parameters": {"type": "object", "properties": {"function": {"type": "string"}}},
        "strict": True,
    }])
    serialized = dumps(tool).decode()
    assert serialized == ('{"name":"agent_trigger","description":"Call one permitted iii function.",'
                          '"parameters":{"properties":{"function":{"type":"string"}},"type":"object"}}')
    assert est.function(tool) == n(est, serialized)
    assert est.function(tool) == n(est, serialized)  # cached


def test_system_prompt_text(est):
    assert est.text("") == 0
    assert est.text("You are a helpful assistant.") == n(est, "You are a helpful assistant.")


block_text = st.text(max_size=80)


@settings(max_examples=60, deadline=None)
@given(st.lists(block_text, max_size=5))
def test_any_texts_count_exactly(est, texts):
    m = user(*[text(s) for s in texts])
    assert est.message(m) == 4 + sum(n(est, s) for s in texts)
    for s in texts:
        assert est.text(s) == n(est, s)
