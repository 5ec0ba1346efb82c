"""The retention pass (``core/passes/retention.py``) rule by rule, with exact values.

Counts are the heuristic's: a text is ``floor(utf8 bytes / 4)`` tokens, a message the same over
its compact serialization.
"""

from __future__ import annotations

from typing import Any

import pytest
from shorthand import A, C, M, R, U

from context_manager import call
from context_manager.config.retention import parse_retention
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.passes.media import TOOL_IMAGE_MARKER, USER_IMAGE_MARKER
from context_manager.core.passes.retention import REASONING_PLACEHOLDER, apply_retention, turn_ages
from context_manager.core.passes.truncate import compose, cut_text
from context_manager.wire import codec

INLINE = {"id": "m", "provider": "p", "limits": {"context_window": 100000, "max_output_tokens": 1000}}


def run(view: list[dict[str, Any]], policy: dict[str, Any], provider: str | None = "p"):
    parsed = parse_retention(policy)
    assert parsed is not None
    result = apply_retention(view, [HEURISTIC.message(m) for m in view], parsed, HEURISTIC, provider)
    assert result.sizes == [HEURISTIC.message(m) for m in result.messages]
    return result


def result_text(message: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in message["content"] if b["type"] == "text")


def always(to: int, keep: str = "both") -> dict[str, Any]:
    return {"mode": "always", "to": to, "keep": keep}


def assistant(*blocks: dict[str, Any], provider: str = "p", ts: int = 0) -> dict[str, Any]:
    return M({"role": "assistant", "content": list(blocks), "stop_reason": "end", "model": "m",
              "provider": provider, "timestamp": ts})


def call_block(call_id: str, function_id: str, arguments: Any = None) -> dict[str, Any]:
    return {"type": "function_call", "id": call_id, "function_id": function_id, "arguments": arguments or {}}


THINK = {"type": "thinking", "text": "t" * 40}
SIGNED = {"type": "thinking", "text": "s" * 40, "signature": "sig"}
SAY = {"type": "text", "text": "ok"}


# --- ages -------------------------------------------------------------------------------------


def test_ages_count_user_turns_then_the_rounds_of_the_open_request():
    view = [U("a", 1), C("c1", "f", 2), R("c1", "f", "r", 3), A("b", 4), U("c", 5), C("c2", "f", 6),
            R("c2", "f", "r", 7), A("d", 8)]
    assert turn_ages(view) == [3, 3, 3, 3, 2, 1, 1, 0]


def test_ages_count_assistant_rounds_without_user_messages():
    view = [C("c1", "f", 1), R("c1", "f", "r", 2), C("c2", "f", 3), R("c2", "f", "r", 4), A("e", 5)]
    assert turn_ages(view) == [2, 2, 1, 1, 0]


# --- text cuts --------------------------------------------------------------------------------


@pytest.mark.parametrize("keep,expected", [
    ("head", "\u00e9" * 11),
    ("tail", "\u00e9" * 11),
    ("both", "\u00e9" * 11),
])
def test_multibyte_cuts_without_marker_stay_on_character_boundaries(keep, expected):
    # 40 two-byte characters = 80 bytes = 20 tokens; 5 tokens allow 23 bytes, so 22 bytes stay.
    cut = cut_text("\u00e9" * 40, keep, ("",), lambda s: HEURISTIC.text(s) <= 5)
    assert cut == expected


def test_both_ends_split_the_budget_and_round_inwards():
    data = ("\u00e9" * 40).encode()
    # 23 bytes: 12 for the head (6 characters), 11 for the tail, rounded up to byte 70 (5 characters).
    assert compose(data, 23, "both", "|") == "\u00e9" * 6 + "|" + "\u00e9" * 5


@pytest.mark.parametrize("keep,expected", [
    ("head", "\u00e9" * 9 + "[\u2026]"),
    ("tail", "[\u2026]" + "\u00e9" * 9),
    ("both", "\u00e9" * 5 + "[\u2026]" + "\u00e9" * 4),
])
def test_the_short_marker_stands_in_when_the_full_one_cannot_fit(keep, expected):
    full = "a marker far longer than the twenty-three bytes five tokens allow"
    cut = cut_text("\u00e9" * 40, keep, (full, "[\u2026]", ""), lambda s: HEURISTIC.text(s) <= 5)
    assert cut == expected
    assert HEURISTIC.text(cut) == 5


def test_text_within_the_target_is_not_cut():
    assert cut_text("abcd" * 5, "both", ("",), lambda s: HEURISTIC.text(s) <= 5) is None


# --- tool rules ------------------------------------------------------------------------------


BIG = "line of output\n" * 40  # 600 bytes = 150 tokens


def test_the_first_matching_rule_wins():
    view = [U("q", 1), C("c1", "fs::read_file", 2), R("c1", "fs::read_file", BIG, 3),
            C("c2", "fs::write_file", 4), R("c2", "fs::write_file", BIG, 5), U("next", 6)]
    policy = {"tools": {"rules": [{"function": "fs::read_file", "result": {"mode": "keep"}},
                                  {"function": "fs::*", "result": always(20)},
                                  {"function": "fs::write_file", "result": always(100)}],
                        "mark_truncations": False}}
    out = run(view, policy)
    assert out.messages[2] is view[2]
    assert HEURISTIC.text(result_text(out.messages[4])) == 20
    # 20 tokens allow 83 bytes: 42 for the head, 41 for the tail.
    assert result_text(out.messages[4]) == BIG[:42] + BIG[-41:]
    assert out.warnings == [{"code": "truncated", "function_id": "fs::write_file", "count": 1,
                             "tokens_freed": HEURISTIC.message(view[4]) - HEURISTIC.message(out.messages[4])}]
    # 600 bytes with 40 escaped newlines become 83 with 5: 552 bytes of the message, 138 tokens.
    assert out.warnings[0]["tokens_freed"] == 138


def test_the_default_treatment_applies_when_no_rule_matches():
    view = [U("q", 1), C("c1", "web::search", 2), R("c1", "web::search", BIG, 3), U("next", 4)]
    policy = {"tools": {"default": {"result": always(20, "head")}, "rules": [{"function": "fs::*", "result": {"mode": "keep"}}],
                        "mark_truncations": False}}
    assert result_text(run(view, policy).messages[2]) == BIG[:83]


def test_errors_replace_the_result_rule():
    error = R("c1", "sh::run", BIG, 3, is_error=True)
    view = [U("q", 1), C("c1", "sh::run", 2), error, U("next", 4)]
    keep_errors = {"tools": {"rules": [{"function": "*", "result": always(20)}], "errors": {"mode": "keep"}}}
    assert run(view, keep_errors).messages[2] is error
    cut_errors = {"tools": {"rules": [{"function": "*", "result": {"mode": "keep"}}], "errors": always(10, "tail"),
                            "mark_truncations": False}}
    assert result_text(run(view, cut_errors).messages[2]) == BIG[-43:]
    no_override = {"tools": {"rules": [{"function": "*", "result": always(20, "head")}], "errors": None,
                             "mark_truncations": False}}
    assert result_text(run(view, no_override).messages[2]) == BIG[:83]


def test_over_cuts_only_above_its_threshold():
    small = R("c1", "f", "x" * 400, 3)  # 100 tokens
    view = [U("q", 1), C("c1", "f", 2), small, U("next", 4)]
    over_100 = {"tools": {"default": {"result": {"mode": "over", "over": 100, "to": 10}}}}
    assert run(view, over_100).messages[2] is small
    over_99 = {"tools": {"default": {"result": {"mode": "over", "over": 99, "to": 10, "keep": "head"}},
                         "mark_truncations": False}}
    assert result_text(run(view, over_99).messages[2]) == "x" * 43


def test_the_marker_names_the_function_and_the_elided_tokens():
    view = [U("q", 1), C("c1", "fs::read_file", 2), R("c1", "fs::read_file", BIG, 3), U("next", 4)]
    policy = {"tools": {"default": {"result": always(60)}}}
    text = result_text(run(view, policy).messages[2])
    marker = ("\n[\u2026result truncated: ~90 of ~150 tokens elided; re-call fs::read_file with narrower "
              "arguments if the elided part is needed]\n")
    assert marker in text
    head, tail = text.split(marker)
    assert HEURISTIC.text(text) == 60
    assert BIG.startswith(head) and BIG.endswith(tail)
    assert (len(head), len(tail)) == (59, 58)


def test_inline_results_resolve_their_function_id():
    inline = M({"role": "user", "content": [{"type": "function_result", "function_call_id": "c1",
                                             "content": [{"type": "text", "text": BIG}]}], "timestamp": 3})
    view = [U("q", 1), C("c1", "fs::grep", 2), inline, U("next", 4)]
    policy = {"tools": {"rules": [{"function": "fs::g*", "result": always(10, "head")}], "mark_truncations": False}}
    out = run(view, policy)
    assert out.messages[2]["content"][0]["content"] == [{"type": "text", "text": BIG[:43]}]
    assert out.warnings[0]["function_id"] == "fs::grep"


def test_argument_cuts_keep_the_json_shape():
    arguments = {"content": "x" * 400, "path": "/src/a.py", "mode": 1, "flags": [True, "y" * 100]}
    view = [U("q", 1), assistant(call_block("c1", "fs::write_file", arguments)),
            R("c1", "fs::write_file", "ok", 3), U("next", 4)]
    policy = {"tools": {"rules": [{"function": "fs::write_file", "arguments": always(30)}], "mark_truncations": False}}
    cut = run(view, policy).messages[1]["content"][0]["arguments"]
    # 30 tokens allow 123 bytes of compact JSON; the skeleton with "/src/a.py" takes 60 of them and
    # the longest string goes first: "content" keeps nothing, then "y" * 100 keeps 63 bytes.
    assert cut == {"content": "", "flags": [True, "y" * 63], "mode": 1, "path": "/src/a.py"}
    assert HEURISTIC.text(codec.dumps(cut).decode()) == 30
    assert codec.loads(codec.dumps(cut)) == cut


def test_argument_cuts_carry_their_marker_inside_the_value():
    arguments = {"content": "x" * 400, "path": "/src/a.py"}
    view = [U("q", 1), assistant(call_block("c1", "fs::write_file", arguments)),
            R("c1", "fs::write_file", "ok", 3), U("next", 4)]
    policy = {"tools": {"rules": [{"function": "fs::write_file", "arguments": always(40, "head")}]}}
    cut = run(view, policy).messages[1]["content"][0]["arguments"]
    # 108 tokens cut to 40 (163 bytes): the skeleton takes 33, the 72-byte marker and 58 x's the rest.
    marker = "[\u2026argument truncated: ~68 tokens elided from this fs::write_file call]"
    assert cut == {"content": "x" * 58 + marker, "path": "/src/a.py"}


def test_arguments_that_cannot_fit_stay_whole():
    arguments = {"k" * 200: "v"}  # the key alone is over the target; keys are never cut
    block = call_block("c1", "f", arguments)
    view = [U("q", 1), assistant(block), R("c1", "f", "ok", 3), U("next", 4)]
    out = run(view, {"tools": {"default": {"arguments": always(10)}}})
    assert out.messages[1] is view[1]
    assert out.warnings == []


# --- the verbatim window ----------------------------------------------------------------------


def test_the_verbatim_window_protects_the_newest_turns():
    view = [U("q", 1), C("c1", "f", 2), R("c1", "f", BIG, 3), U("q2", 4), C("c2", "f", 5), R("c2", "f", BIG, 6)]
    policy = {"tools": {"default": {"result": always(10)}}, "verbatim_turns": 1}
    out = run(view, policy)
    assert [m is v for m, v in zip(out.messages, view)] == [True, True, False, True, True, True]
    # Ages: 2, 2, 2 for the first turn, 1 for "q2", 0 for the open round.
    assert [m is v for m, v in zip(run(view, {**policy, "verbatim_turns": 2}).messages, view)] == [
        True, True, False, True, True, True]
    assert run(view, {**policy, "verbatim_turns": 3}).messages == view
    zero = run(view, {**policy, "verbatim_turns": 0})
    assert [m is v for m, v in zip(zero.messages, view)] == [True, True, False, True, True, False]


def test_the_verbatim_window_counts_rounds_without_user_messages():
    view = [C("c1", "f", 1), R("c1", "f", BIG, 2), C("c2", "f", 3), R("c2", "f", BIG, 4),
            C("c3", "f", 5), R("c3", "f", BIG, 6)]
    policy = {"tools": {"default": {"result": always(10)}}, "verbatim_turns": 2}
    out = run(view, policy)
    assert [m is v for m, v in zip(out.messages, view)] == [True, False, True, True, True, True]
    assert out.warnings == [{"code": "truncated", "function_id": "f", "count": 1, "tokens_freed": 149}]


# --- prose ------------------------------------------------------------------------------------


def test_old_prompts_and_assistant_prose_are_cut_and_images_stay_in_place():
    image = {"type": "image", "mime": "image/png", "data": "AAAA"}
    paste = M({"role": "user", "content": [{"type": "text", "text": "p" * 200}, image,
                                           {"type": "text", "text": "q" * 200}], "timestamp": 1})
    view = [paste, A("a" * 400, 2), U("now", 3)]
    policy = {"text": {"prompt": {"mode": "over", "over": 50, "to": 10, "keep": "head"}, "message": always(5, "tail")}}
    out = run(view, policy)
    assert out.messages[0]["content"] == [{"type": "text", "text": "p" * 38 + "[\u2026]"}, image]
    assert out.messages[1]["content"] == [{"type": "text", "text": "[\u2026]" + "a" * 18}]
    assert out.messages[2] is view[2]
    assert out.warnings == [
        {"code": "text_truncated", "role": "assistant", "count": 1, "tokens_freed": 94},
        {"code": "text_truncated", "role": "user", "count": 1, "tokens_freed": 95},
    ]


def test_the_open_request_is_never_cut_and_single_task_rounds_age():
    task = U("t" * 400, 1)
    view = [task, C("c1", "f", 2), R("c1", "f", BIG, 3), C("c2", "f", 4), R("c2", "f", BIG, 5)]
    policy = {"text": {"prompt": always(5)}, "tools": {"default": {"result": always(10)}}, "verbatim_turns": 1}
    out = run(view, policy)
    assert turn_ages(view) == [2, 1, 1, 0, 0]
    assert [m is v for m, v in zip(out.messages, view)] == [True, True, False, True, True]


# --- reasoning --------------------------------------------------------------------------------


def test_reasoning_older_than_keep_turns_is_dropped():
    view = [U("q", 1), assistant(THINK, SAY), U("q2", 3), assistant(THINK, SAY), U("q3", 5), assistant(THINK, SAY)]
    out = run(view, {"reasoning": {"keep_turns": 1}})
    assert out.messages[1]["content"] == out.messages[3]["content"] == [SAY]
    assert out.messages[5] is view[5]
    # {"type":"thinking","text":"t"*40}, is 71 bytes of a 191-byte message: 47 tokens become 30.
    assert out.warnings == [{"code": "reasoning_dropped", "count": 2, "tokens_freed": 34}]
    # Ages 3, 2 and 0: the reply to "q3" is a round of the open request, "q3" itself is age 1.
    three = run(view, {"reasoning": {"keep_turns": 3}})
    assert three.messages[1]["content"] == [SAY]
    assert three.messages[3] is view[3]


def test_the_latest_assistant_message_keeps_its_reasoning():
    view = [U("q", 1), assistant(THINK, SAY), assistant(THINK, SAY), U("q2", 4)]
    out = run(view, {"reasoning": {"keep_turns": 0}})
    assert out.messages[1]["content"] == [SAY]
    assert out.messages[2] is view[2]


def test_unanswered_calls_keep_their_reasoning():
    asking = assistant(THINK, call_block("c1", "f"))
    view = [U("q", 1), asking, U("q2", 3), A("later", 4)]
    assert run(view, {"reasoning": {"keep_turns": 0}}).messages[1] is asking
    answered = [U("q", 1), asking, R("c1", "f", "r", 3), U("q2", 4), A("later", 5)]
    assert run(answered, {"reasoning": {"keep_turns": 0}}).messages[1]["content"] == [call_block("c1", "f")]


def test_signed_reasoning_of_the_models_provider_stays_in_the_current_tool_round():
    first = assistant(SIGNED, THINK, call_block("c1", "f"))
    view = [U("q", 1), first, R("c1", "f", "r", 3), assistant(SAY)]
    policy = {"reasoning": {"keep_turns": 0}}
    assert run(view, policy, provider="p").messages[1]["content"] == [SIGNED, call_block("c1", "f")]
    assert run(view, policy, provider="other").messages[1]["content"] == [call_block("c1", "f")]
    assert run(view, policy, provider=None).messages[1]["content"] == [call_block("c1", "f")]
    # Once the user has spoken again the round is over, and the signed block goes too.
    later = [*view, U("q2", 5)]
    assert run(later, policy, provider="p").messages[1]["content"] == [call_block("c1", "f")]


def test_a_message_of_reasoning_only_keeps_a_placeholder():
    view = [U("q", 1), assistant(THINK), U("q2", 3), A("b", 4)]
    assert run(view, {"reasoning": {"keep_turns": 0}}).messages[1]["content"] == [
        {"type": "text", "text": REASONING_PLACEHOLDER}]


# --- media ------------------------------------------------------------------------------------


def image(mime: str) -> dict[str, Any]:
    return {"type": "image", "mime": mime, "data": "AAAA"}


def test_media_rules_match_mime_patterns_in_order():
    old = M({"role": "user", "content": [image("image/png"), image("image/jpeg"), image("video/mp4")], "timestamp": 1})
    view = [old, A("seen", 2), U("next", 3)]
    policy = {"media": {"default_keep_turns": 1, "rules": [{"mime": "image/png", "keep_turns": 0},
                                                           {"mime": "image/*", "keep_turns": 5}]}}
    out = run(view, policy)
    marker = {"type": "text", "text": USER_IMAGE_MARKER}
    assert out.messages[0]["content"] == [marker, image("image/jpeg"), marker]
    assert out.warnings == [{"code": "media_dropped", "mime": "image/png", "count": 1},
                            {"code": "media_dropped", "mime": "video/mp4", "count": 1}]


def test_media_without_a_rule_or_default_stays():
    old = M({"role": "user", "content": [image("image/gif")], "timestamp": 1})
    view = [old, U("next", 2)]
    assert run(view, {"media": {"rules": [{"mime": "image/png", "keep_turns": 0}]}}).messages[0] is old


def test_images_inside_results_become_the_tool_placeholder():
    shot = M({"role": "function_result", "function_call_id": "c1", "function_id": "browser::shot",
              "content": [image("image/png")], "is_error": False, "timestamp": 3})
    view = [U("q", 1), C("c1", "browser::shot", 2), shot, U("next", 4)]
    out = run(view, {"media": {"default_keep_turns": 1}})
    assert out.messages[2]["content"] == [{"type": "text", "text": TOOL_IMAGE_MARKER}]


# --- assemble: warnings in the response ----------------------------------------------------------


def test_assemble_reports_warnings_only_with_a_policy():
    messages = [{"role": "user", "content": [{"type": "text", "text": "q"}], "timestamp": 1},
                {"role": "assistant", "content": [{"type": "thinking", "text": "t" * 400}, {"type": "text", "text": "a"}],
                 "stop_reason": "end", "model": "m", "provider": "p", "timestamp": 2},
                {"role": "user", "content": [{"type": "text", "text": "q2"}], "timestamp": 3},
                {"role": "assistant", "content": [{"type": "text", "text": "b"}], "stop_reason": "end",
                 "model": "m", "provider": "p", "timestamp": 4}]
    plain = call("context::assemble", {"messages": messages, "model": INLINE})
    assert "warnings" not in plain["applied"]
    quiet = call("context::assemble", {"messages": messages, "model": INLINE},
                 config={"retention": {"reasoning": {"keep_turns": 5}}})
    assert "warnings" not in quiet["applied"]
    assert quiet == plain
    out = call("context::assemble", {"messages": messages, "model": INLINE},
               config={"retention": {"reasoning": {"keep_turns": 1}}})
    assert out["applied"]["warnings"] == [{"code": "reasoning_dropped", "count": 1, "tokens_freed": 107}]
    assert out["token_count"] == plain["token_count"] - 107
    assert out["applied"]["initial_token_count"] == plain["applied"]["initial_token_count"]


def test_drop_oldest_reports_history_dropped_with_a_policy():
    messages = []
    for turn in range(4):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"q{turn} " + "x" * 2000}],
                         "timestamp": 2 * turn})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": "y" * 2000}], "stop_reason": "end",
                         "model": "m", "provider": "p", "timestamp": 2 * turn + 1})
    payload = {"messages": messages, "model": {"id": "m", "limits": {"context_window": 2500, "max_output_tokens": 100}},
               "options": {"allow_compaction": False, "reserved_tokens": 0}}
    base = {"overflow_fallback": "drop_oldest"}
    without = call("context::assemble", payload, config=base)
    assert "warnings" not in without["applied"]
    out = call("context::assemble", payload, config={**base, "retention": {"verbatim_turns": 1}})
    ranges = out["applied"]["dropped_ranges"]
    assert ranges == without["applied"]["dropped_ranges"] == [[0, 4]]
    assert out["applied"]["warnings"] == [{"code": "history_dropped", "dropped": 4, "start": 0, "end": 4}]


def test_answers_with_every_warning_match_the_response_schema():
    import jsonschema

    from context_manager.schemas import function_definition

    schema = function_definition("context::assemble")["response_schema"]
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "p" * 2000},
                                     {"type": "image", "mime": "image/png", "data": "AAAA"}], "timestamp": 1},
        {"role": "assistant", "content": [{"type": "thinking", "text": "t" * 400},
                                          {"type": "function_call", "id": "c1", "function_id": "fs::read_file",
                                           "arguments": {"path": "x" * 800}}],
         "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": 2},
        {"role": "function_result", "function_call_id": "c1", "function_id": "fs::read_file",
         "content": [{"type": "text", "text": BIG}], "is_error": False, "timestamp": 3},
        {"role": "assistant", "content": [{"type": "text", "text": "a" * 2000}], "stop_reason": "end",
         "model": "m", "provider": "p", "timestamp": 4},
        {"role": "user", "content": [{"type": "text", "text": "next " * 400}], "timestamp": 5},
        {"role": "assistant", "content": [{"type": "text", "text": "b" * 1200}], "stop_reason": "end",
         "model": "m", "provider": "p", "timestamp": 6},
        {"role": "user", "content": [{"type": "text", "text": "now"}], "timestamp": 7},
    ]
    policy = {"tools": {"default": {"arguments": always(20), "result": always(20)}},
              "text": {"prompt": always(30), "message": always(30)},
              "reasoning": {"keep_turns": 1}, "media": {"default_keep_turns": 1}}
    out = call("context::assemble", {"messages": messages, "model": INLINE}, config={"retention": policy})
    assert [w["code"] for w in out["applied"]["warnings"]] == [
        "truncated", "text_truncated", "text_truncated", "reasoning_dropped", "media_dropped"]
    jsonschema.validate(out, schema)
    # Over a small window the oldest turn goes too, reported as history_dropped.
    tight = {"id": "m", "limits": {"context_window": 300, "max_output_tokens": 100}}
    dropped = call("context::assemble", {"messages": messages, "model": tight,
                                         "options": {"allow_compaction": False, "reserved_tokens": 0}},
                   config={"retention": policy, "overflow_fallback": "drop_oldest"})
    assert dropped["applied"]["warnings"][-1] == {"code": "history_dropped", "dropped": 4, "start": 0, "end": 4}
    jsonschema.validate(dropped, schema)
