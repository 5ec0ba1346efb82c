"""Media normalization of the model-facing view (spec 02 §3, example 11.15)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shorthand import PNG, A, C, M, U, sizes

from context_manager.core.passes.media import (
    TEXT_ONLY_MARKER,
    TOOL_IMAGE_MARKER,
    USER_IMAGE_MARKER,
    normalize_media,
)

K = "kept"
TOOL, USER, TEXT = TOOL_IMAGE_MARKER, USER_IMAGE_MARKER, TEXT_ONLY_MARKER


def view_11_15() -> list[dict]:
    return [
        M({"role": "user", "content": [{"type": "text", "text": "look"}, PNG], "timestamp": 1}),
        C("c1", "browser::screenshot", 2),
        M({"role": "function_result", "function_call_id": "c1", "function_id": "browser::screenshot",
           "content": [{"type": "text", "text": "caption"}, PNG], "details": None, "is_error": False,
           "timestamp": 3}),
        C("c2", "browser::screenshot", 4),
        M({"role": "user", "content": [
            {"type": "function_result", "function_call_id": "c2", "content": [PNG]}, PNG],
           "timestamp": 5}),
        A("done", 6),
        U("thanks", 7),
    ]


def _state(block: dict) -> str:
    if block["type"] == "image":
        return K
    assert block["type"] == "text"
    return block["text"]


def outcomes(view: list[dict]) -> list[str]:
    """Image states in the order #0, #2, #4 inline, #4 direct (absent messages skipped)."""
    found = [_state(view[0]["content"][1])]
    if len(view) > 2:
        found.append(_state(view[2]["content"][1]))
    if len(view) > 4:
        found.append(_state(view[4]["content"][0]["content"][0]))
        found.append(_state(view[4]["content"][1]))
    return found


@pytest.mark.parametrize(
    ("length", "capability", "expected"),
    [
        (3, "vision", [K, K]),
        (5, "vision", [K, TOOL, K, K]),
        (7, "vision", [USER, TOOL, TOOL, USER]),
        (3, "text_only", [TEXT, TEXT]),
        (5, "text_only", [TEXT, TEXT, TEXT, TEXT]),
        (7, "text_only", [TEXT, TEXT, TEXT, TEXT]),
        (3, "unknown", [K, K]),
        (5, "unknown", [K, K, K, K]),
        (7, "unknown", [K, K, K, K]),
    ],
)
def test_example_11_15_outcome_table(length, capability, expected):
    view = view_11_15()[:length]
    assert outcomes(normalize_media(view, capability)) == expected


def test_example_11_15_sizes_for_the_full_vision_view():
    view = view_11_15()
    assert sizes(view) == [4125, 47, 4151, 47, 8241, 30, 18]
    assert sizes(normalize_media(view, "vision")) == [45, 47, 71, 47, 80, 30, 18]


def test_replaced_images_become_exact_text_blocks_and_siblings_stay():
    normalized = normalize_media(view_11_15(), "vision")
    assert normalized[2]["content"] == [{"type": "text", "text": "caption"},
                                        {"type": "text", "text": TOOL}]
    assert normalized[4]["content"][0] == {"type": "function_result", "function_call_id": "c2",
                                           "content": [{"type": "text", "text": TOOL}]}


def test_the_request_view_is_never_modified():
    view = view_11_15()
    before = copy.deepcopy(view)
    normalize_media(view, "vision")
    normalize_media(view, "text_only")
    assert view == before


def _user_image(ts: int = 1) -> dict:
    return M({"role": "user", "content": [PNG], "timestamp": ts})


@pytest.mark.parametrize(
    ("later", "expected"),
    [
        ([U("more", 4)], K),  # steering before any answer
        ([A("answer", 3)], K),  # answered, but the user has not moved on
        ([A("answer", 3), U("more", 4)], USER),
        ([U("steer", 2), C("c1", "browser::screenshot", 3),
          M({"role": "function_result", "function_call_id": "c1",
             "function_id": "browser::screenshot",
             "content": [{"type": "text", "text": "result"}], "timestamp": 4})], K),
        ([C("c1", "browser::screenshot", 2),
          M({"role": "user", "content": [{"type": "function_result", "function_call_id": "c1",
                                           "content": [{"type": "text", "text": "result"}]}],
             "timestamp": 3}),
          A("answer", 4)], K),  # a result wrapper is not a user turn
    ],
)
def test_user_image_aging(later, expected):
    normalized = normalize_media([_user_image(), *later], "vision")
    assert _state(normalized[0]["content"][0]) == expected


def test_text_only_single_image_message():
    message = M({"role": "user", "content": [{"type": "image", "mime": "image/png", "data": "A" * 400}],
                 "timestamp": 1})
    assert sizes([message]) == [4117]
    [normalized] = normalize_media([message], "text_only")
    assert normalized == {"role": "user", "content": [{"type": "text", "text": TEXT}], "timestamp": 1}
    assert sizes([normalized]) == [28]


def test_images_directly_in_an_assistant_message_are_never_aged():
    message = M({"role": "assistant", "content": [
        PNG, {"type": "function_result", "function_call_id": "c1", "content": [PNG]}],
        "stop_reason": "end", "model": "m", "provider": "p", "timestamp": 1})
    aged = normalize_media([message, A("later", 2), U("next", 3)], "vision")[0]
    assert aged["content"][0] == PNG
    assert aged["content"][1]["content"] == [{"type": "text", "text": TOOL}]
    assert normalize_media([message], "vision")[0] == message
    [text_only] = normalize_media([message], "text_only")
    assert text_only["content"][0] == {"type": "text", "text": TEXT}
    assert text_only["content"][1]["content"] == [{"type": "text", "text": TEXT}]


def test_a_replaced_image_loses_its_attachment_id():
    message = M({"role": "user", "content": [
        {"type": "image", "mime": "image/png", "data": "AAAA", "attachment_id": "att-1"}],
        "timestamp": 1})
    [normalized] = normalize_media([message], "text_only")
    assert normalized["content"] == [{"type": "text", "text": TEXT}]


def test_nested_images_at_any_depth_use_the_tool_marker():
    deep = M({"role": "function_result", "function_call_id": "c1", "function_id": "f",
              "content": [{"type": "function_result", "function_call_id": "c0", "content": [
                  {"type": "function_result", "function_call_id": "c00", "content": [PNG]}]}],
              "timestamp": 1})
    [normalized, _] = normalize_media([deep, A("seen", 2)], "vision")
    inner = normalized["content"][0]["content"][0]["content"]
    assert inner == [{"type": "text", "text": TOOL}]


def test_marker_texts_are_exact():
    assert TEXT == "[image omitted: model does not support vision]"
    assert TOOL == "[tool image omitted after use; re-call the function if visual details are needed]"
    assert USER == ("[user image omitted after use; ask the user to resend it if visual details "
                    "are needed]")


_block = st.sampled_from(["text", "image", "nested"])
_message = st.tuples(st.sampled_from(["user", "assistant", "function_result", "wrapper"]),
                     st.lists(_block, max_size=3))


def _build(role: str, kinds: list[str], ts: int) -> dict:
    blocks = []
    for kind in kinds:
        if kind == "text":
            blocks.append({"type": "text", "text": "t"})
        elif kind == "image":
            blocks.append(PNG)
        else:
            blocks.append({"type": "function_result", "function_call_id": "c", "content": [PNG]})
    if role == "wrapper":
        blocks.append({"type": "function_result", "function_call_id": "w", "content": []})
        role = "user"
    if role == "assistant":
        return M({"role": "assistant", "content": blocks, "stop_reason": "end", "model": "m",
                  "provider": "p", "timestamp": ts})
    if role == "function_result":
        return M({"role": "function_result", "function_call_id": "c", "function_id": "f",
                  "content": blocks, "timestamp": ts})
    return M({"role": "user", "content": blocks, "timestamp": ts})


def _pairs(before: list[dict], after: list[dict]):
    assert len(before) == len(after)
    for old, new in zip(before, after):
        assert old["type"] == new["type"] or (old["type"] == "image" and new["type"] == "text")
        if old["type"] == "function_result":
            yield from _pairs(old["content"], new["content"])
        else:
            yield old, new


@settings(max_examples=100, deadline=None)
@given(specs=st.lists(_message, max_size=8), capability=st.sampled_from(["vision", "text_only", "unknown"]))
def test_only_images_change_one_for_one_into_markers(specs, capability):
    view = [_build(role, kinds, ts) for ts, (role, kinds) in enumerate(specs)]
    normalized = normalize_media(view, capability)
    markers = {TEXT, TOOL, USER}
    for message, new in zip(view, normalized):
        assert {k: v for k, v in message.items() if k != "content"} == {
            k: v for k, v in new.items() if k != "content"}
        assert list(message) == list(new)
        for old, block in _pairs(message["content"], new["content"]):
            if old != block:
                assert old["type"] == "image" and block["type"] == "text" and block["text"] in markers
            if capability == "text_only" and old["type"] == "image":
                assert block == {"type": "text", "text": TEXT}
    if capability == "unknown":
        assert normalized == view
