"""Replaying recorded agent sessions through context::assemble (bench/replay)."""

from __future__ import annotations

import gzip
import json

import pytest

from bench.kit import generate
from bench.kit.summariser import digest, previous_summary, summarize
from bench.replay.__main__ import main
from bench.replay.replay import MODES_BY_NAME, SESSIONS_DIR, load_session, replay, shipped_sessions

pytestmark = pytest.mark.slow  # whole recorded sessions, hundreds of rounds each

SINGLE_TASK = "single-fix-flaky-lease-test"


@pytest.fixture(scope="module")
def sessions():
    return {session.name: session for session in shipped_sessions()}


@pytest.fixture(scope="module")
def single_task_with_summariser(sessions):
    return replay(sessions[SINGLE_TASK], "32k", MODES_BY_NAME["summariser"])


# --- the shipped sessions -------------------------------------------------------------------


def test_shipped_sessions_are_what_the_generator_writes():
    shipped = sorted(path.name for path in SESSIONS_DIR.iterdir() if path.name.endswith(".json.gz"))
    assert shipped == sorted(f"{plan.name}.json.gz" for plan in generate.PLANS)
    for plan in generate.PLANS:
        document = json.loads(gzip.decompress((SESSIONS_DIR / f"{plan.name}.json.gz").read_bytes()))
        assert document == generate.build_session(plan)
    assert sum(path.stat().st_size for path in SESSIONS_DIR.iterdir()) < 5_000_000


def test_single_task_sessions_hold_one_request_and_150_to_300_rounds(sessions):
    single = [s for s in sessions.values() if s.name.startswith("single-")]
    assert [s.tool_rounds for s in single] == [220, 300, 160]
    for session in single:
        assert [m["role"] for m in session.messages].count("user") == 1
        assert session.messages[0]["role"] == "user"
    multi = [s for s in sessions.values() if s.name.startswith("multi-")]
    assert [[m["role"] for m in s.messages].count("user") for s in multi] == [6, 4]


def test_every_call_is_answered_right_after_it(sessions):
    for session in sessions.values():
        pending: set[str] = set()
        for message in session.messages:
            if message["role"] == "function_result":
                pending.remove(message["function_call_id"])
            else:
                assert not pending
                if message["role"] == "assistant":
                    pending = {b["id"] for b in message["content"] if b["type"] == "function_call"}


# --- the fake summariser --------------------------------------------------------------------


FRESH_PROMPT = "Write a new anchored summary.\n\nTEMPLATE"
CONVERSATION = ("Summarise.\n\n<conversation>\n\n[user]\nFix the build\n\n[assistant]\n"
                "[tool_call] shell::run {\"command\":\"make\"}\n\n[function_result]\nok\n</conversation>\n")


def test_fake_summariser_fresh_then_updated():
    first = summarize(FRESH_PROMPT, CONVERSATION)
    assert previous_summary(FRESH_PROMPT) is None
    assert "## Goal\n- Fix the build\n" in first
    assert "- generation: 1\n- anchored on: none\n- saw: 3\n- messages folded: 3\n" in first
    update_prompt = f"Revise.\nKeep.\n<previous-summary>\n{first}\n</previous-summary>\n\nTEMPLATE"
    assert previous_summary(update_prompt) == first
    second = summarize(update_prompt, "<conversation>\n\n[assistant]\nnext\n</conversation>\n")
    assert "## Goal\n- Fix the build\n" in second
    assert f"- generation: 2\n- anchored on: {digest(first)}\n- saw: 1\n- messages folded: 4\n" in second
    assert "- shell::run {\"command\":\"make\"}" in second


# --- replays --------------------------------------------------------------------------------


def test_single_task_at_32k_with_a_summariser_never_overflows(single_task_with_summariser):
    stats = single_task_with_summariser
    assert (stats.calls, stats.overflows, stats.compacted) == (161, 0, 13)
    # Nothing else rewrites the history at this budget: every cache bust is a compaction.
    assert stats.cache_busts == stats.compacted


def test_the_summary_keeps_being_updated(sessions, single_task_with_summariser):
    task = sessions[SINGLE_TASK].messages[0]["content"][0]["text"]
    compactions = single_task_with_summariser.compactions
    previous = None
    for number, compaction in enumerate(compactions, start=1):
        calls = compaction.summarizer_calls
        # The first request of a compaction updates the summary the harness kept...
        assert calls[0][0] == previous
        # ...every later request of it (chunks) updates the reply before it, and the last reply
        # is the summary.
        for (anchor, _), (_, earlier_reply) in zip(calls[1:], calls):
            assert anchor == earlier_reply
        assert compaction.summary == calls[-1][1]
        assert f"## Goal\n- {task}\n" in compaction.summary
        anchor_line = "none" if previous is None else digest(previous)
        assert f"- anchored on: {anchor_line}\n" in compaction.summary
        assert f"- generation: {number}\n" in compaction.summary  # one request per compaction here
        assert len(compaction.summary.encode("utf-8")) < 2000
        previous = compaction.summary
    # After the first compaction the harness no longer holds the task message: later ones are
    # compactions of user-less windows.
    assert compactions[0].tail_start_index > 0 and len(compactions) > 1


def test_the_original_selection_overflows_on_the_same_session(sessions):
    stats = replay(sessions[SINGLE_TASK], "32k", MODES_BY_NAME["original"])
    assert (stats.compacted, stats.overflows) == (1, 69)


# 128k is in the full table (python -m bench.replay); no session needs a drop there.
@pytest.mark.parametrize("budget", ["32k", "64k"])
def test_drop_oldest_without_a_summariser_never_overflows(sessions, budget):
    for session in sessions.values():
        stats = replay(session, budget, MODES_BY_NAME["none+drop_oldest"])
        assert (stats.session, stats.overflows) == (session.name, 0)
        assert stats.calls == sum(1 for m in session.messages if m["role"] == "assistant")
        if budget == "32k" and session.name.startswith("single-"):
            assert stats.dropped > 0


def test_without_either_fallback_the_single_task_overflows(sessions):
    stats = replay(sessions[SINGLE_TASK], "32k", MODES_BY_NAME["none"])
    assert (stats.overflows, stats.dropped) == (80, 0)


def test_the_command_prints_one_row_per_session_budget_and_mode(capsys):
    assert main(["--sessions", SINGLE_TASK, "--budgets", "32k", "--modes", "summariser,original"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| session ")
    assert lines[2] == ("| single-fix-flaky-lease-test |    160 | 32k    | summariser |   161 |"
                        "    2,071,548 |          13 |         0 |      1 |     14 |        13 |       0 |"
                        "        100% |         83% |      100% |          0 |")
    assert lines[3].split("|")[4].strip() == "original"
    assert lines[4] == ""


def test_a_harness_sending_only_the_tail_gets_the_answers_of_one_resending_the_anchor(sessions):
    session = sessions[SINGLE_TASK]
    tail_only = replay(session, "32k", MODES_BY_NAME["harness+anchor+check"])
    resent = replay(session, "32k", MODES_BY_NAME["summariser+anchor+check"])
    assert (tail_only.overflows, tail_only.task_kept, tail_only.task_repeated, tail_only.calls) == (
        0, 161, 0, 161)
    assert (resent.overflows, resent.task_kept, resent.task_repeated) == (0, 161, 0)
    for stats in (tail_only, resent):
        assert (stats.input_tokens, stats.cache_busts, stats.compacted) == (2_193_169, 13, 13)
    assert [c.summary for c in tail_only.compactions] == [c.summary for c in resent.compactions]


def test_an_anchor_keeps_the_task_in_every_call_and_the_check_keeps_the_head(sessions):
    session = sessions[SINGLE_TASK]
    anchored = replay(session, "32k", MODES_BY_NAME["summariser+anchor+check"])
    assert (anchored.overflows, anchored.task_kept, anchored.calls) == (0, 161, 161)
    assert anchored.probes.users.total == 0  # the request is pinned, never in a summarised head
    plain = replay(session, "32k", MODES_BY_NAME["summariser+check"])
    # Only the first compaction's head holds the (single) request.
    assert (plain.probes.users.found, plain.probes.users.total, plain.compacted) == (1, 1, 13)
    # What the check appended is carried through every later update, so no path is lost.
    assert plain.probes.paths.found == plain.probes.paths.total > 0
    assert anchored.probes.paths.found == anchored.probes.paths.total > 0


def test_the_extractive_fallback_compacts_without_any_summariser(sessions):
    stats = replay(sessions[SINGLE_TASK], "32k", MODES_BY_NAME["none+extractive"])
    assert (stats.overflows, stats.compacted, stats.cache_busts) == (0, 15, 15)
    assert stats.probes.paths.found == stats.probes.paths.total > 0


def test_the_command_rejects_unknown_names(capsys):
    assert main(["--sessions", "nope"]) == 2
    assert main(["--budgets", "8k"]) == 2
    assert "8k" in capsys.readouterr().err


def test_a_plain_json_session_loads(tmp_path, sessions):
    path = tmp_path / "tiny.json"
    messages = sessions[SINGLE_TASK].messages[:5]
    path.write_text(json.dumps({"system_prompt": None, "messages": messages}))
    session = load_session(path)
    assert (session.name, session.system_prompt, session.messages) == ("tiny", None, messages)
