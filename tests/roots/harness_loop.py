"""The agent harness's turn loop against the worker as a process, through the test engine.

The loop itself (what the harness sends, when it compacts, recounts and re-assembles) is
``bench.kit.loop.HarnessLoop``; this module is its stack: the test engine with a fake router (a
32k window, 4k output, the replay's deterministic summariser), the worker as a process and the
official SDK as the harness's client, the configurations it runs under and the checks.

Run as a script (``PYTHONPATH=src:tests:. python tests/roots/harness_loop.py [--real] [name ...]``) it
prints, per configuration of :data:`CONFIGURATIONS` (all, or those named), the turns,
compactions, recounts, re-assemblies, failed turns and, over the single-task sessions, the calls
whose context holds the task statement, over the recorded real sessions (and, without
``--real``, the generated ones).
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.kit.loop import CallFailed, GuidanceHook, HarnessLoop, SessionRun
from bench.kit.sessions import Session, generated_sessions, real_sessions

CONTEXT_WINDOW = 32_000
MAX_OUTPUT_TOKENS = 4_000

# The configurations the loop runs under: the defaults, and every opt-in key that keeps state
# between calls or rewrites the history the caller sent. The two fallbacks of a failing summariser
# (`drop_oldest`, `extractive`) run with a summariser that always fails, where they act.
RETENTION = {
    "verbatim_turns": 1,
    "tools": {"default": {"result": {"mode": "over", "over": 1000, "to": 300, "keep": "both"}},
              "errors": {"mode": "keep"}},
    "reasoning": {"keep_turns": 1},
}


@dataclass(frozen=True)
class Configuration:
    name: str
    config: dict[str, Any]
    summariser: bool = True  # False: every `router::chat` fails


CONFIGURATIONS = {c.name: c for c in (
    Configuration("defaults", {}),
    Configuration("count_calibration", {"count_calibration": "usage"}),
    Configuration("summary_reuse", {"summary_reuse": True}),
    Configuration("session_store_state", {"summary_reuse": True, "session_store": "state"}),
    Configuration("lease_store_state", {"lease_store": "state"}),
    Configuration("anchor", {"anchor_messages": 1}),
    Configuration("anchor+summary_check", {"anchor_messages": 1, "summary_check": "append"}),
    Configuration("reduce_to", {"reduce_to": 0.6}),
    Configuration("retention", {"retention": RETENTION}),
    Configuration("drop_oldest", {"overflow_fallback": "drop_oldest"}, summariser=False),
    Configuration("extractive", {"summarizer_fallback": "extractive"}, summariser=False),
    Configuration("compact_ahead", {"compact_ahead_at": 0.7, "summarizer_fallback": "extractive",
                                    "lease_store": "state", "session_store": "state"}),
    # The profile the latency instrument measures, with its summaries computed ahead of time.
    Configuration("recommended_ahead", {"profile": "recommended", "compact_ahead_at": 0.8,
                                        "lease_store": "state", "session_store": "state"}),
    Configuration("every_key", {
        "count_calibration": "usage", "summary_reuse": True, "session_store": "state",
        "lease_store": "state", "anchor_messages": 1, "summary_check": "append",
        "overflow_fallback": "drop_oldest", "summarizer_fallback": "extractive", "reduce_to": 0.6,
        "retention": RETENTION,
    }),
)}


# ---------------------------------------------------------------------------------- checks


def violations(run: SessionRun, check_task: bool) -> list[str]:
    """Everything the loop must never see, one line each (empty: the run conforms)."""
    found: list[str] = []
    where = f"{run.session} ({run.session_id})"
    for step in run.steps:
        if step.failure is not None:
            found.append(f"{where} step {step.step}: turn failed: {step.failure[:300]}")
        for assembly in step.assemblies:
            if assembly.token_count > assembly.usable:
                found.append(f"{where} step {step.step}: token_count {assembly.token_count} > usable {assembly.usable}")
        if step.reassembled and step.recount and step.recount[-1] > step.assemblies[-1].usable:
            found.append(f"{where} step {step.step}: recount {step.recount[-1]} > usable after the re-assembly")
        if check_task and step.failure is None and step.task_in_context is False:
            found.append(f"{where} step {step.step}: the task statement is not in the context")
    for compaction in run.compactions:
        if compaction.tail_start_entry_id is None:
            found.append(f"{where} step {compaction.step}: tail_start_index {compaction.tail_start_index} "
                         f"names no message of the {compaction.candidate} sent")
    entries = [c for c in run.compactions if c.written]
    for step in run.steps:
        latest = next((c for c in reversed(entries) if c.step < step.step), None)
        if latest is None or latest.tail_start_entry_id is None:
            continue
        first = step.window[0] if step.window else None
        if first != latest.tail_start_entry_id:
            found.append(f"{where} step {step.step}: the window starts at {first}, the latest entry's tail "
                         f"is {latest.tail_start_entry_id}")
    return found


_LINE = re.compile(r"^(\S+) \(.*?\) step (\d+): (.*)$", re.DOTALL)


def digest(found: list[str]) -> str:
    """Violation lines grouped by session and kind: ``session: count x kind (steps first-last)``."""
    groups: dict[tuple[str, str], list[int]] = {}
    for line in found:
        match = _LINE.match(line)
        if match is None:
            groups.setdefault((line, ""), []).append(-1)
            continue
        session, step, text = match.groups()
        if text.startswith("turn failed: "):
            kind = "turn failed: " + text.removeprefix("turn failed: ").split(":", 1)[0]
        else:
            kind = re.sub(r"\be?\d+\b", "N", text)
        groups.setdefault((session, kind), []).append(int(step))
    return "\n".join(f"{session}: {len(steps)} x {kind} (steps {min(steps)}-{max(steps)})"
                     for (session, kind), steps in groups.items())


@dataclass
class Totals:
    sessions: int = 0
    turns: int = 0
    compactions: int = 0
    reassemblies: int = 0
    recounts: int = 0
    failed: int = 0
    task_calls: int = 0
    task_kept: int = 0

    def add(self, run: SessionRun, single_task: bool) -> None:
        self.sessions += 1
        self.turns += len(run.steps)
        self.compactions += sum(c.written for c in run.compactions)
        self.reassemblies += sum(s.reassembled for s in run.steps)
        self.recounts += sum(len(s.recount) for s in run.steps)
        self.failed += len(run.failures)
        if single_task:
            calls = [s for s in run.steps if s.task_in_context is not None]
            self.task_calls += len(calls)
            self.task_kept += sum(bool(s.task_in_context) for s in calls)


# ---------------------------------------------------------------------------------- the stack


def summariser_script() -> Callable[[dict[str, Any]], Any]:
    """``router::chat`` answered by the replay's deterministic summariser."""
    from bench.kit.summariser import summarize
    from testengine import stream_for

    async def chat(data: dict[str, Any]) -> tuple[list[str | bytes], Any]:
        user_prompt = data["messages"][0]["content"][0]["text"]
        text = summarize(data["system_prompt"], user_prompt, {"id": data.get("model")})
        model = str(data.get("model"))
        return list(stream_for(text, model)), {"ok": True, "provider": "fake", "model": model, "stop_reason": "end"}

    return chat


async def failing_chat(data: dict[str, Any]) -> tuple[list[str | bytes], Any]:
    """``router::chat`` of a router whose provider fails: an error frame ends the stream and the
    answer is ``ok: false``."""
    from testengine import assistant

    model = str(data.get("model"))
    error = {"code": "provider_error", "message": "the provider is unavailable"}
    frame = json.dumps({"type": "error", "error": assistant("the provider is unavailable", model)})
    return [frame], {"ok": False, "provider": "fake", "model": model, "error": error}


def budgets(sessions: list[Session]) -> dict[str, Any]:
    """What the router answers for each session's model: a 32k window, 4k of output."""
    served: dict[str, Any] = {}
    for session in sessions:
        model_id, provider = session.model
        served[model_id] = {
            "model": {"id": model_id, "provider": provider or "", "context_window": CONTEXT_WINDOW,
                      "max_output_tokens": MAX_OUTPUT_TOKENS},
            "effective_max_output_tokens": MAX_OUTPUT_TOKENS,
        }
    return served


@dataclass
class Stack:
    engine: Any
    worker: Any
    sdk: Any

    def configure(self, config: dict[str, Any]) -> None:
        """Store ``config`` and apply it; when the reload call answers, it is in force."""
        self.engine.set_configuration("context-manager", config)
        assert self.engine.call("context::on-config-change", {"id": "context-manager"}, timeout=30) == {"ok": True}

    def trigger(self, function_id: str, payload: dict[str, Any]) -> Any:
        from iii import InvocationError

        try:
            return self.sdk.trigger({"function_id": function_id, "payload": payload, "timeout_ms": 120_000})
        except InvocationError as exc:
            raise CallFailed(str(exc)) from None


def worker_path() -> str:
    """``PYTHONPATH`` for the worker process: the source root of the package this process
    imported first, so the worker runs the same code whatever its working directory."""
    import os

    import context_manager

    root = str(Path(context_manager.__file__).resolve().parents[1])
    inherited = os.environ.get("PYTHONPATH")
    return f"{root}{os.pathsep}{inherited}" if inherited else root


@contextmanager
def harness_stack(sessions: list[Session], workdir: Path) -> Iterator[Stack]:
    """The test engine with a fake router (limits and summariser), the worker as a process, and
    the official SDK as the harness's client."""
    from iii import InitOptions, register_worker

    from testengine import FakeRouter, TestEngine, WorkerProcess

    router = FakeRouter(budgets=budgets(sessions), chat_script=summariser_script(), count_tokens=False)
    engine = TestEngine(router=router).start()
    worker = WorkerProcess(engine.url, env={"III_COMPOSE_DIR": str(workdir), "LOG_LEVEL": "warn",
                                            "PYTHONPATH": worker_path()}, cwd=workdir)
    sdk = None
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                engine.wait_for_functions({"context::assemble", "context::count-tokens", "context::on-config-change"},
                                          timeout=0.5)
                break
            except TimeoutError:
                if worker.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the worker did not start: {worker.stderr}") from None
        sdk = register_worker(engine.url, InitOptions(worker_name="harness", otel={"enabled": False},
                                                      enable_metrics_reporting=False, invocation_timeout_ms=120_000))
        yield Stack(engine, worker, sdk)
    finally:
        if sdk is not None:
            sdk.shutdown()
        worker.kill()
        engine.stop()


def run_configuration(stack: Stack, name: str, sessions: list[Session],
                      hook: GuidanceHook | None = GuidanceHook()) -> list[SessionRun]:
    """Every session through the loop under ``CONFIGURATIONS[name]``; session ids are
    ``<configuration>/<session>``, so no state is shared between configurations."""
    configuration = CONFIGURATIONS[name]
    stack.configure(configuration.config)
    stack.engine.router.chat_script = summariser_script() if configuration.summariser else failing_chat
    return [HarnessLoop(stack.trigger, session, f"{name}/{session.name}", hook).run() for session in sessions]


def main() -> None:
    import tempfile

    args = sys.argv[1:]
    sets = ("real",) if "--real" in args else ("real", "generated")
    names = [a for a in args if a != "--real"] or list(CONFIGURATIONS)
    real, generated = real_sessions(), generated_sessions()
    print(f"{'configuration':<22} {'set':<9} {'turns':>5} {'compact':>7} {'recount':>7} {'reassm':>6} "
          f"{'failed':>6} {'task kept':>10} {'secs':>5}")
    with tempfile.TemporaryDirectory() as workdir, harness_stack(real + generated, Path(workdir)) as stack:
        for name in names:
            for label, sessions in (("real", real), ("generated", generated)):
                if label not in sets:
                    continue
                started = time.monotonic()
                runs = run_configuration(stack, name, sessions)
                totals = Totals()
                for run, session in zip(runs, sessions):
                    totals.add(run, session.single_task)
                kept = f"{totals.task_kept}/{totals.task_calls}"
                print(f"{name:<22} {label:<9} {totals.turns:>5} {totals.compactions:>7} {totals.recounts:>7} "
                      f"{totals.reassemblies:>6} {totals.failed:>6} {kept:>10} {time.monotonic() - started:>5.1f}",
                      flush=True)
                for run, session in zip(runs, sessions):
                    check_task = session.single_task and bool(CONFIGURATIONS[name].config.get("anchor_messages"))
                    for line in violations(run, check_task)[:3]:
                        print("   ", line, flush=True)


if __name__ == "__main__":
    main()
