"""The simulated clock: the agent's step times, each call's wait, and their sums (definitions:
``bench/latency/__init__.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.kit.measure import percentile
from bench.kit.sessions import Session

DEFAULT_STEP_SECONDS = 10.0
SYNTHESISED_GAP_MS = 1000  # SOURCES.md: synthesised timestamps are +1000 ms per message
DEFAULT_LATENCIES = (5.0, 30.0, 120.0)


def recorded_times(session: Session) -> bool:
    """Did the session's source record the times of its messages? No when a message lacks a
    timestamp or every message is exactly 1,000 ms after the one before it (synthesised)."""
    stamps = [m.get("timestamp") for m in session.messages]
    known = [s for s in stamps if isinstance(s, int)]
    if len(known) < 2 or len(known) < len(stamps):
        return False
    return any(b - a != SYNTHESISED_GAP_MS for a, b in zip(known, known[1:]))


def step_seconds(session: Session, step_time: float = DEFAULT_STEP_SECONDS) -> dict[int, float]:
    """The agent's time after each model call until the next one: the recorded gap between
    consecutive assistant messages (never below 0) when the times were recorded, else ``step_time``.
    Keyed by the recorded index of each assistant message; the last one's is 0 (the session ends
    with its reply)."""
    at = [i for i, m in enumerate(session.messages) if m["role"] == "assistant"]
    recorded = recorded_times(session)
    steps = {}
    for i, j in zip(at, at[1:]):
        gap = session.messages[j]["timestamp"] - session.messages[i]["timestamp"]
        steps[i] = max(0, gap) / 1000 if recorded else step_time
    if at:
        steps[at[-1]] = 0.0
    return steps


@dataclass(frozen=True)
class CallTime:
    """One model call on the clock."""

    index: int  # the recorded assistant message the call is made before
    made_at: float  # seconds since the session's first call
    summarizer_calls: int  # made in the call, one after the other
    wait: float


@dataclass
class Timeline:
    """One session's (or several sessions') calls on the simulated clock."""

    calls: list[CallTime] = field(default_factory=list)
    agent_seconds: float = 0.0

    def add(self, other: Timeline) -> None:
        self.calls.extend(other.calls)
        self.agent_seconds += other.agent_seconds

    @property
    def waited(self) -> int:
        return sum(c.wait > 0 for c in self.calls)

    @property
    def total_wait(self) -> float:
        return sum(c.wait for c in self.calls)

    @property
    def p99_wait(self) -> float:
        return percentile([c.wait for c in self.calls], 0.99) if self.calls else 0.0

    @property
    def max_wait(self) -> float:
        return max((c.wait for c in self.calls), default=0.0)

    @property
    def session_seconds(self) -> float:
        return self.agent_seconds + self.total_wait

    @property
    def waiting_share(self) -> float:
        return self.total_wait / self.session_seconds if self.session_seconds else 0.0


def timeline(indexes: list[int], summarizer_calls: list[int], steps: dict[int, float], latency: float) -> Timeline:
    """Place one session's calls (recorded index and summariser calls made in each) on the clock:
    each call waits ``latency`` × its summariser calls, then the agent takes its step."""
    now, line = 0.0, Timeline()
    for index, made in zip(indexes, summarizer_calls):
        wait = latency * made
        line.calls.append(CallTime(index, now, made, wait))
        step = steps.get(index, 0.0)
        now += wait + step
        line.agent_seconds += step
    return line


def as_json(line: Timeline) -> dict[str, Any]:
    return {"calls": len(line.calls), "waited": line.waited, "total_wait_s": line.total_wait,
            "p99_wait_s": line.p99_wait, "max_wait_s": line.max_wait,
            "session_s": line.session_seconds, "waiting_share": line.waiting_share}
