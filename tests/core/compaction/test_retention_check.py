"""The retention check (``summary_check: append``): derived items, placement, budget cut."""

from __future__ import annotations

from typing import Any

from compaction_support import FR, A, U, X, decoded, history

from context_manager import call
from context_manager.core.compaction.retention_check import (
    CARRIED,
    CUT,
    RETAINED_HEADING,
    USER_HEADING,
    Item,
    bullet,
    check_summary,
    keep_list,
    must_keep,
    open_error,
    paths_in,
    retained_in,
)
from context_manager.core.counting.estimate import HEURISTIC


def AC_args(call_id: str, function_id: str, arguments: Any) -> dict[str, Any]:
    return {"role": "assistant",
            "content": [{"type": "function_call", "id": call_id, "function_id": function_id,
                         "arguments": arguments}],
            "stop_reason": "function_call", "model": "test-model", "provider": "test"}


def FR_err(call_id: str, function_id: str, text: str) -> dict[str, Any]:
    return {**FR(call_id, function_id, text), "is_error": True}


def test_paths_and_urls():
    text = ("edit src/app/main.py and /etc/hosts, see https://example.com/a/b?x=1). "
            "not and/or, not 1/2, ./run.sh ok; ~/notes.md:12 and ../up/file.txt.")
    assert paths_in(text) == ["src/app/main.py", "/etc/hosts", "https://example.com/a/b?x=1",
                              "./run.sh", "~/notes.md", "../up/file.txt"]


def test_must_keep_items_in_order_of_first_appearance():
    head = decoded(
        U("  Please fix   the bug in src/app.py \n"),
        AC_args("c1", "bash", {"command": "cat /testbed/src/app.py", "n": [1, {"p": "docs/x.md"}]}),
        FR("c1", "bash", "mentions /not/an/argument.py"),
        U("Also check https://example.com/spec and src/app.py"),
    )
    assert must_keep(head) == [
        Item("Please fix   the bug in src/app.py", 0, user=True),
        Item("src/app.py", 3),
        Item("/testbed/src/app.py", 1),
        Item("docs/x.md", 1),
        Item("Also check https://example.com/spec and src/app.py", 3, user=True),
        Item("https://example.com/spec", 3),
    ]


def test_the_user_s_words_are_kept_whole_up_to_1000_characters_else_head_and_tail():
    (item,) = must_keep(decoded(U("a" * 1000)))
    assert item == Item("a" * 1000, 0, user=True)
    (item,) = must_keep(decoded(U("h" * 200 + "m" * 801 + "t" * 100)))
    assert item.text == "h" * 200 + CUT + "t" * 100
    assert CUT == " […] "


def test_open_error_is_the_latest_failure_not_followed_by_a_success_of_its_function():
    head = decoded(
        AC_args("c1", "bash", {}), FR_err("c1", "bash", "\n  bash: make: not found\nmore"),
        AC_args("c2", "read", {}), FR_err("c2", "read", "read: denied"),
        AC_args("c3", "read", {}), FR("c3", "read", "fine"),
    )
    assert open_error(head) == (1, "bash", "bash: make: not found")
    assert must_keep(head) == [Item("bash: make: not found", 1)]
    cleared = decoded(AC_args("c1", "bash", {}), FR_err("c1", "bash", "boom"),
                      AC_args("c2", "bash", {}), FR("c2", "bash", "ok"))
    assert open_error(cleared) is None


def test_an_inline_failed_result_counts():
    inline = {"role": "user", "content": [{"type": "function_result", "function_call_id": "c1",
                                           "content": [{"type": "text", "text": "E: no such file"}],
                                           "is_error": True}]}
    head = decoded(AC_args("c1", "grep", {}), inline)
    assert open_error(head) == (1, "grep", "E: no such file")


def test_missing_items_are_appended_under_the_heading():
    head = decoded(U("Fix src/app.py"), A("ok"))
    # The path is there (case folded); the request itself is not.
    summary, appended = check_summary("## Goal\n- edit SRC/APP.PY", head, None, 1000, HEURISTIC)
    assert appended == 1
    assert summary == f"## Goal\n- edit SRC/APP.PY\n\n{USER_HEADING}\n- Fix src/app.py"


def test_nothing_missing_leaves_the_summary_as_it_is():
    head = decoded(U("Fix src/app.py"))
    assert check_summary("we must   FIX src/app.py\nnow", head, None, 1000, HEURISTIC) == (
        "we must   FIX src/app.py\nnow", 0)


def test_the_previous_summary_does_not_count_as_kept():
    # The new summary replaces the previous one: only what it holds is kept.
    head = decoded(U("Fix src/app.py"), U("and docs/readme.md"))
    summary, appended = check_summary("short", head, "- Fix src/app.py", 1000, HEURISTIC)
    assert (summary, appended) == (
        f"short\n\n{USER_HEADING}\n- Fix src/app.py\n- and docs/readme.md", 2)


def test_retained_in_reads_every_retained_section_back():
    summary = (f"## Goal\n- g\n\n{RETAINED_HEADING}\n- a\n  b\n\n- c\n## Other\n- d\n"
               "## retained   DETAILS\n- e\n-  \n")
    assert retained_in(summary) == ["a\nb", "c", "e"]
    text = "line one\n\n  indented\nlast"
    assert retained_in(f"s\n\n{RETAINED_HEADING}\n{bullet(text)}\n{bullet('/x.py')}") == [text, "/x.py"]
    assert retained_in("## Goal\n- g") == []


PREVIOUS = (f"## Goal\n- old\n\n{RETAINED_HEADING}\n- Port src/parse.py\n  to the new API\n"
            "- /old/notes.md\n- https://example.com/spec")


def test_the_previous_appendix_is_carried_before_the_head():
    head = decoded(AC_args("c1", "bash", {"command": "cat /old/notes.md"}), FR("c1", "bash", "ok"))
    assert keep_list(head, PREVIOUS) == [
        Item("Port src/parse.py\nto the new API", CARRIED),
        Item("https://example.com/spec", CARRIED),
        Item("/old/notes.md", 0),  # the head mentions it again: it is the head's
    ]
    # The new summary holds the request (whitespace and case collapsed); the rest is appended.
    summary, appended = check_summary("## Goal\n- PORT src/parse.py to the new api", head,
                                      PREVIOUS, 1000, HEURISTIC)
    assert (summary, appended) == (
        f"## Goal\n- PORT src/parse.py to the new api\n\n{RETAINED_HEADING}\n"
        "- https://example.com/spec\n- /old/notes.md", 2)


def test_carried_items_are_cut_before_the_head_items():
    previous = f"s\n\n{RETAINED_HEADING}\n- /old/a.py\n- /old/b.py\n- /old/c.py"
    head = decoded(*[U(f"request {i}: {X(10)}") for i in range(3)])
    # Half of 120 (60): the user's words first (their heading 4 + 1, each request 13 + 1: 47),
    # then the details' heading 4 + 1 and a blank line, each carried path 2 + 1: the two most
    # recent fit (59).
    summary, appended = check_summary("s", head, previous, 120, HEURISTIC)
    assert appended == 5
    assert summary.split("\n")[2:] == [USER_HEADING, *(f"- request {i}: {X(10)}" for i in range(3)), "",
                                       RETAINED_HEADING, "- /old/b.py", "- /old/c.py"]


def test_only_the_last_share_of_the_previous_appendix_is_read():
    previous = f"s\n\n{RETAINED_HEADING}\n" + "\n".join(f"- /a{i}.py" for i in range(1, 13))
    assert keep_list([], previous, carried_limit=10) == [Item(f"/a{i}.py", CARRIED) for i in range(3, 13)]
    # Half of 40 (20): heading 4 + 1, each path 2 + 1, so the five newest fit.
    summary, appended = check_summary("s", [], previous, 40, HEURISTIC)
    assert (summary, appended) == (
        f"s\n\n{RETAINED_HEADING}\n" + "\n".join(f"- /a{i}.py" for i in range(8, 13)), 5)


def test_an_item_another_appended_item_contains_is_not_repeated():
    head = decoded(U("Fix src/app.py"), U("see /testbed/src/"),
                   AC_args("c1", "bash", {"command": "cat /testbed/src/lib.py"}))
    summary, appended = check_summary("s", head, None, 1000, HEURISTIC)
    assert (summary, appended) == (
        f"s\n\n{USER_HEADING}\n- Fix src/app.py\n- see /testbed/src/\n\n{RETAINED_HEADING}\n"
        "- /testbed/src/lib.py", 3)


def test_a_contained_item_is_appended_when_its_container_is_cut():
    head = decoded(U(f"Fix src/app.py {X(20)}"))
    # Half of 30 (15): the request (its heading 4 + 1, itself 24 + 1) does not fit; the path
    # (the details' heading 4 + 1, itself 3 + 1) does.
    assert check_summary("s", head, None, 30, HEURISTIC) == (f"s\n\n{RETAINED_HEADING}\n- src/app.py", 1)


def test_multi_line_items_stay_one_bullet():
    summary, appended = check_summary("s", decoded(U("line one\nline two")), None, 1000, HEURISTIC)
    assert summary == f"s\n\n{USER_HEADING}\n- line one\n  line two"
    assert retained_in(summary, USER_HEADING) == ["line one\nline two"]


def test_the_budget_keeps_the_most_recent_items():
    head = decoded(*[U(f"request {i}: {X(10)}") for i in range(6)])
    # Half of a 100-token budget (50): the heading costs 4 + 1, each bullet 13 + 1, so three fit.
    summary, appended = check_summary("s", head, None, 100, HEURISTIC)
    assert appended == 3
    assert summary.split("\n")[2:] == [USER_HEADING, *(f"- request {i}: {X(10)}" for i in (3, 4, 5))]


def test_no_room_appends_nothing():
    assert check_summary("s", decoded(U("a request")), None, 8, HEURISTIC) == ("s", 0)


# --- through the functions ---------------------------------------------------------------


MODEL = {"id": "m", "limits": {"context_window": 8000, "max_output_tokens": 1000}}


def session() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [U("Port the parser in src/parse.py to the new API")]
    for i in range(30):
        messages += [AC_args(f"c{i}", "bash", {"command": f"cat src/mod{i}.py"}),
                     FR(f"c{i}", "bash", X(250))]
    return history(*messages)


def forgetful(system_prompt: str, user_prompt: str, model: Any) -> str:
    return "## Goal\n- (none)"


def test_assemble_reports_retained_items_and_the_summary_keeps_them():
    out = call("context::assemble", {"messages": session(), "model": MODEL},
               config={"summary_check": "append"}, summarizer=forgetful)
    applied = out["applied"]
    assert applied["compacted"] is True
    head_rounds = (applied["tail_start_index"] - 1) // 2
    # src/parse.py is inside the request's bullet, so it is not repeated.
    assert applied["retained_items"] == 1 + head_rounds
    lines = applied["summary"].split("\n")
    assert lines[:7] == ["## Goal", "- (none)", "", USER_HEADING,
                         "- Port the parser in src/parse.py to the new API", "", RETAINED_HEADING]
    assert lines[7:] == [f"- src/mod{i}.py" for i in range(head_rounds)]
    assert "summary_kind" not in applied
    assert out["system_prompt"].endswith(applied["summary"])


def test_compact_applies_the_same_check():
    out = call("context::compact", {"messages": session(), "model": MODEL},
               config={"summary_check": "append"}, summarizer=forgetful)
    assert out["status"] == "ok"
    assert out["summary"].startswith(f"## Goal\n- (none)\n\n{USER_HEADING}\n- Port the parser")
    assert out["retained_items"] == out["summary"].count("\n- ") - 1
    assert "summary_kind" not in out


def test_off_by_default():
    out = call("context::compact", {"messages": session(), "model": MODEL}, summarizer=forgetful)
    assert out["summary"] == "## Goal\n- (none)"
    assert "retained_items" not in out


def test_the_next_compaction_carries_what_the_check_kept():
    config = {"summary_check": "append"}
    first = call("context::assemble", {"messages": session(), "model": MODEL},
                 config=config, summarizer=forgetful)["applied"]
    kept = session()[first["tail_start_index"]:]
    more: list[dict[str, Any]] = []
    for i in range(30, 45):
        more += [AC_args(f"c{i}", "bash", {"command": f"cat src/mod{i}.py"}), FR(f"c{i}", "bash", X(250))]
    messages = kept + history(*more, first_timestamp=kept[-1]["timestamp"] + 1)
    second = call("context::assemble", {"messages": messages, "model": MODEL,
                                        "options": {"previous_summary": first["summary"]}},
                  config=config, summarizer=forgetful)["applied"]
    assert second["compacted"] is True
    first_rounds = (first["tail_start_index"] - 1) // 2
    second_rounds = second["tail_start_index"] // 2
    lines = second["summary"].split("\n")
    # The forgetful summariser dropped everything: the previous appendix comes first, then the
    # rounds this head folded.
    assert lines[:7] == ["## Goal", "- (none)", "", USER_HEADING,
                         "- Port the parser in src/parse.py to the new API", "", RETAINED_HEADING]
    assert lines[7:] == [f"- src/mod{i}.py" for i in range(first_rounds + second_rounds)]
    assert second["retained_items"] == 1 + first_rounds + second_rounds


def test_a_long_constraint_is_kept_whole_and_the_user_s_words_go_first():
    constraint = "Never change the public API of src/api.py; " + "keep every endpoint backwards compatible. " * 20
    assert 300 < len(constraint.strip()) <= 1000
    head = decoded(U("Fix src/app.py"),
                   AC_args("c1", "bash", {"command": "cat /repo/a.py /repo/b.py"}),
                   U(constraint),
                   AC_args("c2", "bash", {"command": "cat /repo/c.py"}))
    summary, appended = check_summary("s", head, None, 1000, HEURISTIC)
    assert (summary, appended) == (
        f"s\n\n{USER_HEADING}\n- Fix src/app.py\n- {constraint.strip()}\n\n{RETAINED_HEADING}\n"
        "- /repo/a.py\n- /repo/b.py\n- /repo/c.py", 5)
    # The user's words are carried as the user's words by the next summary.
    assert keep_list([], summary)[:2] == [Item("Fix src/app.py", CARRIED, user=True),
                                          Item(constraint.strip(), CARRIED, user=True)]
    # The newest words first: with room for one request, the constraint stays.
    share_for_one = 2 * (HEURISTIC.text(USER_HEADING) + 1 + HEURISTIC.text(bullet(constraint.strip())) + 1)
    summary, appended = check_summary("s", head[:3], None, share_for_one, HEURISTIC)
    assert (summary, appended) == (f"s\n\n{USER_HEADING}\n- {constraint.strip()}", 1)
