"""The latency suite's rows: every mode replayed once per session, then placed on the simulated
clock for each summariser latency L (definitions: ``bench/latency/__init__.py``)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

from bench.kit.ledger import Ledger
from bench.kit.loop import Call, GuidanceHook, round_trip
from bench.kit.peers import Budget, Peer
from bench.kit.recall import RAW_MODE, SessionIndex, is_pressure, recall_at_call
from bench.kit.sessions import Session
from bench.kit.table import markdown
from bench.latency.clock import (
    DEFAULT_STEP_SECONDS,
    Timeline,
    as_json,
    recorded_times,
    step_seconds,
    timeline,
)
from bench.latency.peers import LATENCY_PEERS, replay_peer
from bench.latency.worker import (
    WORKER_MODES,
    CallTrace,
    Replay,
    WorkerMode,
    replay_worker,
    supported,
    takes_jobs,
)

NOT_SUPPORTED = "n/a (key not supported)"
COLUMNS = ("mode", "calls", "waited", "total wait", "p99 wait", "max wait", "waiting share", "overflows",
           "long-range recall", "billed (auto)", "prefix rewrites", "summariser calls (in call / off turn)")


@dataclass
class Row:
    mode: str
    kind: str  # "worker" or "peer"
    latency: float
    supported: bool = True
    clock: Timeline = field(default_factory=Timeline)
    ledger: Ledger = field(default_factory=Ledger)
    in_call: int = 0
    off_turn: int = 0
    by_session: dict[str, Timeline] = field(default_factory=dict)
    traces: dict[str, list[CallTrace]] = field(default_factory=dict)  # the worker's, per session

    def trace_json(self) -> list[dict[str, Any]]:
        """Per session, every call's :class:`~bench.latency.worker.CallTrace` (``--trace``)."""
        return [{"mode": self.mode, "latency_s": self.latency, "session": name,
                 "calls": [c.as_json() for c in calls]} for name, calls in self.traces.items()]

    def as_json(self) -> dict[str, Any]:
        if not self.supported:
            return {"mode": self.mode, "kind": self.kind, "latency_s": self.latency, "supported": False}
        return {"mode": self.mode, "kind": self.kind, "latency_s": self.latency, "supported": True,
                **as_json(self.clock), "overflows": self.ledger.overflows, "recall": self.ledger.recall,
                "recall_found": self.ledger.recall_found, "recall_total": self.ledger.recall_total,
                "billed_auto": self.ledger.billed_automatic, "billed_anthropic": self.ledger.billed_anthropic,
                "prefix_rewrites": self.ledger.rewrites, "summarizer_calls_in_call": self.in_call,
                "summarizer_calls_off_turn": self.off_turn}


def pressure_calls(session: Session, window: int, max_output: int) -> frozenset[int]:
    """The recorded indexes before which the raw history exceeds ``usable`` (``bench.kit.recall``'s
    rule, at any window)."""
    found: list[int] = []

    def observe(_session: Session, call: Call) -> None:
        if is_pressure(call.response):
            found.append(call.index)

    round_trip(session, RAW_MODE, window, max_output_tokens=max_output, observer=observe)
    return frozenset(found)


def score_recall(replay: Replay, pressure: frozenset[int]) -> None:
    """Add the long-range recall of the replay's pressure calls to its ledger."""
    if not pressure:
        return
    session = replay.session
    index = SessionIndex(session.system_prompt, session.messages)
    for at, sent in zip(replay.indexes, replay.sent):
        if at not in pressure:
            continue
        result = recall_at_call(index, at, *(sent if sent is not None else (None, None)))
        replay.ledger.recall_total += len(result.needs)
        replay.ledger.recall_found += len(result.kept)


def measure(sessions: list[Session], window: int, max_output: int, latencies: list[float],
            step_time: float = DEFAULT_STEP_SECONDS, modes: list[WorkerMode | Peer] | None = None,
            progress: bool = False, hook: GuidanceHook | None = None) -> list[Row]:
    """One row per mode and latency, summed over ``sessions`` (worker modes first, then peers);
    ``hook``: the worker's turn loop runs the kit's pre-generate hook (the peers have none)."""
    chosen: list[WorkerMode | Peer] = list(modes) if modes is not None else [*WORKER_MODES, *LATENCY_PEERS]
    budget = Budget(f"{window}", window, max_output)
    pressure = {s.name: pressure_calls(s, window, max_output) for s in sessions}
    steps = {s.name: step_seconds(s, step_time) for s in sessions}
    rows: list[Row] = []
    for mode in chosen:
        started = time.monotonic()
        kind = "worker" if isinstance(mode, WorkerMode) else "peer"
        mine = [Row(mode.name, kind, latency) for latency in latencies]
        if isinstance(mode, WorkerMode) and not supported(mode.config):
            for row in mine:
                row.supported = False
            rows.extend(mine)
            continue
        for session in sessions:
            replays: dict[float, Replay] = {}
            if isinstance(mode, WorkerMode) and takes_jobs(mode.config):
                # Off-turn jobs finish L per summariser call later: the replay depends on L.
                for latency in latencies:
                    replays[latency] = replay_worker(session, mode.config, window, max_output, hook,
                                                     latency, steps[session.name])
            else:
                single = (replay_worker(session, mode.config, window, max_output, hook)
                          if isinstance(mode, WorkerMode) else replay_peer(session, mode, budget))
                replays = {latency: single for latency in latencies}
            for replay in {id(r): r for r in replays.values()}.values():
                score_recall(replay, pressure[session.name])
            for row in mine:
                replay = replays[row.latency]
                row.ledger.add(replay.ledger)
                line = timeline(replay.indexes, replay.in_call, steps[session.name], row.latency)
                row.by_session[session.name] = line
                if isinstance(mode, WorkerMode):
                    row.traces[session.name] = replay.trace
                row.clock.add(line)
                row.in_call += sum(replay.in_call)
                row.off_turn += replay.off_turn
        rows.extend(mine)
        if progress:
            print(f"{mode.name}: {time.monotonic() - started:.1f} s", file=sys.stderr)
    return rows


def _seconds(value: float) -> str:
    return f"{value:,.0f} s"


def cells(row: Row) -> tuple[str, ...]:
    if not row.supported:
        return (row.mode, NOT_SUPPORTED, *("" for _ in COLUMNS[2:]))
    clock, ledger = row.clock, row.ledger
    recall = "-" if ledger.recall is None else f"{100 * ledger.recall:.1f}%"
    return (row.mode, str(len(clock.calls)), str(clock.waited), _seconds(clock.total_wait),
            _seconds(clock.p99_wait), _seconds(clock.max_wait), f"{100 * clock.waiting_share:.1f}%",
            str(ledger.overflows), recall, f"{ledger.billed_automatic / 1e6:.2f} M", str(ledger.rewrites),
            f"{row.in_call} / {row.off_turn}")


def table(rows: list[Row]) -> str:
    return markdown([cells(r) for r in rows], COLUMNS, text_columns=(0,))


SESSION_COLUMNS = ("session", "step times", "calls", "agent time", "mode", "waited", "total wait", "waiting share")


def session_table(rows: list[Row], sessions: list[Session], step_time: float) -> str:
    """Per session (at the rows' latency): where the step times come from, the agent's time, and
    every mode that waited there."""
    cells_: list[tuple[str, ...]] = []
    for session in sessions:
        source = "recorded" if recorded_times(session) else f"stated ({step_time:g} s)"
        lines = [(r.mode, r.by_session[session.name]) for r in rows if session.name in r.by_session]
        if not lines:
            continue
        first = lines[0][1]
        head = (session.name, source, str(len(first.calls)), _seconds(first.agent_seconds))
        waited = [(mode, line) for mode, line in lines if line.waited]
        if not waited:
            cells_.append((*head, "(none waited)", "0", "0 s", "0.0%"))
        for mode, line in waited:
            cells_.append((*head, mode, str(line.waited), _seconds(line.total_wait),
                           f"{100 * line.waiting_share:.1f}%"))
            head = ("", "", "", "")
    return markdown(cells_, SESSION_COLUMNS, text_columns=(0, 1, 4))


LEGEND = """\
Simulated clock: a call waits L × the summariser calls it makes (the worker: those made while
context::assemble runs for the turn; a peer: one per compaction); the agent then takes the
session's recorded time to its next model call (mini-swe-agent, OpenHands), else the stated step
time. waited = calls with a wait above 0; p99 = nearest-rank over every call (0 for a call that did
not wait); waiting share = total wait / (total wait + agent time); overflows = calls that could not
be sent; long-range recall = bench.kit.recall over the pressure calls; billed = bench.kit.ledger,
automatic caching (cached 0.1, rest 1, summariser replies 1); prefix rewrites = sent calls that do
not extend the previous one. Definitions: bench/latency/__init__.py."""
