"""`working_set: true`: the "## Working set" section of summaries and of dropped-history notes."""

from __future__ import annotations

from typing import Any

import pytest
from compaction_support import AC, FR, A, U, decoded, history
from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import call
from context_manager.core.compaction.artifacts import shell_command
from context_manager.core.compaction.working_set import (
    HEADING,
    NOTE_INTRO,
    dropped_note,
    parse_section,
    split_section,
    with_working_set,
    working_set,
)
from context_manager.core.counting.estimate import HEURISTIC

MODEL = {"id": "m", "limits": {"context_window": 12000, "max_output_tokens": 1000}}


def HEAD() -> list[dict[str, Any]]:
    return decoded(
        U("The `parse_config` call in src/app/config.py fails with KeyError, see "
          "https://example.com/issue/7"),
        AC("c1", "bash", {"command": "grep -rn parse_config src"}),
        FR("c1", "bash", "src/app/config.py:12:def parse_config(raw):\n"
                         "src/app/loader.py:40:    cfg = parse_config(text)"),
        AC("c2", "str_replace_editor", {"command": "view", "path": "/repo/src/app/config.py"}),
        FR("c2", "str_replace_editor", "def parse_config(raw):\n    return raw['key']"),
        AC("c3", "bash", {"command": "cd /repo && python -m pytest tests/test_config.py -q"}),
        FR("c3", "bash", 'Traceback (most recent call last):\n  File "/repo/src/app/config.py", '
                         "line 13, in parse_config\nKeyError: 'key'\n1 failed"),
        A("The loader passes `RawConfig` objects; I will make parseConfig tolerant."),
        AC("c4", "str_replace_editor", {"command": "str_replace", "path": "/repo/src/app/config.py",
                                        "old_str": "return raw['key']", "new_str": "return raw.get('key')"}),
        FR("c4", "str_replace_editor", "The file /repo/src/app/config.py has been edited."),
        AC("c5", "bash", {"command": "cat > /repo/tests/test_loader.py << 'EOF'\n"
                                     "from app.loader import load_all\nEOF"}),
        FR("c5", "bash", ""),
        AC("c6", "bash", {"command": "cd /repo && python -m pytest tests/test_config.py -q"}),
        FR("c6", "bash", "3 passed"),
    )


SECTION = """## Working set
Files:
- tests/test_config.py (ran)
- /repo/src/app/config.py (edited)
- /repo/tests/test_loader.py (created)
Symbols: parse_config, pytest, app.loader, load_all, RawConfig, parseConfig
Errors:
- KeyError (cleared)
Paths seen:
- src/app/loader.py
URLs:
- https://example.com/issue/7
Commands:
- python -m pytest tests/test_config.py -q (2×)"""


def test_the_section_of_a_hand_made_head():
    # Files with their last action (ranked by recency and repeats), the path only a search
    # surfaced (the file acted on is not repeated under its relative name), the symbols the user
    # and the agent named (what the user's words named ranks as current), the error a later run of the same test cleared, the URL, the command
    # run twice.
    assert working_set(HEAD(), None, "", 400, HEURISTIC) == SECTION


def test_an_open_error_and_a_failed_result_without_a_name():
    head = decoded(
        U("run it"),
        AC("c1", "run_tests", {"target": "tests/test_a.py"}),
        {**FR("c1", "run_tests", "<returncode>2</returncode>\nsegfault in worker"), "is_error": True},
        AC("c2", "bash", {"command": "python tests/test_b.py"}),
        FR("c2", "bash", "ValueError: bad width\n"),
    )
    assert working_set(head, None, "", 400, HEURISTIC) == (
        "## Working set\n"
        "Files:\n"
        "- tests/test_b.py (ran)\n"
        "- tests/test_a.py (read)\n"
        "Errors:\n"
        "- ValueError (open)\n"
        "- segfault in worker (open)"
    )


def test_shell_commands_say_what_was_done_to_which_path():
    parsed = shell_command("cd /w && sed -i 's/a/b/' src/x.py && grep -n handle_request lib/y.py "
                           "| head -5; echo hi > out.log; ./run.sh --fast; pytest -k test_fast tests")
    assert parsed.files == [("src/x.py", "edited"), ("lib/y.py", "read"), ("out.log", "created"),
                            ("run.sh", "ran")]
    assert parsed.symbols == ["handle_request", "test_fast"]
    assert parsed.subject == "sed"


def test_the_previous_working_set_is_carried_below_what_the_head_touched():
    previous = "## Goal\n- fix it\n\n" + SECTION
    head = decoded(
        AC("c7", "bash", {"command": "cat > tests/test_config.py << 'EOF'\nx = 1\nEOF"}),
        FR("c7", "bash", ""),
    )
    # A write to a path the previous working set knew is an edit; the head's entries come first;
    # the goal's text is not the section's business.
    section = working_set(head, previous, "", 400, HEURISTIC)
    assert section == SECTION.replace(
        "- tests/test_config.py (ran)\n", "- tests/test_config.py (edited)\n")
    # With less room, the carried entries that rank last leave first; the kinds take turns
    # (three symbols a turn) until the next entry of each does not fit.
    small = working_set(head, previous, "", 44, HEURISTIC)
    assert small == ("## Working set\nFiles:\n- tests/test_config.py (edited)\n"
                     "Symbols: parse_config, pytest, app.loader, load_all\nErrors:\n"
                     "- KeyError (cleared)\nPaths seen:\n- src/app/loader.py")


def test_entries_the_summary_holds_are_left_out():
    summary = "## Goal\n- make parse_config tolerant in /repo/src/app/config.py (see KeyError)"
    section = working_set(HEAD(), None, summary, 400, HEURISTIC)
    assert "parse_config" not in section and "/repo/src/app/config.py" not in section
    assert "KeyError" not in section
    # A longer name that contains a held one is still listed.
    assert "- /repo/tests/test_loader.py (created)" in section


def test_with_working_set_replaces_a_section_the_summary_already_had():
    summary = "## Goal\n- g\n\n## Working set\n- stale\n\n## Next Steps\n- n"
    text = with_working_set(summary, HEAD(), None, 400, HEURISTIC)
    assert text == "## Goal\n- g\n\n## Next Steps\n- n\n\n" + SECTION
    assert split_section(text) == ("## Goal\n- g\n\n## Next Steps\n- n", SECTION[len(HEADING) + 1:])


def test_parse_section_reads_back_what_render_wrote():
    entries = parse_section(split_section(SECTION)[1])
    assert [(e.kind, e.key, e.detail, e.count) for e in entries] == [
        ("file", "tests/test_config.py", "ran", 1),
        ("file", "/repo/src/app/config.py", "edited", 1),
        ("file", "/repo/tests/test_loader.py", "created", 1),
        ("symbol", "parse_config", "", 1), ("symbol", "pytest", "", 1),
        ("symbol", "app.loader", "", 1), ("symbol", "load_all", "", 1),
        ("symbol", "RawConfig", "", 1), ("symbol", "parseConfig", "", 1),
        ("error", "KeyError", "cleared", 1),
        ("seen", "src/app/loader.py", "", 1),
        ("url", "https://example.com/issue/7", "", 1),
        ("command", "python -m pytest tests/test_config.py -q", "", 2),
    ]


# --- through the functions ----------------------------------------------------------------


def session(rounds: int = 30) -> list[dict[str, Any]]:
    messages = [U("Port the parser in src/parse.py to the new API")]
    for i in range(rounds):
        messages += [AC(f"c{i}", "bash", {"command": f"cat src/mod{i}.py"}),
                     FR(f"c{i}", "bash", "x" * 1000)]
    return history(*messages)


def forgetful(system_prompt: str, user_prompt: str, model: Any) -> str:
    return "## Goal\n- (none)"


def test_compact_appends_the_section_after_the_retained_details():
    out = call("context::compact", {"messages": session(), "model": MODEL},
               config={"working_set": True, "summary_check": "append"}, summarizer=forgetful)
    summary = out["summary"]
    assert summary.startswith("## Goal\n- (none)\n\n## The user's words\n- Port the parser")
    body, section = split_section(summary)
    # Every path the retained details hold is left out of the section.
    assert section == ""
    assert body == summary
    out = call("context::compact", {"messages": session(), "model": MODEL},
               config={"working_set": True}, summarizer=forgetful)
    head_rounds = sum(1 for i in range(30) if f"src/mod{i}.py" in out["summary"])
    assert out["summary"] == "## Goal\n- (none)\n\n## Working set\nFiles:\n" + "\n".join(
        f"- src/mod{i}.py (read)" for i in reversed(range(head_rounds))) + "\nPaths seen:\n- src/parse.py"


def test_the_key_off_leaves_every_answer_byte_identical():
    for function_id in ("context::compact", "context::assemble"):
        payload = {"messages": session(), "model": MODEL}
        off = call(function_id, payload, config={"working_set": False}, summarizer=forgetful)
        default = call(function_id, payload, summarizer=forgetful)
        assert off == default
        assert HEADING not in str(off)


def test_assemble_and_the_next_compaction_carry_the_section():
    config = {"working_set": True}
    first = call("context::assemble", {"messages": session(), "model": MODEL},
                 config=config, summarizer=forgetful)["applied"]
    assert first["compacted"] is True and HEADING in first["summary"]
    kept = session()[first["tail_start_index"]:]
    more: list[dict[str, Any]] = []
    for i in range(30, 60):
        more += [AC(f"c{i}", "bash", {"command": f"cat src/mod{i}.py"}), FR(f"c{i}", "bash", "x" * 1000)]
    messages = kept + history(*more, first_timestamp=kept[-1]["timestamp"] + 1)
    second = call("context::assemble", {"messages": messages, "model": MODEL,
                                        "options": {"previous_summary": first["summary"]}},
                  config=config, summarizer=forgetful)["applied"]
    assert second["compacted"] is True
    # The forgetful summariser keeps nothing: the task's path is still there, carried.
    assert second["summary"].count(HEADING) == 1
    assert "- src/parse.py" in second["summary"]
    assert "- src/mod0.py (read)" in second["summary"]


def test_extractive_summaries_leave_the_section_its_share():
    out = call("context::compact", {"messages": session(), "model": MODEL},
               config={"working_set": True, "summarizer_fallback": "extractive"})
    assert out["summary_kind"] == "extractive"
    # The extractive summary lists every path itself (under Relevant Files): the section has
    # nothing to add, so there is none.
    assert split_section(out["summary"]) == (out["summary"], "")
    assert "## Relevant Files\n- src/parse.py\n- src/mod0.py" in out["summary"]
    # With no section, the extractive summary keeps the whole summary budget.
    plain = call("context::compact", {"messages": session(), "model": MODEL},
                 config={"summarizer_fallback": "extractive"})
    assert out["summary"] == plain["summary"]


def test_the_extractive_summary_leaves_the_section_the_tokens_it_takes():
    messages = session()
    for i, message in enumerate(messages):
        if message["role"] == "function_result":
            message["content"] = [{"type": "text", "text": "x" * 1000 + f"\nsee lib/helper_{i}.py"}]
    config = {"summarizer_fallback": "extractive"}
    # A window whose summary budget (1,000 tokens) the extractive summary fills.
    model = {"id": "m", "limits": {"context_window": 8000, "max_output_tokens": 1000}}
    plain = call("context::compact", {"messages": messages, "model": model}, config=config)
    out = call("context::compact", {"messages": messages, "model": model},
               config={**config, "working_set": True})
    body, section = split_section(out["summary"])
    assert section.startswith("Paths seen:\n- lib/helper_")
    # The same extractive summary, fitted to the budget less the section's tokens: it drops
    # its oldest actions first.
    assert HEURISTIC.text(body) < HEURISTIC.text(plain["summary"])
    assert HEURISTIC.text(plain["summary"]) <= 1000
    assert HEURISTIC.text(body) <= 1000 - HEURISTIC.text(HEADING + "\n" + section)


# --- dropped history ------------------------------------------------------------------------


def drop_session(rounds: int = 14) -> dict[str, Any]:
    messages = [U("fix the bug in src/core.py")]
    for i in range(rounds):
        step = AC(f"c{i}", "bash", {"command": f"python tests/test_{i}.py"})
        # Prose no pass but drop_oldest reduces.
        step["content"].insert(0, {"type": "text", "text": "z" * 3000})
        messages += [step, FR(f"c{i}", "bash", f"ImportError in step_{i}")]
    return {"model": {"id": "m", "limits": {"context_window": 10000, "max_output_tokens": 1000}},
            "messages": history(*messages)}


@pytest.mark.parametrize("reduce_to", [1.0, 0.6])
def test_dropped_history_leaves_a_note_in_its_place(reduce_to: float):
    config = {"overflow_fallback": "drop_oldest", "reduce_to": reduce_to}
    without = call("context::assemble", drop_session(), config=config)
    response = call("context::assemble", drop_session(), config={**config, "working_set": True})
    applied = response["applied"]
    assert response["token_count"] <= response["usable"]
    assert applied["dropped_messages"] >= without["applied"]["dropped_messages"]
    messages = response["messages"]
    note = messages[1]
    assert note["role"] == "user" and note["content"][0]["text"].startswith(NOTE_INTRO + "\n\n" + HEADING)
    assert note["timestamp"] == 0
    assert applied["working_set_note_tokens"] == HEURISTIC.message(note)
    assert response["breakdown"]["by_role"]["user"] == sum(
        HEURISTIC.message(m) for m in messages if m["role"] == "user")
    dropped = applied["dropped_messages"] // 2
    text = note["content"][0]["text"]
    assert text.split("\n")[3:5] == ["Files:", f"- tests/test_{dropped - 1}.py (ran)"]
    for i in range(dropped):
        assert f"tests/test_{i}.py" in text
    # What follows the note is whole rounds: no call was split from its result.
    calls = {b["id"] for m in messages if m["role"] == "assistant" for b in m["content"]
             if b["type"] == "function_call"}
    assert {m["function_call_id"] for m in messages if m["role"] == "function_result"} == calls
    assert messages[0]["content"][0]["text"] == "fix the bug in src/core.py"


def test_a_note_that_cannot_fit_is_left_out():
    note_maker_budget = 0
    assert dropped_note(decoded(U("nothing here")), None, note_maker_budget, HEURISTIC) is None


def test_explain_charges_the_note_to_the_first_dropped_message():
    response = call("context::assemble", {**drop_session(), "options": {"explain": True}},
                    config={"overflow_fallback": "drop_oldest", "working_set": True})
    drops = [a for a in response["applied"]["actions"] if a["pass"] == "drop"]
    assert len(drops) == response["applied"]["dropped_messages"]
    assert drops[0]["tokens_after"] == response["applied"]["working_set_note_tokens"]
    assert all(a["tokens_after"] == 0 for a in drops[1:])


# --- properties -----------------------------------------------------------------------------

_words = st.sampled_from(["src/a.py", "lib/b_c.py", "parse_config", "ValueError: x", "Foo.bar(",
                          "https://x.org/p", "tests/test_q.py", "`handleIt`", "plain", "error: no"])
_text = st.lists(_words, max_size=6).map(" ".join)
_command = st.lists(st.sampled_from(["cat src/a.py", "python tests/t.py", "grep -n foo_bar lib",
                                     "sed -i s/a/b/ x.py", "ls docs", "echo 1 > out.txt"]),
                    min_size=1, max_size=3).map(" && ".join)


@st.composite
def heads(draw: Any) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [U(draw(_text) or "go")]
    for i in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            messages.append(A(draw(_text) or "ok"))
        messages.append(AC(f"c{i}", draw(st.sampled_from(["bash", "edit_file", "read"])),
                           {"command": draw(_command)} if draw(st.booleans())
                           else {"path": draw(st.sampled_from(["src/a.py", "b.md"])), "id": "R1X"}))
        messages.append({**FR(f"c{i}", "bash", draw(_text)), "is_error": draw(st.booleans())})
    return decoded(*messages)


@settings(max_examples=60, deadline=None)
@given(heads(), heads(), st.integers(0, 200), st.sampled_from(["", "## Goal\n- src/a.py"]))
def test_the_section_is_deterministic_and_bounded(head: list[dict[str, Any]],
                                                  earlier: list[dict[str, Any]], budget: int,
                                                  summary: str) -> None:
    previous = with_working_set("## Goal\n- g", earlier, None, 200, HEURISTIC)
    first = working_set(head, previous, summary, budget, HEURISTIC)
    assert first == working_set(head, previous, summary, budget, HEURISTIC)
    assert HEURISTIC.text(first) <= budget
    # Read back, it gives the same section again (carried with nothing new, nothing moves).
    if first:
        assert working_set([], first, summary, budget, HEURISTIC) == first


def test_carried_entries_the_head_did_not_touch_take_every_second_place():
    previous = "## Working set\nFiles:\n- a.py (read)\n- b.py (read)\n- c.py (read)"
    head = decoded(*(message for i, name in enumerate(("d.py", "e.py", "f.py"))
                     for message in (AC(f"c{i}", "bash", {"command": f"touch {name}"}),
                                     FR(f"c{i}", "bash", ""))))
    # The head's entries, most recent first, alternate with the carried ones in their order, so
    # a long head cannot push the earlier trail out at once.
    assert working_set(head, previous, "", 400, HEURISTIC) == (
        "## Working set\nFiles:\n- f.py (created)\n- a.py (read)\n- e.py (created)\n"
        "- b.py (read)\n- d.py (created)\n- c.py (read)")
    # With room for three, the least recent carried entries leave first.
    assert working_set(head, previous, "", 20, HEURISTIC) == (
        "## Working set\nFiles:\n- f.py (created)\n- a.py (read)\n- e.py (created)")


def test_symbols_a_longer_symbol_names_are_folded_into_it():
    head = decoded(A("Call `store.items` then print(len(rows)) and read config.loader.options "
                     "beside config.loader; the string says \"\\nNextStep\"."))
    # "store" is plain, "print" and "len" are built-ins, "config.loader" is named by the longer
    # name, "\nNextStep" is an escape in a string; the backticked name is sighted twice.
    assert working_set(head, None, "", 400, HEURISTIC) == (
        "## Working set\nSymbols: store.items, config.loader.options")


def test_an_imported_module_is_a_symbol_also_when_it_reads_like_a_file_name():
    head = decoded(AC("c1", "bash", {"command": "python -c 'import os; from django.conf import settings'"}),
                   FR("c1", "bash", ""))
    # "django.conf" would be a file name ("conf" is an extension); after "from" it is a module.
    assert working_set(head, None, "", 400, HEURISTIC) == "## Working set\nSymbols: django.conf"


def test_the_paths_a_script_names_are_seen():
    head = decoded(AC("c1", "bash", {"command": "python - << 'EOF'\ntext = open('src/app.py').read()\n"
                                                "open('src/app.py.fixed', 'w').write(text)\nEOF"}),
                   FR("c1", "bash", ""))
    # The script's paths, not acted on by the command itself, are seen; the copy's name without
    # its directory reads as a dotted name.
    assert working_set(head, None, "", 400, HEURISTIC) == (
        "## Working set\nSymbols: app.py.fixed\nPaths seen:\n- src/app.py\n- src/app.py.fixed")
