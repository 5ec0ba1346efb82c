"""Write the recorded sessions the replay ships with: ``python -m bench.kit.generate [DIR]``.

Two kinds of session, each a JSON document ``{"system_prompt": ..., "messages": [...]}`` of wire
AgentMessages, gzip-compressed (``<name>.json.gz``):

* single-task: one user message, then 150–300 tool rounds (an assistant message with one call,
  sometimes two, and the results answering them), then a closing answer;
* multi-turn: several user messages, each followed by a handful to a few dozen tool rounds and an
  answer.

Everything comes from one ``random.Random(seed)`` per session and a fixed clock, so the files
are byte-for-byte reproducible (gzip is written with a zero modification time).
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


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else SESSIONS_DIR
    for path in write_all(target):
        print(f"{path}  {path.stat().st_size} bytes")
