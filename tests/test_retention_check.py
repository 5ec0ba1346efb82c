"""The retention check (``summary_check: append``): derived items, placement, budget cut."""

from __future__ import annotations

from typing import Any

from context_manager import call
from context_manager.core.compaction.retention_check import (
    RETAINED_HEADING,
    Item,
    check_summary,
    must_keep,
    open_error,
    paths_in,
)
from context_manager.core.counting.estimate import HEURISTIC

from compaction_support import FR, A, U, X, decoded, history


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
        Item("Please fix   the bug in src/app.py", 0),
        Item("src/app.py", 3),
        Item("/testbed/src/app.py", 1),
        Item("docs/x.md", 1),
        Item("Also check https://example.com/spec and src/app.py", 3),
        Item("https://example.com/spec", 3),
    ]


def test_user_text_is_cut_at_300_characters():
    (item,) = must_keep(decoded(U("a" * 400)))
    assert item.text == "a" * 300


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
    assert summary == f"## Goal\n- edit SRC/APP.PY\n\n{RETAINED_HEADING}\n- Fix src/app.py"


def test_nothing_missing_leaves_the_summary_as_it_is():
    head = decoded(U("Fix src/app.py"))
    assert check_summary("we must   FIX src/app.py\nnow", head, None, 1000, HEURISTIC) == (
        "we must   FIX src/app.py\nnow", 0)


def test_items_in_the_previous_summary_count_as_kept():
    head = decoded(U("Fix src/app.py"), U("and docs/readme.md"))
    summary, appended = check_summary("short", head, "- Fix src/app.py", 1000, HEURISTIC)
    assert (summary, appended) == (f"short\n\n{RETAINED_HEADING}\n- and docs/readme.md\n- docs/readme.md", 2)


def test_multi_line_items_stay_one_bullet():
    summary, appended = check_summary("s", decoded(U("line one\nline two")), None, 1000, HEURISTIC)
    assert summary == f"s\n\n{RETAINED_HEADING}\n- line one\n  line two"


def test_the_budget_keeps_the_most_recent_items():
    head = decoded(*[U(f"request {i}: {X(10)}") for i in range(6)])
    # Half of a 100-token budget (50): the heading costs 4 + 1, each bullet 13 + 1, so three fit.
    summary, appended = check_summary("s", head, None, 100, HEURISTIC)
    assert appended == 3
    assert summary.split("\n")[3:] == [f"- request {i}: {X(10)}" for i in (3, 4, 5)]


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
    assert applied["retained_items"] == 1 + 1 + head_rounds
    lines = applied["summary"].split("\n")
    assert lines[:4] == ["## Goal", "- (none)", "", RETAINED_HEADING]
    assert lines[4:6] == ["- Port the parser in src/parse.py to the new API", "- src/parse.py"]
    assert lines[6:] == [f"- src/mod{i}.py" for i in range(head_rounds)]
    assert "summary_kind" not in applied
    assert out["system_prompt"].endswith(applied["summary"])


def test_compact_applies_the_same_check():
    out = call("context::compact", {"messages": session(), "model": MODEL},
               config={"summary_check": "append"}, summarizer=forgetful)
    assert out["status"] == "ok"
    assert out["summary"].startswith(f"## Goal\n- (none)\n\n{RETAINED_HEADING}\n- Port the parser")
    assert out["retained_items"] == out["summary"].count("\n- ") - 1
    assert "summary_kind" not in out


def test_off_by_default():
    out = call("context::compact", {"messages": session(), "model": MODEL}, summarizer=forgetful)
    assert out["summary"] == "## Goal\n- (none)"
    assert "retained_items" not in out
