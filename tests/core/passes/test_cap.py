"""The per-result cap (spec 02 §4, examples 11.9-11.14)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shorthand import PNG, C, M, R, U, sizes

from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.passes.cap import cap_results, capped_text, choose_marker, full_marker
from context_manager.wire.codec import utf8_len
from context_manager.wire.messages import text_of

E = HEURISTIC


def run(messages, threshold):
    return cap_results(messages, sizes(messages), threshold, E)


def test_example_11_9_cap_of_a_100000_token_result():
    history = [U("dump", 1), C("c1", "engine::traces::list", 2),
               R("c1", "engine::traces::list", "x" * 400000, 3), U("read it all", 4)]
    marker = ("\n[\u2026result capped: was ~100000 tokens; middle omitted; re-call "
              "engine::traces::list with narrower arguments if the omitted middle is needed]\n")
    assert full_marker(100000, "engine::traces::list") == marker
    assert utf8_len(marker) == 142
    result = run(history, 20000)
    new_text = result.messages[2]["content"][0]["text"]
    assert new_text == "x" * 43114 + marker + "x" * 28744
    assert utf8_len(new_text) == 72000 and len(new_text) == 71998
    assert E.text(new_text) == 18000
    assert sizes(history)[2] == 100042 and result.sizes[2] == 18043
    assert (result.stats.capped_parts, result.stats.capped_tokens) == (1, 81999)
    assert result.messages[2]["details"] is None
    assert result.messages[2]["function_call_id"] == "c1"


def test_example_11_10_multibyte_text_moves_the_tail_forward():
    message = R("c1", "f::g", "\u20ac" * 120000, 1)
    result = run([message], 20000)
    marker = full_marker(90000, "f::g")
    assert utf8_len(marker) == 125
    new_text = result.messages[0]["content"][0]["text"]
    assert new_text == "\u20ac" * 14375 + marker + "\u20ac" * 9583
    assert utf8_len(new_text) == 71999 and E.text(new_text) == 17999
    assert (sizes([message])[0], result.sizes[0]) == (90038, 18039)
    assert result.stats.capped_tokens == 71999


@pytest.mark.parametrize(
    ("function_id", "threshold", "marker_bytes", "new_bytes", "before", "after"),
    [
        ("f::g", 200, 125, 720, 50038, 219),
        ("engine::observability::traces::list-with-a-very-long-descriptive-name", 300, 190, 1080,
         50055, 325),
    ],
)
def test_example_11_11_small_thresholds_keep_the_full_marker(
    function_id, threshold, marker_bytes, new_bytes, before, after
):
    message = R("c1", function_id, "x" * 200000, 1)
    marker = choose_marker(50000, function_id, threshold, E)
    assert marker == full_marker(50000, function_id) and utf8_len(marker) == marker_bytes
    result = run([message], threshold)
    new_text = result.messages[0]["content"][0]["text"]
    assert utf8_len(new_text) == new_bytes
    assert (sizes([message])[0], result.sizes[0]) == (before, after)
    assert run(result.messages, threshold).stats.capped_parts == 0


def test_example_11_11_head_and_tail_budgets():
    text = "x" * 200000
    capped = capped_text(text, 50000, 200, full_marker(50000, "f::g"))
    assert capped == "x" * 357 + full_marker(50000, "f::g") + "x" * 238
    long_id = "engine::observability::traces::list-with-a-very-long-descriptive-name"
    capped = capped_text(text, 50000, 300, full_marker(50000, long_id))
    assert capped.startswith("x" * 534 + "\n") and capped.endswith("\n" + "x" * 356)


def test_example_11_11_threshold_one_falls_back_to_the_short_marker():
    function_id = "function::with::a::long::identifier"
    message = R("c1", function_id, "x" * 200000, 1)
    assert choose_marker(50000, function_id, 1, E) == "[cap]"
    result = run([message], 1)
    assert result.messages[0]["content"] == [{"type": "text", "text": "[cap]"}]
    assert (sizes([message])[0], result.sizes[0]) == (50046, 47)
    assert run(result.messages, 1).stats.capped_parts == 0


def test_marker_candidates_fall_through_to_the_ellipsis_and_the_empty_string():
    # A threshold of 0 disables the pass, so the later candidates are reached only directly.
    assert choose_marker(5, "f", 0, E) == "\u2026"


def test_example_11_12_image_only_result_becomes_the_marker_alone():
    message = M({"role": "function_result", "function_call_id": "c1",
                 "function_id": "browser::screenshots", "content": [PNG] * 5, "details": None,
                 "is_error": False, "timestamp": 1})
    result = run([message], 20000)
    marker = full_marker(20480, "browser::screenshots")
    assert utf8_len(marker) == 141
    assert result.messages[0]["content"] == [{"type": "text", "text": marker}]
    assert (sizes([message])[0], result.sizes[0]) == (20573, 78)
    assert result.stats.capped_tokens == 20495


def test_example_11_12_text_and_images_keep_only_text():
    message = M({"role": "function_result", "function_call_id": "c1", "function_id": "browser::shots",
                 "content": [{"type": "text", "text": "t" * 1000}] + [PNG] * 5, "details": None,
                 "is_error": False, "timestamp": 1})
    result = run([message], 20000)
    marker = full_marker(20730, "browser::shots")
    assert utf8_len(marker) == 135
    assert result.messages[0]["content"] == [
        {"type": "text", "text": "t" * 439 + marker + "t" * 294}]
    assert (sizes([message])[0], result.sizes[0]) == (20828, 258)


def test_separator_between_text_blocks_survives_in_the_head():
    message = M({"role": "function_result", "function_call_id": "c1", "function_id": "shell::run",
                 "content": [{"type": "text", "text": "header"}, {"type": "text", "text": "x" * 100000}],
                 "timestamp": 1})
    assert utf8_len(text_of(message["content"])) == 100007
    result = run([message], 20000)
    assert result.messages[0]["content"][0]["text"].startswith("header\nx")


def test_example_11_13_inline_cap_with_an_unresolved_call_id():
    message = M({"role": "user", "content": [
        {"type": "function_result", "function_call_id": "zz",
         "content": [{"type": "text", "text": "y" * 100000}]},
        {"type": "text", "text": "sibling"}], "timestamp": 2})
    marker = ("\n[\u2026result capped: was ~25000 tokens; middle omitted; re-call the function "
              "with narrower arguments if the omitted middle is needed]\n")
    assert utf8_len(marker) == 133
    result = run([message], 20000)
    host = result.messages[0]
    assert host["content"][0] == {"type": "function_result", "function_call_id": "zz",
                                  "content": [{"type": "text",
                                               "text": "y" * 43120 + marker + "y" * 28747}]}
    assert host["content"][1] == {"type": "text", "text": "sibling"}
    assert (sizes([message])[0], result.sizes[0]) == (25040, 18041)
    assert (result.stats.capped_parts, result.stats.capped_tokens) == (1, 6999)


def test_inline_cap_names_the_resolved_function_and_counts_each_block():
    big = {"type": "function_result", "function_call_id": "c1", "is_error": True,
           "content": [{"type": "text", "text": "y" * 100000}]}
    wrapper = M({"role": "user", "content": [big, {**big, "function_call_id": "c2"}], "timestamp": 3})
    history = [C("c1", "shell::run", 1), C("c2", "fs::read", 2), wrapper]
    result = run(history, 20000)
    first, second = result.messages[2]["content"]
    assert "re-call shell::run with" in first["content"][0]["text"]
    assert "re-call fs::read with" in second["content"][0]["text"]
    assert first["is_error"] is True
    assert result.stats.capped_parts == 2
    assert result.stats.capped_tokens == sizes(history)[2] - result.sizes[2]


# The example does not name its ids; these lengths (call ids c1-c3, timestamps 1-3) reproduce
# its sizes exactly.
ROWS_11_14 = [
    ("c1", "details::large1", {"blob": "z" * 10000}, False, 1),
    ("c2", "fs::write", {"blob": "z" * 10000, "status": "denied"}, True, 2),
    ("c3", "fs::read", {"k": "v" * 2030}, False, 3),
]


@pytest.mark.parametrize(
    ("row", "kept", "before", "after"),
    [(0, False, 50041, 18042), (1, True, 52546, 20546), (2, True, 50039, 18040)],
)
def test_example_11_14_details_on_a_capped_result(row, kept, before, after):
    call_id, function_id, details, is_error, ts = ROWS_11_14[row]
    message = R(call_id, function_id, "y" * 200000, ts, details=details, is_error=is_error)
    result = run([message], 20000)
    expected = message["details"] if kept else {"context_capped": {"original_estimated_tokens": 50000}}
    assert result.messages[0]["details"] == expected
    assert result.messages[0]["is_error"] is is_error
    assert (sizes([message])[0], result.sizes[0]) == (before, after)


def test_example_11_14_details_byte_sizes_decide():
    from context_manager.wire import codec

    assert len(codec.dumps(ROWS_11_14[0][2])) == 10011
    assert len(codec.dumps(M({"role": "function_result", "function_call_id": "c",
                               "function_id": "f", "content": [], "timestamp": 1,
                               "details": ROWS_11_14[1][2]})["details"])) == 10029
    assert len(codec.dumps(ROWS_11_14[2][2])) == 2038


def test_example_11_14_totals():
    history = [R(c, f, "y" * 200000, ts, details=d, is_error=e) for c, f, d, e, ts in ROWS_11_14]
    stats = run(history, 20000).stats
    assert (stats.capped_parts, stats.capped_tokens) == (3, 95998)


def test_details_just_over_2048_bytes_are_replaced():
    over = R("c1", "f", "y" * 200000, 1, details={"k": "v" * 2041})  # 2049 bytes
    at = R("c1", "f", "y" * 200000, 1, details={"k": "v" * 2040})  # 2048 bytes
    assert run([over], 20000).messages[0]["details"] == {
        "context_capped": {"original_estimated_tokens": 50000}}
    assert run([at], 20000).messages[0]["details"] == {"k": "v" * 2040}


def test_example_11_2_cap_at_4000():
    message = R("c1", "shell::run", "x" * 20000, 3)
    assert utf8_len(full_marker(5000, "shell::run")) == 130
    result = run([message], 4000)
    text = result.messages[0]["content"][0]["text"]
    assert text == "x" * 8562 + full_marker(5000, "shell::run") + "x" * 5708
    assert utf8_len(text) == 14400 and E.text(text) == 3600
    assert result.sizes == [3640]
    assert (result.stats.capped_parts, result.stats.capped_tokens) == (1, 1400)


def test_exactly_at_threshold_is_not_capped_and_zero_disables():
    message = R("c1", "f", "x" * 80000, 1)  # 20000 result tokens
    assert run([message], 20000).stats.capped_parts == 0
    assert run([message], 19999).stats.capped_parts == 1
    disabled = run([R("c1", "f", "x" * 800000, 1)], 0)
    assert (disabled.stats.capped_parts, disabled.stats.capped_tokens) == (0, 0)


def test_nested_result_blocks_of_a_message_level_result_only_count_their_images():
    message = M({"role": "function_result", "function_call_id": "c1", "function_id": "f",
                 "content": [{"type": "function_result", "function_call_id": "c0",
                              "content": [{"type": "text", "text": "n" * 200000}]}],
                 "timestamp": 1})
    assert run([message], 20000).stats.capped_parts == 0


def test_cap_never_modifies_its_inputs():
    history = [U("dump", 1), R("c1", "f", "x" * 400000, 2)]
    before = copy.deepcopy(history)
    memo = sizes(history)
    result = cap_results(history, memo, 20000, E)
    assert history == before and memo == sizes(before)
    assert result.sizes == sizes(result.messages)


_texts = st.text(alphabet=st.sampled_from(["x", "\u00e9", "\u20ac", "\U0001f600", "\n", '"']),
                 min_size=0, max_size=3000)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(_texts, min_size=1, max_size=4), threshold=st.integers(1, 400))
def test_cap_is_idempotent_and_keeps_the_memo_exact(texts, threshold):
    history = [R(f"c{i}", "some::fn", text, i) for i, text in enumerate(texts)]
    first = run(history, threshold)
    assert first.sizes == sizes(first.messages)
    assert [m["function_call_id"] for m in first.messages] == [m["function_call_id"] for m in history]
    second = cap_results(first.messages, first.sizes, threshold, E)
    assert second.stats.capped_parts == 0 and second.messages == first.messages
    assert run(history, threshold).messages == first.messages
