"""Write the recorded sessions the replay ships with: ``python -m bench.kit.generate [DIR]``.

Two kinds of session, each a JSON document ``{"system_prompt": ..., "messages": [...]}`` of wire
AgentMessages, gzip-compressed (``<name>.json.gz``):

* single-task: one user message, then 150–300 tool rounds (an assistant message with one call,
  sometimes two, and the results answering them), then a closing answer;
* multi-turn: several user messages, each followed by a handful to a few dozen tool rounds and an
  answer.

Everything comes from one ``random.Random(seed)`` per session and a fixed clock, so the files
are byte-for-byte reproducible (gzip is written with a zero modification time).

**Plan sessions** (:data:`PLAN_SESSIONS`, :func:`plan_sessions`; built in memory by the recall
bench, ``python -m bench.kit.generate --plans DIR`` writes them): a single task worked through
tool rounds as above, with a plan tool the agent calls whenever its plan changes, in the
argument shape of a common harness (Claude Code's ``TodoWrite``: ``todos`` of ``content``,
``status``, ``activeForm``; Codex's ``update_plan``: ``explanation`` and ``plan`` of ``step`` and
``status``). The plan starts with every item pending; then, every few rounds, the item in
progress is completed and the next one started, and now and then an item is added. At stated
rounds the user adds a long constraint (several hundred characters) mid-session.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.kit import tool_output as out
from bench.kit.sessions import Session

SESSIONS_DIR = Path(__file__).resolve().parent / "sessions"
MODEL = "agent-model"
PROVIDER = "anthropic"
START_MS = 1_764_460_800_000  # 2025-11-30T00:00:00Z
SYSTEM_PROMPT = (
    "You are a coding agent working in the repository of the inventory service. Use the tools "
    "to read files, search, edit and run the test suite. Keep changes small, run the tests after "
    "each change, and report what you changed when the task is done."
)

Message = dict[str, Any]


@dataclass(frozen=True)
class SessionPlan:
    name: str
    seed: int
    tasks: tuple[tuple[str, int], ...]  # (user request, number of tool rounds)


PLANS = (
    SessionPlan("single-fix-flaky-lease-test", 11, (
        ("The test tests/test_worker.py::test_lease_release is flaky on CI (about 1 run in 20). "
         "Find the cause and fix it without slowing the suite down.", 160),)),
    SessionPlan("single-decimal-pricing", 23, (
        ("Prices are computed with floats in src/inventory/pricing.py and totals drift by a cent "
         "on large orders. Move every price computation to Decimal, keep the public API, and make "
         "the whole suite pass.", 220),)),
    SessionPlan("single-event-outbox", 37, (
        ("Replace the direct event publishing in src/inventory/events.py with a transactional "
         "outbox: write events in the same transaction as the order, publish them from the "
         "worker, and cover retries and duplicates with tests.", 300),)),
    SessionPlan("multi-api-pagination", 51, (
        ("List endpoints return every row. Add cursor pagination to GET /items.", 24),
        ("Now do the same for GET /orders, and share the cursor code.", 18),
        ("The cursor must survive a schema change: encode it as opaque base64 JSON.", 12),
        ("Add a page_size limit of 500 with a clear 400 error above it.", 6),
        ("Update the API docs and the changelog.", 4),
        ("CI fails on Python 3.11 only. Investigate.", 20),
    )),
    SessionPlan("multi-cache-invalidation", 67, (
        ("Stale prices are served after an update. Find out why the cache is not invalidated.", 30),
        ("Invalidate by tenant and sku, not the whole cache.", 26),
        ("Add a metric for cache hit ratio.", 10),
        ("Write a regression test for the original bug.", 8),
    )),
)


class _Recorder:
    """Builds the message list with increasing timestamps and call ids."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.messages: list[Message] = []
        self.clock = START_MS
        self.calls = 0

    def _tick(self, low: int, high: int) -> int:
        self.clock += self.rng.randint(low, high)
        return self.clock

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": [{"type": "text", "text": text}],
                              "timestamp": self._tick(5_000, 90_000)})

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": text}],
                              "stop_reason": "end", "model": MODEL, "provider": PROVIDER,
                              "timestamp": self._tick(2_000, 20_000)})

    def tool_round(self) -> None:
        rng = self.rng
        calls = [self._call() for _ in range(2 if rng.random() < 0.15 else 1)]
        content: list[dict[str, Any]] = []
        if rng.random() < 0.4:
            content.append({"type": "thinking", "text": _thought(rng)})
        if rng.random() < 0.3:
            content.append({"type": "text", "text": _remark(rng)})
        content += [call for call, _result, _error in calls]
        self.messages.append({"role": "assistant", "content": content, "stop_reason": "function_call",
                              "model": MODEL, "provider": PROVIDER,
                              "timestamp": self._tick(1_500, 25_000)})
        for call, result, is_error in calls:
            self.messages.append({
                "role": "function_result", "function_call_id": call["id"],
                "function_id": call["function_id"],
                "content": [{"type": "text", "text": result}],
                "details": {"bytes": len(result.encode("utf-8"))}, "is_error": is_error,
                "timestamp": self._tick(50, 40_000),
            })

    def _call(self) -> tuple[dict[str, Any], str, bool]:
        rng = self.rng
        self.calls += 1
        call_id = f"toolu_{self.calls:04d}_{rng.getrandbits(32):08x}"
        roll = rng.random()
        is_error = False
        if roll < 0.30:
            path = out.module_path(rng) if rng.random() < 0.7 else out.test_path(rng)
            fid, args, text = "fs::read_file", {"path": path}, out.file_read(rng, path)
        elif roll < 0.50:
            pattern = out.identifier(rng)
            fid, args, text = "search::grep", {"path": "src/", "pattern": pattern}, out.grep(rng, pattern)
        elif roll < 0.70:
            target = out.test_path(rng) if rng.random() < 0.6 else "tests/"
            text, status = out.test_log(rng, target, failing=rng.random() < 0.5)
            fid, args = "shell::run", {"command": f"python -m pytest -q {target}"}
            is_error = status != 0
        elif roll < 0.82:
            path = out.module_path(rng)
            fid, args, text = "fs::edit_file", {"path": path, "old": out.identifier(rng),
                                                "new": out.identifier(rng)}, out.edit_ack(rng, path)
        elif roll < 0.92:
            path = out.module_path(rng)
            fid, args, text = "shell::run", {"command": f"git diff -- {path}"}, out.diff(rng, path)
        elif roll < 0.97:
            directory = rng.choice(("src/inventory", "tests", "."))
            fid, args, text = "shell::run", {"command": f"ls -la {directory}"}, out.listing(rng, directory)
        else:
            fid, args, text = "shell::run", {"command": "python -m mypy src"}, out.build_log(rng)
            is_error = True
        call = {"type": "function_call", "id": call_id, "function_id": fid, "arguments": args}
        return call, text, is_error


def _thought(rng: random.Random) -> str:
    return rng.choice((
        "The failure points at the lease release path; check who calls release and when.",
        "Before editing, confirm the call sites with a grep so the change stays small.",
        "The last run still fails in one place; read that test before changing code again.",
        "This diff looks right; run the narrower test file first, then the whole suite.",
        "The helper is used by the worker too, so its signature must not change.",
    ))


def _remark(rng: random.Random) -> str:
    return rng.choice((
        "Let me look at the module first.",
        "Running the tests again.",
        "Searching for the other call sites.",
        "Applying the change.",
        "Checking the diff before running the suite.",
    ))


@dataclass(frozen=True)
class PlanSessionSpec:
    name: str
    seed: int
    task: str
    tool: str  # "TodoWrite" or "update_plan"
    items: tuple[str, ...]  # the initial plan
    added: tuple[tuple[int, str], ...]  # (round, item added to the plan then)
    constraints: tuple[tuple[int, str], ...]  # (round, the user's constraint then)
    rounds: int
    step_every: int  # rounds between two plan steps (one completed, the next started)


_CONSTRAINT_DB = (
    "One more constraint before you go on: the pricing tables are read by the nightly export job "
    "of the finance team, which parses them positionally, so never reorder, rename or drop a "
    "column of the prices or price_history tables, and never change a column type in place. If "
    "a column really must change, add a new nullable column next to the old one, backfill it in "
    "a separate migration that can be re-run safely, and leave the old column in place until the "
    "export job has been updated; say so in the changelog under a heading Deprecated. Migrations "
    "must be reversible, each with a tested downgrade, and none may lock a table for more than a "
    "second on a table of ten million rows.")
_CONSTRAINT_API = (
    "Also, please keep these rules for the rest of the work: the public HTTP API is used by three "
    "mobile app versions that cannot be updated quickly, so every response field that exists "
    "today must keep its name, its type and its position in the JSON; new fields may only be "
    "added at the end of an object. Amounts stay strings with exactly two decimals, as in "
    "\"12.30\", never numbers. Error responses keep the shape {\"error\": {\"code\", "
    "\"message\"}} with the existing codes, and no endpoint may become slower than 50 ms at the "
    "95th percentile in the benchmark of tests/perf/test_api_latency.py.")
_CONSTRAINT_TESTS = (
    "A request about the tests from now on: do not add sleeps, real network calls or wall-clock "
    "timing to any test; use the fake clock of tests/support/clock.py and the in-memory broker "
    "of tests/support/broker.py instead. Every new test must pass when run alone and in a random "
    "order with pytest -p randomly, and the whole suite must still finish in under ninety "
    "seconds on the CI runner, so mark anything slower with the slow marker and keep it out of "
    "the default selection. Keep test names descriptive sentences, as the rest of the suite does.")

PLAN_SESSIONS = (
    PlanSessionSpec(
        "plan-todowrite-decimal-pricing", 101,
        "Prices are computed with floats in src/inventory/pricing.py and totals drift by a cent on "
        "large orders. Move every price computation to Decimal, keep the public API, and make the "
        "whole suite pass. Keep a todo list as you go.",
        "TodoWrite",
        ("Find every float price computation", "Add a Decimal money type", "Port pricing.py to Decimal",
         "Port the order totals", "Update the serializers", "Run the whole suite"),
        ((70, "Add a regression test for the cent drift"), (150, "Update the changelog")),
        ((45, _CONSTRAINT_DB), (120, _CONSTRAINT_API)),
        220, 18),
    PlanSessionSpec(
        "plan-update-plan-event-outbox", 103,
        "Replace the direct event publishing in src/inventory/events.py with a transactional "
        "outbox: write events in the same transaction as the order, publish them from the worker, "
        "and cover retries and duplicates with tests. Keep your plan up to date.",
        "update_plan",
        ("Read the current publishing path", "Add the outbox table", "Write events in the order transaction",
         "Publish from the worker", "Cover retries and duplicates with tests"),
        ((60, "Add a metric for the outbox lag"), (140, "Document the outbox in the README")),
        ((35, _CONSTRAINT_TESTS), (110, _CONSTRAINT_DB)),
        240, 20),
)

PENDING, IN_PROGRESS, COMPLETED = "pending", "in_progress", "completed"


def _active_form(item: str) -> str:
    verb, _, rest = item.partition(" ")
    stem = verb[:-1] if verb.endswith("e") and not verb.endswith("ee") else verb
    return f"{stem}ing {rest}".strip()


def plan_arguments(tool: str, items: list[tuple[str, str]], explanation: str) -> dict[str, Any]:
    """The plan tool's arguments for ``items`` ((text, status) in order), in the tool's shape."""
    if tool == "TodoWrite":
        return {"todos": [{"content": text, "status": status, "activeForm": _active_form(text)}
                          for text, status in items]}
    return {"explanation": explanation, "plan": [{"step": text, "status": status} for text, status in items]}


class _PlanRecorder(_Recorder):
    def plan_call(self, tool: str, items: list[tuple[str, str]], explanation: str) -> None:
        self.calls += 1
        call_id = f"toolu_{self.calls:04d}_{self.rng.getrandbits(32):08x}"
        call = {"type": "function_call", "id": call_id, "function_id": tool,
                "arguments": plan_arguments(tool, items, explanation)}
        self.messages.append({"role": "assistant", "content": [call], "stop_reason": "function_call",
                              "model": MODEL, "provider": PROVIDER, "timestamp": self._tick(1_500, 9_000)})
        result = ("Todos have been modified successfully. Continue with the current task."
                  if tool == "TodoWrite" else "Plan updated")
        self.messages.append({"role": "function_result", "function_call_id": call_id, "function_id": tool,
                              "content": [{"type": "text", "text": result}],
                              "details": {"bytes": len(result)}, "is_error": False,
                              "timestamp": self._tick(20, 200)})


def build_plan_session(spec: PlanSessionSpec) -> dict[str, Any]:
    """One plan session (see the module's text); the same spec gives the same messages."""
    recorder = _PlanRecorder(random.Random(spec.seed))
    recorder.user(spec.task)
    items = [[text, PENDING] for text in spec.items]
    items[0][1] = IN_PROGRESS
    recorder.plan_call(spec.tool, [(t, s) for t, s in items], "Plan made; starting with the first step.")
    added = dict(spec.added)
    constraints = dict(spec.constraints)
    for round_index in range(1, spec.rounds + 1):
        if round_index in constraints:
            recorder.user(constraints[round_index])
        recorder.tool_round()
        changed = ""
        if round_index in added:
            items.append([added[round_index], PENDING])
            changed = f"Added: {added[round_index]}."
        if round_index % spec.step_every == 0:
            current = next((i for i, (_t, s) in enumerate(items) if s == IN_PROGRESS), None)
            if current is not None:
                items[current][1] = COMPLETED
                changed += f" Done: {items[current][0]}."
            following = next((i for i, (_t, s) in enumerate(items) if s == PENDING), None)
            if following is not None:
                items[following][1] = IN_PROGRESS
                changed += f" Next: {items[following][0]}."
        if changed:
            recorder.plan_call(spec.tool, [(t, s) for t, s in items], changed.strip())
    recorder.answer("Done: the plan is complete and the full test suite passes.")
    return {"system_prompt": SYSTEM_PROMPT, "messages": recorder.messages}


def plan_sessions() -> list[Session]:
    """The plan sessions of :data:`PLAN_SESSIONS`, built in memory."""
    return [Session(spec.name, SYSTEM_PROMPT, build_plan_session(spec)["messages"]) for spec in PLAN_SESSIONS]


def build_session(plan: SessionPlan) -> dict[str, Any]:
    recorder = _Recorder(random.Random(plan.seed))
    for request, rounds in plan.tasks:
        recorder.user(request)
        for _ in range(rounds):
            recorder.tool_round()
        recorder.answer(f"Done: {request.split('.')[0].lower()}. The full test suite passes.")
    return {"system_prompt": SYSTEM_PROMPT, "messages": recorder.messages}


def session_bytes(plan: SessionPlan) -> bytes:
    document = json.dumps(build_session(plan), ensure_ascii=False, separators=(",", ":"))
    return gzip.compress(document.encode("utf-8"), compresslevel=9, mtime=0)


def write_all(directory: Path = SESSIONS_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for plan in PLANS:
        path = directory / f"{plan.name}.json.gz"
        path.write_bytes(session_bytes(plan))
        written.append(path)
    return written


def write_plan_sessions(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in PLAN_SESSIONS:
        path = directory / f"{spec.name}.json.gz"
        document = json.dumps(build_plan_session(spec), ensure_ascii=False, separators=(",", ":"))
        path.write_bytes(gzip.compress(document.encode("utf-8"), compresslevel=9, mtime=0))
        written.append(path)
    return written


if __name__ == "__main__":
    if sys.argv[1:2] == ["--plans"]:
        written = write_plan_sessions(Path(sys.argv[2]))
    else:
        written = write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else SESSIONS_DIR)
    for path in written:
        print(f"{path}  {path.stat().st_size} bytes")
