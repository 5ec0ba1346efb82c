"""Summariser prompts, media stripping and the summary section (spec 03 §2, Example 20)."""

from __future__ import annotations

import copy

import pytest
from compaction_support import U, decoded

from context_manager.core.compaction import prompts as p
from context_manager.core.compaction.summarize import request_tokens
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.wire.decode import decode_message


def size(text: str) -> int:
    return len(text.encode("utf-8"))


# --- §2.7 the size contract -----------------------------------------------------------------


def test_component_sizes_follow_the_contract():
    assert size(p.INSTRUCTION_LINE) == 106
    assert size(p.FRESH_ANCHOR) == 66
    first, second, rest = p.UPDATE_ANCHOR_LINES.split("\n")
    assert (size(first), size(second), rest) == (71, 78, "")
    assert size(p.PREVIOUS_SUMMARY_OPEN) == 19 and size(p.PREVIOUS_SUMMARY_CLOSE) == 20
    assert size(p.SUMMARY_TEMPLATE) == 1031
    assert size(p.GUIDANCE_LINE) == 254
    assert size(p.INSTRUCTIONS_OPEN) == 16 and size(p.INSTRUCTIONS_CLOSE) == 16
    assert p.FRAGMENT_NOTE.startswith("\n") and size(p.FRAGMENT_NOTE) == 1 + 236


def test_wording_is_single_line_ascii_and_safe_inside_json():
    for line in (p.INSTRUCTION_LINE, p.FRESH_ANCHOR, p.GUIDANCE_LINE, p.FRAGMENT_NOTE[1:]):
        assert line.isascii() and "\n" not in line
    assert not any(ch in p.INSTRUCTION_LINE for ch in '"\\') and p.INSTRUCTION_LINE.isprintable()
    assert all(line.isprintable() for line in p.UPDATE_ANCHOR_LINES.splitlines())


def test_totals():
    assert size(p.build_system_prompt(None, None)) == 1099
    assert size(p.build_system_prompt("", None)) == 1223
    assert size(p.build_system_prompt("## Goal\n- S1", None)) == 1223 + 12
    assert size(p.build_system_prompt("чат", None)) == 1223 + 6
    assert size(p.build_system_prompt(None, "G")) == 1099 + 288 + 1
    assert size(p.build_system_prompt(None, None) + p.FRAGMENT_NOTE) == 1336
    # The empty request the pre-flight sizes: floor(1099/4) + floor(85/4) + 64.
    assert request_tokens(HEURISTIC, p.build_system_prompt(None, None), "") == 359


def test_template_headings_in_order_and_tags():
    headings = [line for line in p.SUMMARY_TEMPLATE.splitlines() if line.startswith("#")]
    assert headings == [
        "## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress",
        "### Blocked", "## Key Decisions", "## Actions Taken", "## Next Steps",
        "## Critical Context", "## Relevant Files",
    ]
    assert "\n<template>\n" in p.SUMMARY_TEMPLATE and "\n</template>\n" in p.SUMMARY_TEMPLATE
    assert not p.SUMMARY_TEMPLATE.endswith("\n")
    assert p.SUMMARY_TEMPLATE.count('"(none)"') == 9


# --- §2.3 / §2.4 system prompt -------------------------------------------------------------


def test_fresh_and_update_mode_layout():
    assert p.build_system_prompt(None, None) == p.FRESH_ANCHOR + "\n\n" + p.SUMMARY_TEMPLATE
    update = p.build_system_prompt("  P  ", None)
    assert update == (p.UPDATE_ANCHOR_LINES + "<previous-summary>\n  P  \n</previous-summary>\n\n"
                      + p.SUMMARY_TEMPLATE)


def test_instructions_block_after_the_template():
    prompt = p.build_system_prompt("prior", "  keep the plan  ")
    assert prompt.endswith(
        p.SUMMARY_TEMPLATE + "\n\n" + p.GUIDANCE_LINE + "\n<instructions>\nkeep the plan\n</instructions>"
    )


@pytest.mark.parametrize("blank", ["", "  \n\t ", "\u3000\u00a0\u2028"])
def test_blank_instructions_change_nothing(blank):
    assert p.build_system_prompt(None, blank) == p.build_system_prompt(None, None)


def test_instructions_trim_with_the_unicode_white_space_set_only():
    # U+001F is not White_Space: it survives, where str.strip() would remove it.
    assert p.normalize_instructions("\x1fkeep\x1f") == "\x1fkeep\x1f"
    assert p.normalize_instructions("\u0085keep\u205f") == "keep"


def test_instructions_capped_at_2000_characters():
    assert p.normalize_instructions("k" * 2000) == "k" * 2000
    assert p.normalize_instructions("k" * 2500) == "k" * 2000 + "... [truncated]"
    assert p.normalize_instructions("é" * 2001) == "é" * 2000 + "... [truncated]"


# --- §2.1 strip_media ------------------------------------------------------------------------


def test_strip_media_replaces_top_level_images_and_truncates_results_only():
    messages = [
        decode_message({"role": "user", "timestamp": 1, "content": [
            {"type": "image", "mime": "image/png", "data": "AAAA"}, {"type": "text", "text": "y" * 50}]}),
        decode_message({"role": "function_result", "function_call_id": "c1", "function_id": "f",
                        "timestamp": 2, "content": [
                            {"type": "text", "text": "x" * 50},
                            {"type": "text", "text": "x" * 10},
                            {"type": "image", "mime": "image/png", "data": "AAAA"}]}),
    ]
    before = copy.deepcopy(messages)
    stripped = p.strip_media(messages, 10)
    assert messages == before
    assert stripped[0]["content"] == [{"type": "text", "text": "[image stripped]"},
                                      {"type": "text", "text": "y" * 50}]
    assert stripped[1]["content"] == [
        {"type": "text", "text": "x" * 10 + "... [truncated]"},
        {"type": "text", "text": "x" * 10},
        # the replacement itself is 16 bytes, so a result cuts it too
        {"type": "text", "text": "[image str... [truncated]"},
    ]
    assert list(stripped[1]) == list(messages[1])


def test_strip_media_cuts_on_bytes_and_backs_off_to_a_character():
    result = decode_message({"role": "function_result", "function_call_id": "c", "function_id": "f",
                             "timestamp": 1, "content": [{"type": "text", "text": "aé" * 4}]})
    assert p.strip_media([result], 5)[0]["content"][0]["text"] == "aéa... [truncated]"
    assert p.strip_media([result], 2)[0]["content"][0]["text"] == "a... [truncated]"
    assert p.strip_media([result], 0)[0]["content"][0]["text"] == "... [truncated]"
    assert p.strip_media([result], 12)[0]["content"][0]["text"] == "aé" * 4


def test_inline_result_images_are_left_alone():
    message = decode_message({"role": "user", "timestamp": 1, "content": [
        {"type": "function_result", "function_call_id": "c", "content": [
            {"type": "image", "mime": "image/png", "data": "AAAA"}]}]})
    assert p.strip_media([message], 10)[0] == message


# --- §2.2 user prompt (Example 20) -----------------------------------------------------------


def test_example_20_rendering():
    head = [
        decode_message({"role": "user", "content": [{"type": "text", "text": "fix the leak"}],
                        "timestamp": 1}),
        decode_message({"role": "assistant", "content": [
            {"type": "thinking", "text": "hmm"},
            {"type": "function_call", "id": "c1", "function_id": "coder::search",
             "arguments": {"q": "panic", "limit": 3}}],
            "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": 2}),
        decode_message({"role": "function_result", "function_call_id": "c1",
                        "function_id": "coder::search",
                        "content": [{"type": "text", "text": "x" * 50}], "timestamp": 3}),
        decode_message({"role": "user", "content": [
            {"type": "image", "mime": "image/png", "data": "AAAA"},
            {"type": "text", "text": "see screenshot"}], "timestamp": 4}),
    ]
    rendered = p.render_user_prompt(p.strip_media(head, 10))
    assert rendered == (
        p.INSTRUCTION_LINE + "\n\n<conversation>\n"
        "\n[user]\nfix the leak\n"
        '\n[assistant]\n[tool_call] coder::search {"limit":3,"q":"panic"}\n'
        "\n[function_result]\nxxxxxxxxxx... [truncated]\n"
        "\n[user]\n[image stripped]\nsee screenshot\n"
        "</conversation>\n"
    )


def test_rendering_details():
    head = [
        decode_message({"role": "assistant", "content": [
            {"type": "function_call", "id": "c9", "function_id": "a::b"}],
            "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": 1}),
        decode_message({"role": "user", "timestamp": 2, "content": [
            {"type": "function_result", "function_call_id": "c9",
             "content": [{"type": "text", "text": "SECRET"}]}]}),
        decode_message({"role": "custom", "custom_type": "note", "timestamp": 3,
                        "content": [{"type": "text", "text": "<b>\nmulti"}]}),
    ]
    rendered = p.render_user_prompt(head)
    assert "[tool_call] a::b null\n" in rendered
    assert "SECRET" not in rendered and "\n[user]\n\n[custom]\n<b>\nmulti\n" in rendered
    assert "c9" not in rendered
    assert p.render_user_prompt([]) == p.USER_PROMPT_HEADER + p.USER_PROMPT_FOOTER


def test_example_12_prompt_size():
    assert size(p.render_user_prompt(decoded(U("x" * 12000)))) == 12148


# --- §2.6 model-facing system prompt ------------------------------------------------------


@pytest.mark.parametrize(("base", "summary", "expected"), [
    ("Base.", None, "Base."),
    (None, None, ""),
    ("Base.\n\n", None, "Base."),
    ("Base.", "S", "Base.\n\n# Conversation summary\n\nS"),
    (None, "S", "# Conversation summary\n\nS"),
    ("  ", "S", "# Conversation summary\n\nS"),
    ("Base.", "", "Base.\n\n# Conversation summary\n\n"),
    ("Base.\u3000\x1f", None, "Base.\u3000\x1f"),
    ("Base.\x1f\u3000", " S ", "Base.\x1f\n\n# Conversation summary\n\n S "),
])
def test_render_system_prompt(base, summary, expected):
    assert p.render_system_prompt(base, summary) == expected
