"""The extractive summary (``summarizer_fallback: extractive``): content, updates, budget, use."""

from __future__ import annotations

from typing import Any

import pytest
from compaction_support import FR, A, U, X, decoded, history

from context_manager import call
from context_manager.core.compaction.extractive import (
    extractive_summary,
    parse_sections,
    short_arguments,
)
from context_manager.core.compaction.retention_check import RETAINED_HEADING
from context_manager.core.counting.estimate import HEURISTIC
from tests.core.compaction.test_retention_check import AC_args, FR_err

HEAD = decoded(
    U("Add a --verbose flag to cli.py"),
    A("Looking at the code first."),
    AC_args("c1", "bash", {"command": "cat src/cli.py"}),
    FR("c1", "bash", "import sys\ndef main(): ..."),
    AC_args("c2", "bash", {"command": "pytest tests/test_cli.py"}),
    FR_err("c2", "bash", "E   AssertionError: verbose\nmore"),
    U("Keep the output format unchanged"),
    A("Adding the flag now."),
)

EXPECTED = """\
## Goal
- Add a --verbose flag to cli.py

## Constraints & Preferences
- Keep the output format unchanged

## Progress
### Done
- (none)

### In Progress
- Adding the flag now.

### Blocked
- bash: E   AssertionError: verbose

## Key Decisions
- (none)

## Actions Taken
- bash(command="cat src/cli.py") -> import sys
- bash(command="pytest tests/test_cli.py") -> failed: E   AssertionError: verbose

## Next Steps
- (none)

## Critical Context
- (none)

## Relevant Files
- src/cli.py
- tests/test_cli.py"""


def test_a_fresh_summary():
    assert extractive_summary(HEAD, None, 4000, HEURISTIC) == EXPECTED


def test_short_arguments():
    assert short_arguments({"a": 1, "b": {"y": [1, "z"], "x": None}}) == 'a=1, b={"x":null,"y":[1,"z"]}'
    assert short_arguments(None) == ""
    assert short_arguments({"command": "x" * 200}) == 'command="' + "x" * 91 + "…"


def test_short_arguments_list_the_keys_sorted_whatever_order_they_arrived_in():
    # The engine's history reader keeps the order the keys were sent in; the decoder sorts them.
    assert short_arguments({"\\\\": None, "": None, "b": 2, "a": 1}) == '=null, \\\\=null, a=1, b=2'


def test_an_update_keeps_the_goal_and_adds_the_rest():
    previous = EXPECTED + f"\n\n{RETAINED_HEADING}\n- an old request\n  on two lines"
    later = decoded(
        U("Also update README.md and docs/cli.md"),
        AC_args("c3", "bash", {"command": "cat src/cli.py"}),
        FR("c3", "bash", "import sys"),
        A("All green."),
    )
    sections = parse_sections(extractive_summary(later, previous, 4000, HEURISTIC))
    assert sections["## Goal"] == ["Add a --verbose flag to cli.py"]
    assert sections["## Constraints & Preferences"] == [
        "Keep the output format unchanged", "Also update README.md and docs/cli.md"]
    assert sections["### In Progress"] == ["All green."]
    assert sections["### Blocked"] == ["bash: E   AssertionError: verbose"]
    assert sections["## Actions Taken"] == [
        'bash(command="cat src/cli.py") -> import sys',
        'bash(command="pytest tests/test_cli.py") -> failed: E   AssertionError: verbose',
        'bash(command="cat src/cli.py") -> import sys',
    ]
    assert sections["## Critical Context"] == ["an old request\non two lines"]
    # Each path once, at its latest sighting.
    assert sections["## Relevant Files"] == ["tests/test_cli.py", "docs/cli.md", "src/cli.py"]


def test_an_unstructured_previous_summary_reads_into_critical_context():
    sections = parse_sections("The user wants X.\nDone: Y.")
    assert sections["## Critical Context"] == ["The user wants X.", "Done: Y."]
    assert sections["## Goal"] == []


def test_the_budget_drops_old_actions_first():
    head = decoded(U("task in src/a.py"), *[
        m for i in range(30) for m in (AC_args(f"c{i}", "read", {"path": f"src/f{i}.py"}),
                                       FR(f"c{i}", "read", f"content {i}"))])
    summary = extractive_summary(head, None, 250, HEURISTIC)
    assert HEURISTIC.text(summary) <= 250
    sections = parse_sections(summary)
    actions = sections["## Actions Taken"]
    assert actions and actions[-1] == 'read(path="src/f29.py") -> content 29'
    assert len(actions) < 30
    assert sections["## Goal"] == ["task in src/a.py"]
    assert len(sections["## Relevant Files"]) == 31  # files outlast actions


@pytest.mark.parametrize("budget", [0, 1, 40, 120])
def test_any_budget_is_respected_or_only_the_skeleton_is_left(budget):
    summary = extractive_summary(HEAD, None, budget, HEURISTIC)
    if HEURISTIC.text(summary) > budget:
        assert all(not bullets for bullets in parse_sections(summary).values())


# --- as the fallback of both compaction paths --------------------------------------------


MODEL = {"id": "m", "limits": {"context_window": 8000, "max_output_tokens": 1000}}


def session() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [U("Port the parser in src/parse.py")]
    for i in range(30):
        messages += [AC_args(f"c{i}", "bash", {"command": f"cat src/mod{i}.py"}),
                     FR(f"c{i}", "bash", X(250))]
    return history(*messages)


def failing(system_prompt: str, user_prompt: str, model: Any) -> str:
    raise RuntimeError("model down")


def blank(system_prompt: str, user_prompt: str, model: Any) -> str:
    return "   "


@pytest.mark.parametrize("summarizer", [None, failing, blank])
def test_assemble_falls_back_to_an_extractive_summary(summarizer):
    out = call("context::assemble", {"messages": session(), "model": MODEL},
               config={"summarizer_fallback": "extractive"}, summarizer=summarizer)
    applied = out["applied"]
    assert applied["compacted"] is True
    assert applied["summary_kind"] == "extractive"
    assert "retained_items" not in applied
    summary = applied["summary"]
    assert summary.startswith("## Goal\n- Port the parser in src/parse.py\n\n")
    head_rounds = (applied["tail_start_index"] - 1) // 2
    assert summary.endswith("\n".join(f"- src/mod{i}.py" for i in range(head_rounds)))
    assert out["token_count"] <= out["usable"]


def test_without_the_fallback_nothing_compacts():
    out = call("context::assemble", {"messages": session(), "model": MODEL},
               config={"overflow_fallback": "drop_oldest"})
    assert out["applied"]["compacted"] is False


def test_a_working_summariser_is_reported_as_llm():
    out = call("context::assemble", {"messages": session(), "model": MODEL},
               config={"summarizer_fallback": "extractive"},
               summarizer=lambda system, user, model: "## Goal\n- port")
    assert (out["applied"]["summary_kind"], out["applied"]["summary"]) == ("llm", "## Goal\n- port")


def test_compact_falls_back_too():
    out = call("context::compact", {"messages": session(), "model": MODEL},
               config={"summarizer_fallback": "extractive", "summary_check": "append"})
    assert out["status"] == "ok"
    assert out["summary_kind"] == "extractive"
    assert out["retained_items"] == 0  # the extractive summary already holds every item
    assert out["summary"].startswith("## Goal\n- Port the parser in src/parse.py\n\n")


def test_compact_without_the_fallback_is_still_an_overflow():
    assert call("context::compact", {"messages": session(), "model": MODEL}) == {"status": "overflow"}
