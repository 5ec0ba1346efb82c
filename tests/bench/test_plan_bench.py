"""The generated plan sessions (bench/kit/generate.py) and the plan and constraint fidelity of the
recall bench (bench/recall/plan.py)."""

from __future__ import annotations

from typing import Any

from bench.kit.generate import PLAN_SESSIONS, build_plan_session, plan_arguments, plan_sessions
from bench.kit.loop import Call
from bench.kit.sessions import Session
from bench.recall.plan import PlanObserver, canonical, plan_versions

TOOLS = ("TodoWrite", "update_plan")


def _plan_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in messages if m["role"] == "assistant" for b in m["content"]
            if b["type"] == "function_call" and b["function_id"] in TOOLS]


def test_the_plan_sessions_are_reproducible_and_the_plan_moves_forward():
    assert build_plan_session(PLAN_SESSIONS[0]) == build_plan_session(PLAN_SESSIONS[0])
    sessions = plan_sessions()
    assert [s.name for s in sessions] == ["plan-todowrite-decimal-pricing", "plan-update-plan-event-outbox"]
    summary = []
    for session in sessions:
        calls = _plan_calls(session.messages)
        users = [len(m["content"][0]["text"]) for m in session.messages if m["role"] == "user"]
        last = calls[-1]["arguments"]
        items = last.get("todos") or last.get("plan")
        summary.append((len(session.messages), len(calls), users, [i["status"] for i in items]))
    assert summary == [
        (504, 12, [224, 675, 584], ["completed"] * 8),
        (538, 9, [244, 540, 675], ["completed"] * 7),
    ]
    first = _plan_calls(sessions[0].messages)[0]["arguments"]["todos"]
    assert first[:2] == [
        {"content": "Find every float price computation", "status": "in_progress",
         "activeForm": "Finding every float price computation"},
        {"content": "Add a Decimal money type", "status": "pending", "activeForm": "Adding a Decimal money type"},
    ]
    assert plan_arguments("update_plan", [("Read", "completed")], "why") == {
        "explanation": "why", "plan": [{"step": "Read", "status": "completed"}]}


def _session() -> Session:
    def plan(index: int, *statuses: str) -> dict[str, Any]:
        return {"role": "assistant", "timestamp": index, "model": "m", "provider": "p", "stop_reason": "function_call",
                "content": [{"type": "function_call", "id": f"p{index}", "function_id": "TodoWrite",
                             "arguments": {"todos": [{"content": f"item {i}", "status": s}
                                                     for i, s in enumerate(statuses)]}}]}
    long_words = "keep the API stable " * 20
    messages = [{"role": "user", "content": [{"type": "text", "text": "task"}], "timestamp": 0},
                plan(1, "in_progress", "pending"),
                {"role": "user", "content": [{"type": "text", "text": long_words}], "timestamp": 2},
                plan(3, "completed", "in_progress"),
                {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 4,
                 "model": "m", "provider": "p", "stop_reason": "end"}]
    return Session("s", None, messages)


def test_fidelity_stale_plans_regressions_and_constraints_are_counted():
    session = _session()
    versions = plan_versions(session, TOOLS)
    assert [v.index for v in versions] == [1, 3]
    old, new = (canonical(v.arguments) for v in versions)
    assert new == ('{"todos":[{"content":"item 0","status":"completed"},'
                   '{"content":"item 1","status":"in_progress"}]}')
    observer = PlanObserver({"s": frozenset({4})}, TOOLS)
    long_words = session.messages[2]["content"][0]["text"]

    def answer(system_prompt: str, messages: list[dict[str, Any]]) -> None:
        observer(session, Call(4, [], None, {"system_prompt": system_prompt, "messages": messages}))

    answer(f"## Current plan\n- TodoWrite: {new}\n" + " ".join(long_words.split()), [])
    answer(f"- TodoWrite: {old}", [])  # stale: item 0, completed since, shown in progress
    answer("", [session.messages[3]])  # the call itself, returned
    observer(session, Call(4, [], None, None))  # an overflow keeps nothing
    observer(session, Call(2, [], None, {"system_prompt": "", "messages": []}))  # not a pressure call
    found = observer.result
    assert (found.calls, found.plan_kept, found.stale, found.regressions) == (4, 2, 1, 1)
    assert (found.constraints, found.constraints_kept) == (4, 1)
