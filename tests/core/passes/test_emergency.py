"""Emergency reduction (spec 02 §6, examples 11.16-11.18)."""

from __future__ import annotations

import copy
import hashlib

from shorthand import PNG, C, M, R, sizes

from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.passes.emergency import emergency_reduce, preview
from context_manager.wire import codec

E = HEURISTIC
HINT = "The original result remains in the session transcript; retrieve it by function_call_id."


def stats(result):
    s = result.stats
    return (s.pruned_tokens, s.pruned_parts, s.scanned_parts)


def reduce(messages, required):
    return emergency_reduce(messages, sizes(messages), required, E)


MESSAGE_11_16 = {"role": "function_result", "function_call_id": "c7", "function_id": "fs::read",
                 "content": [{"type": "text", "text": "0123456789" * 100}],
                 "details": {"size": 1000, "path": "/tmp/a.txt"}, "is_error": False, "timestamp": 7}

EXPECTED_11_16 = (
    '{"role":"function_result","function_call_id":"c7","function_id":"fs::read","content":[{"type":'
    '"text","text":"[function result reduced for context budget] {\\"function_call_id\\":\\"c7\\",'
    '\\"function_id\\":\\"fs::read\\",\\"kind\\":\\"function_result_reference\\",\\"original_bytes'
    '\\":1188,\\"original_estimated_tokens\\":289,\\"preview\\":\\"' + "0123456789" * 16 + '\u2026\\",'
    '\\"retrieval_hint\\":\\"' + HINT + '\\",\\"sha256\\":\\"2fcffa77283f14f6b10459d0d1d4e67cd30e3b9d9bf6c2'
    'bdf5a28959dbd5827a\\"}"}],"details":{"context_reference":{"function_call_id":"c7","function_id":'
    '"fs::read","kind":"function_result_reference","original_bytes":1188,"original_estimated_tokens":'
    '289,"preview":"' + "0123456789" * 16 + '\u2026","retrieval_hint":"' + HINT + '","sha256":"2fcffa7'
    '7283f14f6b10459d0d1d4e67cd30e3b9d9bf6c2bdf5a28959dbd5827a"}},"is_error":false,"timestamp":7}'
)


def test_example_11_16_message_level_reference_bytes():
    message = M(MESSAGE_11_16)
    serialized = codec.dumps(message)
    assert len(serialized) == 1188
    assert hashlib.sha256(serialized).hexdigest() == (
        "2fcffa77283f14f6b10459d0d1d4e67cd30e3b9d9bf6c2bdf5a28959dbd5827a")
    assert sizes([message]) == [289]
    result = reduce([message], 1)
    assert codec.dumps(result.messages[0]).decode() == EXPECTED_11_16
    assert result.sizes == [182] == sizes(result.messages)
    assert stats(result) == (107, 1, 1)
    rendered = result.messages[0]["content"][0]["text"]
    assert len(rendered.encode()) == 543
    assert rendered.startswith("[function result reduced for context budget] {")


def test_example_11_16_details_member_order_does_not_matter():
    reordered = M({**MESSAGE_11_16, "details": {"path": "/tmp/a.txt", "size": 1000}})
    assert codec.dumps(reduce([reordered], 1).messages[0]).decode() == EXPECTED_11_16


EXPECTED_11_17 = (
    '{"role":"user","content":[{"type":"function_result","function_call_id":"c1","content":[{"type":'
    '"text","text":"[function result reduced for context budget] {\\"function_call_id\\":\\"c1\\",'
    '\\"function_id\\":\\"shell::run\\",\\"kind\\":\\"function_result_reference\\",\\"original_bytes'
    '\\":6104,\\"original_estimated_tokens\\":1500,\\"preview\\":\\"' + "\u00e9" * 160 + '\u2026\\",'
    '\\"retrieval_hint\\":\\"' + HINT + '\\",\\"sha256\\":\\"7d9f5ca8e83f33cc09e2a9eecd8d484758de24ab82ae'
    '0982827281a2e13a5653\\"}"}],"is_error":true},{"type":"text","text":"sibling text here"}],'
    '"timestamp":2}'
)


def test_example_11_17_inline_reference_bytes():
    wrapper = M({"role": "user", "timestamp": 2, "content": [
        {"type": "function_result", "function_call_id": "c1",
         "content": [{"type": "text", "text": "\u00e9" * 3000}], "is_error": True},
        {"type": "text", "text": "sibling text here"}]})
    history = [C("c1", "shell::run", 1), wrapper]
    assert sizes(history) == [45, 1547]
    block_bytes = codec.dumps(wrapper["content"][0])
    assert len(block_bytes) == 6104
    assert hashlib.sha256(block_bytes).hexdigest() == (
        "7d9f5ca8e83f33cc09e2a9eecd8d484758de24ab82ae0982827281a2e13a5653")
    result = reduce(history, 1)
    assert stats(result) == (1317, 1, 1)
    assert result.sizes == [45, 230] == sizes(result.messages)
    assert codec.dumps(result.messages[1]).decode() == EXPECTED_11_17
    assert result.messages[0] is history[0]


def test_example_11_17_image_only_unresolved_block():
    wrapper = M({"role": "user", "timestamp": 2, "content": [
        {"type": "function_result", "function_call_id": "zz", "content": [PNG]}]})
    assert sizes([wrapper]) == [4133]
    block_bytes = codec.dumps(wrapper["content"][0])
    assert len(block_bytes) == 112
    assert hashlib.sha256(block_bytes).hexdigest() == (
        "4042ceeb5709b3a5b0d5672e7f2b010e4d20173a04436b1214870fa1459b0421")
    result = reduce([wrapper], 1)
    block = result.messages[0]["content"][0]
    text = block["content"][0]["text"]
    assert block == {"type": "function_result", "function_call_id": "zz",
                     "content": [{"type": "text", "text": text}]}
    reference = codec.loads(text.removeprefix("[function result reduced for context budget] "))
    assert reference == {"function_call_id": "zz", "kind": "function_result_reference",
                         "original_bytes": 112, "original_estimated_tokens": 4096, "preview": "null",
                         "retrieval_hint": HINT,
                         "sha256": "4042ceeb5709b3a5b0d5672e7f2b010e4d20173a04436b1214870fa1459b0421"}
    assert "function_id" not in text
    assert stats(result) == (4005, 1, 1)
    assert result.sizes == [128] == sizes(result.messages)


def test_example_11_18_skip_when_the_reference_would_be_larger():
    message = R("c8", "fs::stat", "size=12", 8)
    assert sizes([message]) == [41]
    result = reduce([message], 1)
    assert stats(result) == (0, 0, 1)
    assert result.messages == [message]


def _ordering_history():
    return [R("c1", "small", "x" * 4000, 1), R("c2", "largest", "x" * 40000, 2),
            R("c3", "middle", "x" * 20000, 3)]


def test_example_11_18_largest_first():
    history = _ordering_history()
    assert sizes(history) == [1039, 10039, 5039]
    one = reduce(history, 1)
    assert stats(one) == (9857, 1, 3)
    assert one.sizes == [1039, 182, 5039]
    more = reduce(history, 10000)
    assert stats(more) == (14714, 2, 3)
    assert more.sizes == [1039, 182, 182]
    assert more.messages[0] is history[0]


def test_example_11_18_tie_break_by_transcript_order():
    history = [R("c1", "a", "x" * 4000, 1), R("c2", "b", "x" * 4000, 2), R("c3", "c", "x" * 4000, 3)]
    assert sizes(history) == [1038, 1038, 1038]
    one = reduce(history, 1)
    assert stats(one) == (859, 1, 3)
    assert one.messages[0]["details"]["context_reference"]["function_id"] == "a"
    assert one.messages[1:] == history[1:]
    two = reduce(history, 1000)
    assert stats(two) == (1718, 2, 3)
    assert two.messages[2] == history[2]


def test_required_zero_reduces_nothing():
    history = _ordering_history()
    result = reduce(history, 0)
    assert stats(result) == (0, 0, 3) and result.messages == history


def test_denied_details_are_replaced_by_the_reference():
    message = R("c1", "shell::run", "x" * 8000, 1, details={"status": "denied", "why": "policy"},
                is_error=True)
    replaced = reduce([message], 1).messages[0]
    assert list(replaced["details"]) == ["context_reference"]
    assert replaced["is_error"] is True and replaced["timestamp"] == 1


def test_preview_falls_back_to_details_and_counts_code_points():
    assert preview([], {"a": 1}) == '{"a":1}'
    assert preview([], None) == "null"
    assert preview([{"type": "text", "text": "\u20ac" * 160}], None) == "\u20ac" * 160
    assert preview([{"type": "text", "text": "\u20ac" * 161}], None) == "\u20ac" * 160 + "\u2026"


def test_identical_input_reduces_to_identical_bytes_and_inputs_stay_untouched():
    history = _ordering_history()
    before = copy.deepcopy(history)
    first = reduce(history, 10000)
    second = reduce(history, 10000)
    assert [codec.dumps(m) for m in first.messages] == [codec.dumps(m) for m in second.messages]
    assert history == before
