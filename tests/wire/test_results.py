"""Result text, images, result tokens, real user turns and inline function-id resolution."""

from __future__ import annotations

from shorthand import PNG, C, M, U

from context_manager.core.counting.estimate import HEURISTIC, result_tokens
from context_manager.wire.codec import utf8_len
from context_manager.wire.messages import (
    images_in,
    is_real_user_turn,
    resolve_inline_function_ids,
    text_of,
)


def test_text_of_joins_top_level_text_blocks_only():
    blocks = [{"type": "text", "text": "a"}, PNG, {"type": "text", "text": "b"}]
    assert text_of(blocks) == "a\nb"


def test_text_of_ignores_nested_and_non_text_blocks():
    blocks = [
        {"type": "thinking", "text": "hidden"},
        {"type": "function_result", "function_call_id": "c", "content": [{"type": "text", "text": "n"}]},
        {"type": "file", "attachment_id": "f", "name": "a", "mime": "x", "size": 1},
        {"type": "function_call", "id": "c", "function_id": "f", "arguments": None},
    ]
    assert text_of(blocks) == ""


def test_images_are_found_inside_result_blocks_only():
    nested = {"type": "function_result", "function_call_id": "c",
              "content": [PNG, {"type": "function_result", "function_call_id": "d", "content": [PNG]}]}
    found = list(images_in([PNG, nested, {"type": "text", "text": "t"}]))
    assert found == [PNG, PNG, PNG] and all(image is PNG for image in found)


def test_result_tokens_is_text_estimate_plus_image_allowances():
    blocks = [{"type": "text", "text": "t" * 1000}, PNG, PNG]
    assert result_tokens(blocks, HEURISTIC) == 250 + 2 * 4096


def test_utf8_len_counts_utf8_bytes():
    assert utf8_len("\u20ac") == 3
    assert utf8_len("\u2026") == 3
    assert utf8_len("\u00e9" * 3) == 6


def test_real_user_turns_exclude_result_wrappers_and_other_roles():
    wrapper = M({"role": "user", "timestamp": 3, "content": [
        {"type": "text", "text": "with text"},
        {"type": "function_result", "function_call_id": "c1", "content": []}]})
    assert is_real_user_turn(U("a", 1))
    assert not is_real_user_turn(wrapper)
    assert not is_real_user_turn(C("c1", "f", 2))
    custom = M({"role": "custom", "custom_type": "note", "content": [], "timestamp": 4})
    assert not is_real_user_turn(custom)


def test_two_real_user_turns_among_three_user_messages():
    wrapper = M({"role": "user", "timestamp": 3, "content": [
        {"type": "function_result", "function_call_id": "c1", "content": []}]})
    history = [U("a", 1), C("c1", "f", 2), wrapper, C("c2", "g", 4), U("b", 5)]
    assert sum(is_real_user_turn(m) for m in history) == 2


def _wrapper(call_id: str, ts: int) -> dict:
    return M({"role": "user", "timestamp": ts, "content": [
        {"type": "text", "text": "x"},
        {"type": "function_result", "function_call_id": call_id, "content": [
            {"type": "function_call", "id": "inner", "function_id": "nested::call", "arguments": None},
            {"type": "function_result", "function_call_id": "inner", "content": []}]}]})


def test_resolution_uses_the_latest_preceding_call():
    history = [C("c1", "first::call", 1), C("c1", "second::call", 2), _wrapper("c1", 3),
               C("c1", "later::call", 4)]
    assert resolve_inline_function_ids(history) == {(2, 1): "second::call"}


def test_a_call_after_the_result_does_not_resolve_it():
    history = [_wrapper("c9", 1), C("c9", "late::call", 2)]
    assert resolve_inline_function_ids(history) == {}


def test_calls_in_any_role_count_but_nested_blocks_are_not_scanned():
    user_call = M({"role": "user", "timestamp": 1, "content": [
        {"type": "function_call", "id": "u1", "function_id": "from::user", "arguments": None}]})
    history = [user_call, _wrapper("u1", 2), _wrapper("inner", 3)]
    assert resolve_inline_function_ids(history) == {(1, 1): "from::user"}
