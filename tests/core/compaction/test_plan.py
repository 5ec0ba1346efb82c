"""`plan_functions` with `working_set: true`: the "## Current plan" section carries the latest call
of each plan function whole, through compactions, extractive summaries and dropped history."""

from __future__ import annotations

from typing import Any

from compaction_support import AC, FR, A, U, decoded, history

from context_manager import call
from context_manager.core.compaction.plan import (
    HEADING,
    INTRO,
    Plan,
    current_plans,
    head_plans,
    parse_plans,
    render,
    split_plan,
)
from context_manager.core.compaction.working_set import NOTE_INTRO, dropped_note, without_working_set
from context_manager.core.counting.estimate import HEURISTIC

MODEL = {"id": "m", "limits": {"context_window": 12000, "max_output_tokens": 1000}}


def todos(*items: tuple[str, str]) -> dict[str, Any]:
    return {"todos": [{"content": c, "status": s, "activeForm": c + "ing"} for c, s in items]}


def plan_round(call_id: str, function_id: str, arguments: Any) -> list[dict[str, Any]]:
    return [AC(call_id, function_id, arguments), FR(call_id, function_id, "ok")]


def session(rounds: int = 15) -> list[dict[str, Any]]:
    messages = [U("Port the parser to src/parse.py"),
                *plan_round("p1", "TodoWrite", todos(("Read", "in_progress"), ("Port", "pending")))]
    for i in range(rounds):
        messages += [AC(f"c{i}", "bash", {"command": f"cat src/mod{i}.py"}), FR(f"c{i}", "bash", "x" * 1000)]
        if i == 7:
            messages += plan_round("p2", "TodoWrite", todos(("Read", "completed"), ("Port", "in_progress")))
            messages += plan_round("v1", "task_tracker", {"command": "view"})
            messages += plan_round("p3", "update_plan", {"plan": [{"step": "Port", "status": "in_progress"}],
                                                         "explanation": "reading done"})
    messages += [U("now test it"), A("ok")]
    return history(*messages)


def forgetful(system_prompt: str, user_prompt: str, model: Any) -> str:
    return "## Goal\n- (none)"


TODO_2 = ('- TodoWrite: {"todos":[{"activeForm":"Reading","content":"Read","status":"completed"},'
          '{"activeForm":"Porting","content":"Port","status":"in_progress"}]}')
PLAN_3 = '- update_plan: {"explanation":"reading done","plan":[{"status":"in_progress","step":"Port"}]}'


def test_the_latest_call_of_each_plan_function_is_carried_whole_newest_first():
    out = call("context::compact", {"messages": session(), "model": MODEL},
               config={"working_set": True}, summarizer=forgetful)
    summary = out["summary"]
    assert summary.startswith(f"## Goal\n- (none)\n\n{HEADING}\n{INTRO}\n{PLAN_3}\n{TODO_2}\n\n## Working set\n")
    # The superseded TodoWrite call and the task_tracker view are not shown, and the plan calls
    # leave no artifacts in the working set (their item texts and statuses are not symbols).
    assert '"status":"pending"' not in summary and '"command"' not in summary
    head_rounds = sum(1 for i in range(15) if f"src/mod{i}.py" in summary)
    assert summary.endswith("## Working set\nFiles:\n" + "\n".join(
        f"- src/mod{i}.py (read)" for i in reversed(range(head_rounds))) + "\nPaths seen:\n- src/parse.py")
    # The summariser never sees the plan section of a previous summary: it is carried apart.
    assert without_working_set(summary) == "## Goal\n- (none)"


def test_a_later_compaction_replaces_a_superseded_plan_and_keeps_the_others():
    config = {"working_set": True}
    first = call("context::compact", {"messages": session(), "model": MODEL},
                 config=config, summarizer=forgetful)
    more = plan_round("p4", "TodoWrite", todos(("Read", "completed"), ("Port", "completed")))
    for i in range(30, 45):
        more += [AC(f"c{i}", "bash", {"command": f"cat src/mod{i}.py"}), FR(f"c{i}", "bash", "x" * 1000)]
    second = call("context::compact", {"messages": history(*more, U("go on"), A("ok")), "model": MODEL,
                                       "options": {"previous_summary": first["summary"]}},
                  config=config, summarizer=forgetful)
    section = split_plan(second["summary"])[1]
    assert section == "\n".join([INTRO,
        '- TodoWrite: {"todos":[{"activeForm":"Reading","content":"Read","status":"completed"},'
        '{"activeForm":"Porting","content":"Port","status":"completed"}]}',
        PLAN_3, ""])
    assert second["summary"].count(HEADING) == 1


def test_without_plan_calls_or_with_no_functions_the_answers_are_unchanged():
    config = {"working_set": True}
    for function_id in ("context::compact", "context::assemble"):
        payload = {"messages": session(), "model": MODEL}
        empty = call(function_id, payload, config={**config, "plan_functions": []}, summarizer=forgetful)
        other = call(function_id, payload, config={**config, "plan_functions": ["nothing_called"]},
                     summarizer=forgetful)
        assert empty == other
        assert HEADING not in str(empty)


def test_extractive_summaries_carry_the_plan_too():
    out = call("context::compact", {"messages": session(), "model": MODEL},
               config={"working_set": True, "summarizer_fallback": "extractive"})
    assert out["summary_kind"] == "extractive"
    # The extractive summary lists every path itself: the working set has nothing to add.
    assert out["summary"].endswith(f"\n\n{HEADING}\n{INTRO}\n{PLAN_3}\n{TODO_2}")


def test_a_plan_that_does_not_fit_whole_is_left_out():
    plans = [Plan("TodoWrite", '{"todos":["' + "y" * 400 + '"]}', 3), Plan("update_plan", '{"plan":[]}', 1)]
    text, spent = render(plans, 60, HEURISTIC)
    assert text == f"{HEADING}\n{INTRO}\n- update_plan: {{\"plan\":[]}}"
    assert spent == HEURISTIC.text(HEADING) + HEURISTIC.text(INTRO) + HEURISTIC.text(plans[1].line) + 3
    assert render(plans, 10, HEURISTIC) == ("", 0)
    assert render([], 1000, HEURISTIC) == ("", 0)


def test_reads_of_a_plan_are_not_plans_and_only_named_functions_count():
    head = decoded(*plan_round("v", "task_tracker", {"command": "view"}),
                   *plan_round("p", "task_tracker", {"command": "plan", "task_list": [{"id": "1"}]}),
                   *plan_round("q", "other", {"items": []}),
                   *plan_round("r", "task_tracker", {"command": "view"}))
    found = head_plans(head, ("task_tracker",))
    assert found == {"task_tracker": Plan("task_tracker", '{"command":"plan","task_list":[{"id":"1"}]}', 2)}
    assert head_plans(head, ()) == {}
    carried = parse_plans("x\n- other: {\"items\":[1]}\n- task_tracker: {}\n- other: {}")
    assert carried == [Plan("other", '{"items":[1]}', -1), Plan("task_tracker", "{}", -2)]
    # The head's own plans go first, newest first; they supersede the carried ones.
    other = Plan("other", '{"items":[]}', 4)
    assert current_plans(head, carried, ("task_tracker", "other")) == [other, found["task_tracker"]]
    assert current_plans(head[:4], carried, ("task_tracker", "other")) == [found["task_tracker"], carried[0]]
    assert current_plans(head[:4], carried, ("other",)) == [carried[0]]


def test_dropped_history_leaves_its_plan_in_the_note_and_a_later_note_supersedes():
    first = dropped_note(decoded(U("fix src/core.py"), *plan_round("p1", "update_plan", {"plan": ["a"]})),
                         None, 400, HEURISTIC, ("update_plan",))
    assert first is not None
    text = first["content"][0]["text"]
    assert text.startswith(f"{NOTE_INTRO}\n\n{HEADING}\n{INTRO}\n- update_plan: {{\"plan\":[\"a\"]}}\n\n## Working set")
    second = dropped_note([first, *decoded(*plan_round("p2", "TodoWrite", {"todos": ["b"]}))], None, 400,
                          HEURISTIC, ("update_plan", "TodoWrite"))
    assert second is not None
    assert split_plan(second["content"][0]["text"])[1] == (
        f"{INTRO}\n- TodoWrite: {{\"todos\":[\"b\"]}}\n- update_plan: {{\"plan\":[\"a\"]}}\n")
