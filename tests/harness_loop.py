"""The iii agent harness's turn loop, as a caller of ``context::assemble`` and ``context::count-tokens``.

The agent harness (the worker's main caller in an iii deployment) keeps each session as a log of
entries: messages, and ``custom`` entries such as its compaction records. :class:`HarnessLoop`
replays a recorded session through that loop, one model step for each recorded assistant message:

* it loads the log, takes the latest ``custom`` entry of type ``"compaction"`` and builds the
  candidate window: the model-facing messages (``custom`` ones are never sent) from that entry's
  ``tail_start_entry_id`` onward, the whole log when there is no entry;
* it calls ``context::assemble`` with ``{messages, model: {id, provider}, options: {lease_key:
  <session id>, request_overhead_tokens, previous_summary?}, tools, system_prompt}``: no inline
  limits, so the worker resolves the model through the router;
* an error whose text contains ``context/overflow:`` fails the turn (not retried); any other error
  is a dependency failure; there is never a fallback to the raw history. An answer with no
  messages, or whose ``token_count`` exceeds ``usable``, fails the turn too;
* when ``applied.compacted`` it appends a compaction entry (``summary``, ``tail_start_entry_id`` =
  the id of the candidate message at ``applied.tail_start_index``, ``tokens_before``,
  ``summarized_head_tokens``, ``initial_token_count``, ...) under an id per step, so a second
  write in the same step (after a re-assembly) keeps the first;
* pre-generate hooks then run on the assembled context. While hooks are bound the loop reserves
  :data:`HOOK_ALLOWANCE_TOKENS` on top of the request overhead from the start. Hooks may append
  messages; orphaned function calls (a call whose result is not in the list) are patched with an
  "elided" result. When either changed the request it is counted again with
  ``context::count-tokens`` (messages, the assembled system prompt, tools) plus the base request
  overhead; over ``usable``, the loop assembles once more with the growth over the assembled
  ``token_count`` plus :data:`REASSEMBLY_MARGIN_TOKENS` added to the overhead, and fails the turn
  when the second count is still over;
* the recorded assistant message (with the provider ``usage`` it carries) is then appended, as the
  generated reply, followed by the recorded results and user messages.

The base request overhead is the harness's own estimate for a request without a response format
or provider options: 64 tokens of provider framing plus the serialised empty option object
(``{}``, 2 characters, rounded up to 1 token) = 65. The system prompt is the session's, with the
harness's ``Your session id is <id>.`` line appended. Messages that arrive while a step generates
(steering) never occur in a replay, since every recorded user message starts a new turn, so the
harness's reordering of such messages has nothing to do here and is left out.

The hook this module provides (:class:`GuidanceHook`) is deterministic: it appends a guidance
user message on every third step, alternately short and long (longer than the allowance, so that
near a full window the recount is over and the loop re-assembles).

Run as a script (``PYTHONPATH=src:tests:. python tests/harness_loop.py [--real] [name ...]``) it
prints, per configuration of :data:`CONFIGURATIONS` (all, or those named), the turns,
compactions, recounts, re-assemblies, failed turns and, over the single-task sessions, the calls
whose context holds the task statement, over the recorded real sessions (and, without
``--real``, the generated ones).
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
REAL_SESSIONS = (REPO / ".." / "shared" / "realdata").resolve()
GENERATED_SESSIONS = REPO / "bench" / "kit" / "sessions"

CONTEXT_WINDOW = 32_000
MAX_OUTPUT_TOKENS = 4_000
PROVIDER_FRAMING_ALLOWANCE_TOKENS = 64
REQUEST_OVERHEAD_TOKENS = PROVIDER_FRAMING_ALLOWANCE_TOKENS + (len("{}") + 3) // 4
HOOK_ALLOWANCE_TOKENS = 256
REASSEMBLY_MARGIN_TOKENS = 256
OVERFLOW_MARK = "context/overflow:"
ELIDED = ("result elided from the assembled context (compaction); the call completed in an earlier "
          "turn — consult the transcript if its output matters")

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
    Configuration("every_key", {
        "count_calibration": "usage", "summary_reuse": True, "session_store": "state",
        "lease_store": "state", "anchor_messages": 1, "summary_check": "append",
        "overflow_fallback": "drop_oldest", "summarizer_fallback": "extractive", "reduce_to": 0.6,
        "retention": RETENTION,
    }),
)}


# ---------------------------------------------------------------------------------- sessions


@dataclass(frozen=True)
class RecordedSession:
    name: str
    system_prompt: str | None
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]

    @property
    def model(self) -> tuple[str, str | None]:
        """The model and provider of the recorded replies (the turn's model options)."""
        for message in self.messages:
            if message["role"] == "assistant":
                return message["model"], message.get("provider") or None
        raise ValueError(f"{self.name}: no assistant message")

    @property
    def single_task(self) -> bool:
        """One task statement: the recording holds exactly one user message."""
        return sum(m["role"] == "user" for m in self.messages) == 1

    @property
    def task(self) -> list[str]:
        """The texts of the first user message."""
        for message in self.messages:
            if message["role"] == "user":
                return [b["text"] for b in message["content"] if b["type"] == "text" and b["text"]]
        return []

    @property
    def steps(self) -> int:
        return sum(m["role"] == "assistant" for m in self.messages)


def load_session(path: Path) -> RecordedSession:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    document = json.loads(raw)
    name = path.name.removesuffix(".gz").removesuffix(".json")
    return RecordedSession(name, document.get("system_prompt"), document.get("tools") or [],
                           document["messages"])


def real_sessions() -> list[RecordedSession]:
    """The recorded real sessions beside the repository (``../shared/realdata``)."""
    paths = sorted(REAL_SESSIONS.glob("*.json"))
    if not paths:
        raise FileNotFoundError(
            f"the recorded real sessions are missing: no *.json in {REAL_SESSIONS} "
            "(expected beside the repository as ../shared/realdata)")
    return [load_session(path) for path in paths]


def generated_sessions() -> list[RecordedSession]:
    paths = sorted(GENERATED_SESSIONS.glob("*.json.gz"))
    if not paths:
        raise FileNotFoundError(f"no generated sessions in {GENERATED_SESSIONS}")
    return [load_session(path) for path in paths]


# ---------------------------------------------------------------------------------- the hook


@dataclass(frozen=True)
class GuidanceHook:
    """A pre-generate hook that appends a guidance message on every ``every``-th step: short on
    one, ``long_chars`` long on the next."""

    every: int = 3
    short_chars: int = 160
    long_chars: int = 6_000

    def appended(self, step: int) -> list[dict[str, Any]]:
        if step % self.every != self.every - 1:
            return []
        size = self.long_chars if (step // self.every) % 2 else self.short_chars
        line = f"[guidance step {step}] Keep the change minimal, run the tests, report what failed. "
        text = (line * (size // len(line) + 1))[:size]
        return [{"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1_767_225_600_000 + step}]


# ---------------------------------------------------------------------------------- the loop


class CallFailed(Exception):
    """A ``context::*`` call the worker answered with an error (its text as the caller sees it)."""


Trigger = Callable[[str, dict[str, Any]], Any]


@dataclass
class Entry:
    entry_id: str
    message: dict[str, Any] | None = None
    custom: dict[str, Any] | None = None  # {"custom_type", "data"}


@dataclass
class Assembly:
    overhead: int
    token_count: int
    usable: int
    compacted: bool
    tail_start_index: int | None
    message_count: int


@dataclass
class Step:
    step: int
    window: list[str]  # the entry ids sent, in order
    previous_summary: bool
    assemblies: list[Assembly] = field(default_factory=list)
    recount: list[int] = field(default_factory=list)  # count-tokens + base overhead, per count
    patched: int = 0
    task_in_context: bool | None = None
    failure: str | None = None

    @property
    def reassembled(self) -> bool:
        return len(self.assemblies) > 1


@dataclass
class CompactionRecord:
    step: int
    entry_id: str
    tail_start_index: int | None
    tail_start_entry_id: str | None
    candidate: int  # messages in the window the index points into
    written: bool  # False: the step's entry already existed (a re-assembly), the first one kept


@dataclass
class SessionRun:
    session: str
    session_id: str
    steps: list[Step] = field(default_factory=list)
    compactions: list[CompactionRecord] = field(default_factory=list)

    @property
    def failures(self) -> list[Step]:
        return [s for s in self.steps if s.failure is not None]


class HarnessLoop:
    """One session's turn loop over ``trigger(function_id, payload)``, which returns the result
    or raises :class:`CallFailed` with the error's text."""

    def __init__(self, trigger: Trigger, session: RecordedSession, session_id: str,
                 hook: GuidanceHook | None = GuidanceHook()) -> None:
        self.trigger = trigger
        self.session = session
        self.session_id = session_id
        self.hook = hook
        self.model_id, self.provider = session.model
        aid = f"Your session id is {session_id}."
        prompt = session.system_prompt
        self.system_prompt = f"{prompt}\n{aid}" if prompt else aid
        self.log: list[Entry] = []

    def run(self) -> SessionRun:
        result = SessionRun(self.session.name, self.session_id)
        step = 0
        for index, message in enumerate(self.session.messages):
            if message["role"] == "assistant" and any(e.message and e.message["role"] != "custom" for e in self.log):
                result.steps.append(self.step(step, result))
                step += 1
            self.log.append(Entry(f"e{index}", message=message))
        return result

    # ------------------------------------------------------------------ one step

    def step(self, step: int, run: SessionRun) -> Step:
        entries = list(self.log)
        previous_summary, candidate = self._window(entries)
        record = Step(step, [entry_id for entry_id, _ in candidate], previous_summary is not None)
        appended = self.hook.appended(step) if self.hook is not None else []
        extra = HOOK_ALLOWANCE_TOKENS if self.hook is not None else 0
        while True:
            try:
                answer = self._assemble(candidate, previous_summary, REQUEST_OVERHEAD_TOKENS + extra)
            except CallFailed as exc:
                kind = "context_overflow" if OVERFLOW_MARK in str(exc) else "dependency"
                record.failure = f"{kind}: context::assemble: {exc}"
                return record
            applied = answer["applied"]
            record.assemblies.append(Assembly(
                REQUEST_OVERHEAD_TOKENS + extra, answer["token_count"], answer["usable"],
                bool(applied.get("compacted")), applied.get("tail_start_index"), len(answer["messages"])))
            if not answer["messages"]:
                record.failure = "context_overflow: context::assemble returned an empty model-facing context"
                return record
            if answer["token_count"] > answer["usable"]:
                record.failure = (f"context_overflow: context::assemble returned an over-budget context: "
                                  f"{answer['token_count']} tokens > {answer['usable']} usable")
                return record
            if applied.get("compacted") and applied.get("summary") is not None:
                self._record_compaction(step, candidate, answer, run)
            messages = list(answer["messages"]) + appended
            patched = patch_orphaned_calls(messages)
            record.patched = patched
            record.task_in_context = self._task_in(answer["system_prompt"], messages)
            if not appended and not patched:  # the request is the answer: its count stands
                final = answer["token_count"]
            else:
                try:
                    counted = self.trigger("context::count-tokens", self._count_payload(messages, answer["system_prompt"]))
                except CallFailed as exc:
                    record.failure = f"dependency: context::count-tokens: {exc}"
                    return record
                final = counted["tokens"] + REQUEST_OVERHEAD_TOKENS
                record.recount.append(final)
            if final <= answer["usable"]:
                return record
            if record.reassembled:
                record.failure = (f"context_overflow: final model request exceeds the assembled usable budget: "
                                  f"{final} tokens > {answer['usable']} usable (persists after re-assembly)")
                return record
            extra += max(0, final - answer["token_count"]) + REASSEMBLY_MARGIN_TOKENS

    def _window(self, entries: list[Entry]) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
        """The latest compaction entry's summary, and the model-facing messages from its tail."""
        summary: str | None = None
        tail: str | None = None
        for entry in entries:
            if entry.custom is not None and entry.custom["custom_type"] == "compaction":
                data = entry.custom["data"]
                summary = data.get("summary") if isinstance(data.get("summary"), str) else None
                tail = data.get("tail_start_entry_id") if isinstance(data.get("tail_start_entry_id"), str) else None
        started = tail is None
        candidate: list[tuple[str, dict[str, Any]]] = []
        for entry in entries:
            if tail is not None and entry.entry_id == tail:
                started = True
            if started and entry.message is not None and entry.message["role"] != "custom":
                candidate.append((entry.entry_id, entry.message))
        return summary, candidate

    def _assemble(self, candidate: list[tuple[str, dict[str, Any]]], previous_summary: str | None,
                  overhead: int) -> Any:
        model: dict[str, Any] = {"id": self.model_id}
        if self.provider is not None:
            model["provider"] = self.provider
        options: dict[str, Any] = {"lease_key": self.session_id, "request_overhead_tokens": overhead}
        if previous_summary is not None:
            options["previous_summary"] = previous_summary
        payload = {"messages": [m for _, m in candidate], "model": model, "options": options,
                   "tools": self.session.tools, "system_prompt": self.system_prompt}
        return self.trigger("context::assemble", payload)

    def _count_payload(self, messages: list[dict[str, Any]], system_prompt: str) -> dict[str, Any]:
        model: dict[str, Any] = {"id": self.model_id}
        if self.provider is not None:
            model["provider"] = self.provider
        return {"messages": messages, "model": model, "tools": self.session.tools, "system_prompt": system_prompt}

    def _record_compaction(self, step: int, candidate: list[tuple[str, dict[str, Any]]], answer: Any,
                           run: SessionRun) -> None:
        applied = answer["applied"]
        index = applied.get("tail_start_index")
        tail_id = candidate[index][0] if isinstance(index, int) and 0 <= index < len(candidate) else None
        entry_id = f"compaction-{step}"
        written = not any(e.entry_id == entry_id for e in self.log)
        if written:
            self.log.append(Entry(entry_id, custom={"custom_type": "compaction", "data": {
                "summary": applied["summary"],
                "tail_start_entry_id": tail_id,
                "tokens_before": applied.get("tokens_before"),
                "summarized_head_tokens": applied.get("summarized_head_tokens"),
                "initial_token_count": applied.get("initial_token_count", 0),
                "assembled_token_count": answer["token_count"],
                "usable_input_tokens": answer["usable"],
                "effective_max_output_tokens": answer["effective_max_output_tokens"],
            }}))
        run.compactions.append(CompactionRecord(step, entry_id, index, tail_id, len(candidate), written))

    def _task_in(self, system_prompt: str, messages: list[dict[str, Any]]) -> bool:
        texts = [system_prompt]
        for message in messages:
            texts.extend(b["text"] for b in message.get("content", []) if b.get("type") == "text")
        context = "\n".join(texts)
        return all(text in context for text in self.session.task)


def patch_orphaned_calls(messages: list[dict[str, Any]]) -> int:
    """Insert an "elided" result after each assistant message whose function call has no result
    anywhere in the list; the number inserted."""
    resolved = {m["function_call_id"] for m in messages if isinstance(m.get("function_call_id"), str)}
    for m in messages:
        for block in m.get("content") or []:
            if block.get("type") == "function_result" and isinstance(block.get("function_call_id"), str):
                resolved.add(block["function_call_id"])
    patched = 0
    i = 0
    while i < len(messages):
        missing: list[tuple[str, str]] = []
        if messages[i].get("role") == "assistant":
            for block in messages[i].get("content") or []:
                if block.get("type") == "function_call" and isinstance(block.get("id"), str) \
                        and block["id"] not in resolved:
                    missing.append((block["id"], block.get("function_id") or "unknown"))
        for offset, (call_id, function_id) in enumerate(missing):
            messages.insert(i + 1 + offset, {
                "role": "function_result", "function_call_id": call_id, "function_id": function_id,
                "content": [{"type": "text", "text": ELIDED}], "is_error": False, "timestamp": 1_767_225_600_000})
        patched += len(missing)
        i += 1 + len(missing)
    return patched


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


def budgets(sessions: list[RecordedSession]) -> dict[str, Any]:
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
def harness_stack(sessions: list[RecordedSession], workdir: Path) -> Iterator[Stack]:
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


def run_configuration(stack: Stack, name: str, sessions: list[RecordedSession],
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
