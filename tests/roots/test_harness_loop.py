"""The agent harness's turn loop against the worker (tests/roots/harness_loop.py describes the loop).

The fast tests pin the driver itself to the harness's behaviour with a scripted worker. The slow
ones run it through the test engine, the worker as a process and the official SDK as the caller,
with a fake router serving a 32k window / 4k output and the replay's deterministic summariser,
over the recorded real sessions (``../shared/realdata``) and the generated ones: no turn fails,
every answer fits ``usable``, a recount after the re-assembly fits too, every compaction entry's
tail names the message the next window starts with, and with ``anchor_messages: 1`` the task
statement of a single-task session is in every call's context.

Scope, to keep the run short: the defaults over every real and generated session, calibration
over every real session (the generated ones carry no usage), the anchor over every single-task
real session, and the other keys over two real sessions that compact (one DeepSeek session with
usage, one OpenHands session with tools and custom messages).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench.kit.loop import (
    ELIDED,
    HOOK_ALLOWANCE_TOKENS,
    REASSEMBLY_MARGIN_TOKENS,
    REQUEST_OVERHEAD_TOKENS,
    CallFailed,
    CompactionRecord,
    GuidanceHook,
    HarnessLoop,
    SessionRun,
    Step,
    patch_orphaned_calls,
)
from bench.kit.sessions import Session, generated_sessions, real_sessions
from tests.roots.harness_loop import Stack, Totals, digest, harness_stack, run_configuration, violations

# ---------------------------------------------------------------------------------- the driver


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def _reply(text: str, call: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if call is not None:
        content.append({"type": "function_call", "id": call, "function_id": "shell::run", "arguments": {}})
    return {"role": "assistant", "content": content, "stop_reason": "end", "model": "m1", "provider": "p1",
            "timestamp": 2}


def _result(call: str) -> dict[str, Any]:
    return {"role": "function_result", "function_call_id": call, "function_id": "shell::run",
            "content": [{"type": "text", "text": "ok"}], "is_error": False, "timestamp": 3}


NOTE = {"role": "custom", "custom_type": "note", "content": [{"type": "text", "text": "n"}], "timestamp": 1}
TOOLS = [{"name": "shell::run", "description": "run", "parameters": {"type": "object"}}]
SESSION = Session("s", "Be brief.", tools=TOOLS, messages=[
    _user("the task"), _reply("a0", "c0"), _result("c0"), NOTE, _reply("a1", "c1"), _result("c1"),
    _reply("a2"), _user("more"), _reply("a3"),
])


class ScriptedWorker:
    """Answers ``context::assemble`` from ``answers`` (by call number; the request's own messages
    otherwise) and ``context::count-tokens`` with ``counts``; keeps every request."""

    def __init__(self, answers: dict[int, Any] | None = None, counts: list[int] | None = None) -> None:
        self.answers = answers or {}
        self.counts = counts or []
        self.assembles: list[dict[str, Any]] = []
        self.recounts: list[dict[str, Any]] = []

    def __call__(self, function_id: str, payload: dict[str, Any]) -> Any:
        if function_id == "context::count-tokens":
            self.recounts.append(payload)
            return {"tokens": self.counts[len(self.recounts) - 1]}
        self.assembles.append(payload)
        answer = self.answers.get(len(self.assembles) - 1)
        if isinstance(answer, Exception):
            raise answer
        base = {"system_prompt": payload["system_prompt"], "messages": payload["messages"], "token_count": 100,
                "usable": 1000, "effective_max_output_tokens": 200, "applied": {"compacted": False}}
        return {**base, **(answer or {})}


def _compacted(tail: int, summary: str = "S1") -> dict[str, Any]:
    return {"applied": {"compacted": True, "summary": summary, "tail_start_index": tail, "tokens_before": 40,
                        "summarized_head_tokens": 40, "initial_token_count": 900}}


def test_each_step_sends_the_model_facing_log_with_the_session_as_lease_key() -> None:
    worker = ScriptedWorker()
    run = HarnessLoop(worker, SESSION, "sess-1", hook=None).run()
    assert [len(s.window) for s in run.steps] == [1, 3, 5, 7]
    assert worker.assembles[0] == {
        "messages": [_user("the task")],
        "model": {"id": "m1", "provider": "p1"},
        "options": {"lease_key": "sess-1", "request_overhead_tokens": 65},
        "tools": TOOLS,
        "system_prompt": "Be brief.\nYour session id is sess-1.",
    }
    # The custom message (e3) stays in the log and is never sent.
    assert run.steps[2].window == ["e0", "e1", "e2", "e4", "e5"]
    assert worker.recounts == [] and run.failures == []


def test_a_compaction_entry_starts_the_next_window_at_its_tail_with_its_summary() -> None:
    worker = ScriptedWorker({1: _compacted(2)})
    run = HarnessLoop(worker, SESSION, "sess-1", hook=None).run()
    # Call 1 sent e0 e1 e2; index 2 is e2.
    assert run.compactions == [CompactionRecord(1, "compaction-1", 2, "e2", 3, True)]
    assert run.steps[2].window == ["e2", "e4", "e5"]
    assert worker.assembles[2]["options"] == {"lease_key": "sess-1", "request_overhead_tokens": 65,
                                              "previous_summary": "S1"}
    assert worker.assembles[3]["messages"][0] == _result("c0")
    assert violations(run, check_task=False) == []


def test_a_hook_reserves_its_allowance_and_a_grown_request_is_assembled_once_more() -> None:
    hook = GuidanceHook(every=1, short_chars=20, long_chars=20)
    # Step 0: the count with the hook's message fits; step 1: it does not, and after the
    # re-assembly it does.
    worker = ScriptedWorker({1: {"token_count": 900}, 2: {"token_count": 500}},
                            counts=[200, 1000 - 64, 600, 700, 700])
    run = HarnessLoop(worker, SESSION, "sess-1", hook=hook).run()
    overheads = [a["options"]["request_overhead_tokens"] for a in worker.assembles]
    first = REQUEST_OVERHEAD_TOKENS + HOOK_ALLOWANCE_TOKENS
    # Growth over the answer's count: (936 + 65) - 900 = 101, plus the margin.
    assert overheads == [first, first, first + 101 + REASSEMBLY_MARGIN_TOKENS, first, first]
    assert [s.recount for s in run.steps] == [[265], [1001, 665], [765], [765]]
    assert [s.reassembled for s in run.steps] == [False, True, False, False]
    # The hook's message is counted, after the assembled messages, with the assembled prompt.
    assert worker.recounts[0]["messages"][-1] == hook.appended(0)[0]
    assert worker.recounts[0]["system_prompt"] == "Be brief.\nYour session id is sess-1."
    assert "options" not in worker.recounts[0] and run.failures == []


def test_a_recount_still_over_after_the_re_assembly_fails_the_turn() -> None:
    hook = GuidanceHook(every=1, short_chars=20, long_chars=20)
    worker = ScriptedWorker({0: {"token_count": 900}, 1: {"token_count": 900}}, counts=[1000, 1000, 10, 10, 10])
    run = HarnessLoop(worker, SESSION, "sess-1", hook=hook).run()
    assert run.steps[0].failure == ("context_overflow: final model request exceeds the assembled usable budget: "
                                    "1065 tokens > 1000 usable (persists after re-assembly)")
    assert [s.step for s in run.failures] == [0]
    assert violations(run, check_task=False)[1] == "s (sess-1) step 0: recount 1065 > usable after the re-assembly"


def test_worker_errors_fail_the_turn_and_are_never_bypassed() -> None:
    worker = ScriptedWorker({
        0: CallFailed("invocation_failed: handler error: context/overflow: assembled context requires 9 tokens"),
        1: CallFailed("invocation_failed: handler error: context/invalid_request: bad"),
        2: {"token_count": 1001},
        3: {"messages": []},
    })
    run = HarnessLoop(worker, SESSION, "sess-1", hook=None).run()
    assert [s.failure for s in run.steps] == [
        "context_overflow: context::assemble: invocation_failed: handler error: context/overflow: assembled context requires 9 tokens",
        "dependency: context::assemble: invocation_failed: handler error: context/invalid_request: bad",
        "context_overflow: context::assemble returned an over-budget context: 1001 tokens > 1000 usable",
        "context_overflow: context::assemble returned an empty model-facing context",
    ]
    assert len(worker.assembles) == 4  # one call per step: no retry, no raw history


def test_a_re_assembly_that_compacts_again_keeps_the_first_entry_of_the_step() -> None:
    hook = GuidanceHook(every=1, short_chars=20, long_chars=20)
    worker = ScriptedWorker({1: {**_compacted(1, "S1"), "token_count": 900},
                             2: {**_compacted(2, "S2"), "token_count": 500}},
                            counts=[10, 1000, 10, 10, 10])
    run = HarnessLoop(worker, SESSION, "sess-1", hook=hook).run()
    assert run.compactions == [CompactionRecord(1, "compaction-1", 1, "e1", 3, True),
                               CompactionRecord(1, "compaction-1", 2, "e2", 3, False)]
    assert worker.assembles[3]["options"]["previous_summary"] == "S1"
    assert run.steps[2].window == ["e1", "e2", "e4", "e5"]


def test_orphaned_calls_get_an_elided_result_after_their_message() -> None:
    messages = [_user("t"), _reply("a", "c0"), _reply("b", "c1"), _result("c1")]
    assert patch_orphaned_calls(messages) == 1
    assert [m["role"] for m in messages] == ["user", "assistant", "function_result", "assistant", "function_result"]
    assert messages[2]["function_call_id"] == "c0" and messages[2]["content"][0]["text"] == ELIDED
    assert patch_orphaned_calls(messages) == 0


def test_the_checks_name_every_kind_of_violation() -> None:
    run = SessionRun("s", "x")
    run.steps = [Step(0, ["e0"], False), Step(1, ["e0", "e1"], False), Step(2, ["e1"], True)]
    run.steps[0].task_in_context = True
    run.steps[1].task_in_context = False
    run.compactions = [CompactionRecord(0, "compaction-0", 1, "e1", 1, True),
                       CompactionRecord(1, "compaction-1", 3, None, 2, True)]
    found = violations(run, check_task=True)
    assert found == [
        "s (x) step 1: the task statement is not in the context",
        "s (x) step 1: tail_start_index 3 names no message of the 2 sent",
        "s (x) step 1: the window starts at e0, the latest entry's tail is e1",
    ]
    assert digest(found + ["s (x) step 4: turn failed: context_overflow: context::assemble: boom"]) == (
        "s: 1 x the task statement is not in the context (steps 1-1)\n"
        "s: 1 x tail_start_index N names no message of the N sent (steps 1-1)\n"
        "s: 1 x the window starts at N, the latest entry's tail is N (steps 1-1)\n"
        "s: 1 x turn failed: context_overflow (steps 4-4)")


def test_the_hook_appends_short_and_long_guidance_on_every_third_step() -> None:
    hook = GuidanceHook()
    sizes = [sum(len(m["content"][0]["text"]) for m in hook.appended(step)) for step in range(9)]
    assert sizes == [0, 0, 160, 0, 0, 6000, 0, 0, 160]


# ---------------------------------------------------------------------------------- the worker

REAL_TURNS, SINGLE_TASK_TURNS, GENERATED_TURNS = 549, 431, 851
KEY_SESSIONS = ("minisweagent-django-13265", "openhands-ponyc-4588")
KEY_TURNS = 156 + 49


@pytest.fixture(scope="module")
def real() -> list[Session]:
    try:
        return real_sessions()
    except FileNotFoundError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def generated() -> list[Session]:
    return generated_sessions()


@pytest.fixture(scope="module")
def stack(real: list[Session], generated: list[Session],
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with harness_stack(real + generated, tmp_path_factory.mktemp("harness-loop")) as stack:
        yield stack


def _conforms(stack: Stack, name: str, sessions: list[Session], turns: int,
              check_task: bool = False) -> Totals:
    runs = run_configuration(stack, name, sessions)
    totals = Totals()
    found: list[str] = []
    for run, session in zip(runs, sessions):
        totals.add(run, session.single_task)
        found += violations(run, check_task and session.single_task)
    assert totals.turns == turns
    assert found == [], (f"{name}: {totals.failed} of {totals.turns} turns failed, {len(found)} violations\n"
                         f"{digest(found)}\nfirst ones:\n" + "\n".join(found[:10]))
    return totals


@pytest.mark.slow
def test_defaults_over_the_real_sessions(stack: Stack, real: list[Session]) -> None:
    totals = _conforms(stack, "defaults", real, REAL_TURNS)
    # The compaction entries, the recount and the re-assembly are all exercised.
    assert totals.compactions > 0 and totals.recounts > 0 and totals.reassemblies > 0


@pytest.mark.slow
def test_defaults_over_the_generated_sessions(stack: Stack, generated: list[Session]) -> None:
    totals = _conforms(stack, "defaults", generated, GENERATED_TURNS)
    assert totals.compactions > 0 and totals.reassemblies > 0


@pytest.mark.slow
def test_usage_calibration_over_the_real_sessions(stack: Stack, real: list[Session]) -> None:
    """The DeepSeek and OpenHands sessions carry the provider's usage of prompts that held the
    whole history; after a compaction the window holds only the tail."""
    totals = _conforms(stack, "count_calibration", real, REAL_TURNS)
    assert totals.compactions > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["anchor", "anchor+summary_check"])
def test_the_anchor_keeps_the_task_of_single_task_sessions_in_every_call(
    stack: Stack, real: list[Session], name: str
) -> None:
    single = [s for s in real if s.single_task]
    assert [s.name for s in single] == ["minisweagent-django-13265", "minisweagent-marshmallow-1343",
                                        "openhands-ponyc-4588", "openhands-ponyc-4593", "sweagent-testrepo-1c2844"]
    totals = _conforms(stack, name, single, SINGLE_TASK_TURNS, check_task=True)
    assert totals.compactions > 0 and totals.task_kept == totals.task_calls == SINGLE_TASK_TURNS


@pytest.mark.slow
@pytest.mark.parametrize("name", ["summary_reuse", "session_store_state", "lease_store_state", "reduce_to",
                                  "retention", "drop_oldest", "extractive", "compact_ahead", "every_key"])
def test_opt_in_keys_over_compacting_real_sessions(stack: Stack, real: list[Session], name: str) -> None:
    sessions = [s for s in real if s.name in KEY_SESSIONS]
    _conforms(stack, name, sessions, KEY_TURNS, check_task=name == "every_key")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["compact_ahead", "recommended_ahead"])
def test_summaries_computed_ahead_are_kept_in_the_engine_state_and_persisted_like_any_compaction(
    stack: Stack, real: list[Session], name: str
) -> None:
    sessions = [s for s in real if s.name in KEY_SESSIONS]
    totals = _conforms(stack, name, sessions, KEY_TURNS)
    # Both sessions compact, and each has a ready summary of this configuration in the engine
    # state (its lease key is the configuration and the session). The worker process outlives
    # one test: a job the same configuration settled before is not run again.
    group = stack.engine.state.groups.get("context_session", {})
    ready = sorted(key for key in group if key.startswith(f"ahead:{name}/"))
    assert totals.compactions > 0 and ready == sorted(f"ahead:{name}/{s.name}" for s in sessions)
