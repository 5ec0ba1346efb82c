"""The worker's modes: the harness turn loop of the kit (``bench.kit.loop.HarnessLoop``) with every
summariser call counted as in the call or off the turn (definitions: ``bench/latency/__init__.py``)."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from bench.kit.ledger import Ledger, Sent, cached_prefix_tokens, count
from bench.kit.loop import GuidanceHook, HarnessLoop, InProcess, SessionRun, Step, patch_orphaned_calls
from bench.kit.sessions import Session
from bench.kit.summariser import RecordingSummarizer
from bench.latency.jobs import DelayedSessions, SimulatedClock, SimulatedJobs
from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.config.parse import ConfigError, parse_config_value
from context_manager.core.counting.calibration import SentLedger
from context_manager.core.memo import MessageMemo
from context_manager.handlers.context import HandlerContext
from context_manager.ports import ModelBudget, RouterModel, SummarizeRequest

# True while the harness waits for a context::assemble answer (the caller's own context: an
# asyncio task started inside the call copies it, a thread started by the worker does not).
IN_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar("bench_latency_in_call", default=False)


@dataclass(frozen=True)
class WorkerMode:
    name: str
    config: dict[str, Any]


RECOMMENDED = {"profile": "recommended"}
WORKER_MODES = (
    WorkerMode("worker: recommended (inline)", RECOMMENDED),
    WorkerMode("worker: recommended + compact_ahead_at 0.8", {**RECOMMENDED, "compact_ahead_at": 0.8}),
)


def supported(config: dict[str, Any]) -> bool:
    """Does the worker accept ``config`` (every key known, every value valid)?"""
    try:
        parse_config_value(config)
    except ConfigError:
        return False
    return True


@dataclass(frozen=True)
class FixedLimits:
    """A router stand-in: every model has the same window and output cap."""

    context_window: int
    max_output_tokens: int

    async def get_model_budget(self, provider: str | None, model_id: str) -> ModelBudget | None:
        return ModelBudget(RouterModel(model_id, self.context_window, self.max_output_tokens, provider or ""),
                           self.max_output_tokens)


class MeteredSummarizer:
    """The kit's deterministic summariser as the worker's summariser port, awaited on the caller's
    event loop, counting each call as in the call (:data:`IN_CALL`) or off the turn, and noting
    for each how many steps had been counted when it was made (``steps_done``), so a request in
    conversation form is priced against the context sent last before it."""

    def __init__(self) -> None:
        self.recorder = RecordingSummarizer()
        self.in_call = 0
        self.off_turn = 0
        self.steps_done: Callable[[], int] = lambda: 0
        self.made_after: list[int] = []  # per request: the steps counted when it was made

    async def summarize(self, request: SummarizeRequest) -> str:
        if IN_CALL.get():
            self.in_call += 1
        else:
            self.off_turn += 1
        self.made_after.append(self.steps_done())
        return await self.recorder.summarize(request)


@dataclass(frozen=True)
class CallTrace:
    """One call of a replay as ``--trace`` prints it: what the worker did and what it cost.

    ``compaction``: ``"ready"`` (a summary made ahead of time, answered as an LLM compaction
    without a summariser call in the call), ``"extractive"`` (the no-wait path's extractive
    summary), ``"inline"`` (the summariser called in the call) or ``""``; ``jobs``: jobs the call
    started; ``job_calls``: the summariser calls those jobs made; ``rewrite``: the sent context
    does not extend the previous sent one; ``tokens``: its size, ``cached``: the part it repeats;
    ``before``: the worker's ``applied.initial_token_count`` (the context it was given)."""

    index: int
    before: int
    tokens: int
    cached: int
    rewrite: bool
    compaction: str
    jobs: int
    job_calls: int

    def as_json(self) -> dict[str, Any]:
        return {"index": self.index, "before": self.before, "tokens": self.tokens, "cached": self.cached,
                "rewrite": self.rewrite, "compaction": self.compaction, "jobs": self.jobs,
                "job_calls": self.job_calls}


def compaction_kind(applied: dict[str, Any] | None, in_call: int) -> str:
    """How an answer compacted (:class:`CallTrace`), from its ``applied`` report."""
    if applied is None or not applied.get("compacted"):
        return ""
    if applied.get("summary_kind") == "extractive":
        return "extractive"
    return "inline" if in_call else "ready"


@dataclass
class Replay:
    """What one mode did over one session: per call, the recorded index, the summariser calls made
    in it and the context sent (``None``: an overflow), and the bill."""

    session: Session
    indexes: list[int] = field(default_factory=list)
    in_call: list[int] = field(default_factory=list)
    sent: list[Sent | None] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)  # count() of the context sent, 0 for an overflow
    ledger: Ledger = field(default_factory=Ledger)
    off_turn: int = 0
    # Per call (CallTrace): what the call did, as the step saw it; the sent context's share of the
    # ledger (tokens, cached, rewrite) is filled in when the replay is priced.
    trace: list[CallTrace] = field(default_factory=list)


class _MeteredLoop(HarnessLoop):
    """The kit's turn loop, noting for each step the recorded index, the summariser calls made
    while it ran and the last answer's context."""

    def __init__(self, trigger: Any, session: Session, summarizer: MeteredSummarizer, replay: Replay,
                 hook: GuidanceHook | None, jobs: Ahead | None = None) -> None:
        super().__init__(trigger, session, session.name, hook=hook, session_line=False, observe=self._answer)
        self.summarizer = summarizer
        self.replay = replay
        self.jobs = jobs
        self._last: dict[str, Any] | None = None

    def _answer(self, answer: dict[str, Any]) -> None:
        self._last = answer

    def step(self, step: int, run: SessionRun) -> Step:
        index = next(int(e.entry_id[1:]) for e in reversed(self.log) if e.message is not None) + 1
        before, self._last = self.summarizer.in_call, None
        started = self.jobs.runner.started if self.jobs is not None else 0
        record = super().step(step, run)
        made = self.summarizer.in_call - before
        self.replay.indexes.append(index)
        self.replay.in_call.append(made)
        job_calls = 0
        if self.jobs is not None:
            # The call is answered after its own summariser calls; jobs it started run from then.
            clock = self.jobs.clock  # the time the call was made
            answered = clock.now + self.jobs.runner.latency * made
            off_turn = self.summarizer.off_turn
            self.jobs.runner.run_queued(answered)
            job_calls = self.summarizer.off_turn - off_turn
            clock.now = answered + self.jobs.steps.get(index, 0.0)
        jobs = (self.jobs.runner.started - started) if self.jobs is not None else 0
        answer = self._last if record.failure is None else None
        applied = answer.get("applied") if answer else None
        before = int(applied.get("initial_token_count", 0)) if applied else 0
        self.replay.trace.append(CallTrace(index, before, 0, 0, False, compaction_kind(applied, made), jobs,
                                           job_calls))
        if answer is None:
            self.replay.sent.append(None)
            self.replay.tokens.append(0)
            return record
        # The request the loop sends: the answer, the hook's messages, orphaned calls patched.
        messages = list(answer["messages"]) + (self.hook.appended(step) if self.hook is not None else [])
        patch_orphaned_calls(messages)
        self.replay.sent.append((answer["system_prompt"], messages))
        self.replay.tokens.append(count(answer["system_prompt"], messages))
        return record


def _quiet() -> logging.Logger:
    log = logging.getLogger("bench.latency.worker")
    log.setLevel(logging.CRITICAL)
    return log


@dataclass
class Ahead:
    """The simulated clock of one replay and the job runner on it (``bench.latency.jobs``)."""

    clock: SimulatedClock
    runner: SimulatedJobs
    steps: dict[int, float]


def takes_jobs(config: dict[str, Any]) -> bool:
    """Does ``config`` make the worker start jobs off the call (its replay then depends on L)?"""
    return config.get("compact_ahead_at") is not None


def replay_worker(session: Session, config: dict[str, Any], window: int, max_output: int,
                  hook: GuidanceHook | None = None, latency: float = 0.0,
                  steps: dict[int, float] | None = None) -> Replay:
    """One session through the harness turn loop with ``config``, the model at ``window`` /
    ``max_output``, and the kit's pre-generate ``hook`` when one is given (its re-assemblies are
    calls of the same turn: their summariser calls add to the turn's wait). With a key that
    starts jobs (:func:`takes_jobs`), they run on the simulated clock of ``latency`` and the
    session's ``steps`` (``bench.latency.jobs``)."""
    summarizer = MeteredSummarizer()
    ctx = HandlerContext(
        config=parse_config_value(config),
        resolver=FixedLimits(window, max_output),
        summarizer=summarizer,
        lease_store=None,  # one harness per session: nothing to coordinate
        tokenizers=PACKAGED_TOKENIZERS,
        log=_quiet(),
        memo=MessageMemo(),
        session_store=MemorySessionStore(),
        sent_ledger=SentLedger(),
    )
    ahead: Ahead | None = None
    if takes_jobs(config):
        clock = SimulatedClock()
        sessions = DelayedSessions(MemorySessionStore(), clock)
        runner = SimulatedJobs(sessions, latency, lambda: summarizer.off_turn)
        ahead = Ahead(clock, runner, steps or {})
        ctx.session_store, ctx.ahead_runner = sessions, runner
    in_process = InProcess(ctx)

    def trigger(function_id: str, payload: dict[str, Any]) -> Any:
        mark = IN_CALL.set(True)
        try:
            return in_process(function_id, payload)
        finally:
            IN_CALL.reset(mark)

    replay = Replay(session)
    # A call's own summariser requests come before it is counted, the jobs it starts after.
    summarizer.steps_done = lambda: len(replay.indexes)
    _MeteredLoop(trigger, session, summarizer, replay, hook, ahead).run()
    ledger, previous = replay.ledger, None
    for call, (sent, answer_tokens) in enumerate(zip(replay.sent, replay.tokens)):
        ledger.calls += 1
        if sent is None:
            ledger.overflows += 1
            continue
        rewrites, cached = ledger.rewrites, ledger.cached
        ledger.send(previous, sent, answer_tokens)
        replay.trace[call] = replace(replay.trace[call], tokens=answer_tokens, cached=ledger.cached - cached,
                                     rewrite=ledger.rewrites > rewrites)
        previous = sent
    recorder = summarizer.recorder
    for request, conversation in enumerate(recorder.conversations):
        if conversation is not None:
            # The context sent last before the request: the previous call's for a call's own
            # request, the starting call's for a job's.
            done = summarizer.made_after[request]
            last = replay.sent[done - 1] if done > 0 else None
            ledger.summarizer_cached += min(cached_prefix_tokens(last, conversation), recorder.inputs[request])
    ledger.summarizer_calls += len(recorder.calls)
    ledger.summarizer_input += recorder.input_tokens
    ledger.summarizer_output += recorder.output_tokens
    replay.off_turn = summarizer.off_turn
    return replay

