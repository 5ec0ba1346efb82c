"""Plan and constraint fidelity of replayed plan sessions (``python -m bench.recall --plans``).

The sessions are the generated plan sessions (``bench.kit.generate.plan_sessions``): a plan tool
called whenever the plan changes, and long constraints the user adds mid-session. At every
pressure call (``bench.kit.recall.pressure_calls``: the calls where the raw history does not fit)
made after the first plan call:

* *plan fidelity*: the latest plan the recording holds before the call is in the returned
  context byte-exact: a returned call of the plan function with the same arguments, or the
  arguments' compact JSON with sorted keys (the wire's canonical form) in the returned system
  prompt or in a returned text; an overflow shows nothing;
* *stale plan*: an older plan is in the context (as above) and the latest is not;
* *completed-item regressions*: of the items the latest plan marks completed, those the newest
  plan the context shows lists as not completed (one per item and call);
* *constraint fidelity*: every user message longer than :data:`LONG_CONSTRAINT` characters recorded
  before the call is in the context whole (whitespace runs collapsed; a returned user message or
  any returned text or the system prompt).

Shares are sums over the calls (not averages per call). Nothing here reads the worker's code: the
definitions are the recording's and the returned context's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from bench.kit.ledger import Ledger
from bench.kit.loop import Call, round_trip
from bench.kit.modes import BUDGETS, Mode
from bench.kit.recall import pressure_calls
from bench.kit.sessions import Session
from bench.kit.table import markdown

LONG_CONSTRAINT = 300
DONE = ("completed", "done")

PLAN_MODES: list[Mode] = [
    Mode("summariser+check+working_set", True, {"summary_check": "append", "working_set": True}),
    Mode("none+extractive+check+working_set", False,
         {"summarizer_fallback": "extractive", "summary_check": "append", "working_set": True}),
]
PLAN_COLUMNS = ("mode", "calls", "plan fidelity", "stale plans", "regressions", "constraint fidelity",
                "overflows", "billed (auto cache)")


def canonical(arguments: Any) -> str:
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _squash(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class PlanVersion:
    function: str
    arguments: Any
    index: int  # the recorded message holding the call

    def items(self) -> list[tuple[str, str]]:
        """(item text, status) of the plan, whatever the tool's shape."""
        found: list[tuple[str, str]] = []
        for value in (self.arguments.values() if isinstance(self.arguments, dict) else [self.arguments]):
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, dict):
                        text = item.get("content") or item.get("step") or item.get("title") or ""
                        found.append((str(text), str(item.get("status", ""))))
        return found


def plan_versions(session: Session, functions: tuple[str, ...]) -> list[PlanVersion]:
    """Every plan call of the recording, in order."""
    versions = []
    for index, message in enumerate(session.messages):
        if message["role"] != "assistant":
            continue
        for block in message["content"]:
            if block["type"] == "function_call" and block["function_id"] in functions:
                versions.append(PlanVersion(block["function_id"], block["arguments"], index))
    return versions


def _texts(response: dict[str, Any]) -> str:
    parts = [response.get("system_prompt") or ""]
    for message in response["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            parts += [block["text"] for block in content if block.get("type") == "text"]
    return "\n".join(parts)


def _calls(response: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(block["function_id"], block.get("arguments")) for message in response["messages"]
            if message["role"] == "assistant" for block in message["content"]
            if block["type"] == "function_call"]


def shown(version: PlanVersion, texts: str, calls: list[tuple[str, Any]]) -> bool:
    return (version.function, version.arguments) in calls or canonical(version.arguments) in texts


@dataclass
class PlanFidelity:
    calls: int = 0
    plan_kept: int = 0
    stale: int = 0
    regressions: int = 0
    constraints: int = 0
    constraints_kept: int = 0
    missed_constraints: list[tuple[str, int]] = field(default_factory=list)

    @property
    def plan_share(self) -> float | None:
        return self.plan_kept / self.calls if self.calls else None

    @property
    def constraint_share(self) -> float | None:
        return self.constraints_kept / self.constraints if self.constraints else None


class PlanObserver:
    """A replay observer: adds every pressure call's plan and constraint fidelity."""

    def __init__(self, pressure: dict[str, frozenset[int]], functions: tuple[str, ...]) -> None:
        self.pressure = pressure
        self.functions = functions
        self.result = PlanFidelity()
        self._versions: dict[str, list[PlanVersion]] = {}

    def __call__(self, session: Session, call: Call) -> None:
        if call.index not in self.pressure.get(session.name, ()):
            return
        if session.name not in self._versions:
            self._versions[session.name] = plan_versions(session, self.functions)
        before = [v for v in self._versions[session.name] if v.index < call.index]
        constraints = [_squash(block["text"]) for message in session.messages[:call.index]
                       if message["role"] == "user" for block in message["content"]
                       if block["type"] == "text" and len(block["text"]) > LONG_CONSTRAINT]
        if not before:
            return
        result = self.result
        result.calls += 1
        result.constraints += len(constraints)
        if call.response is None:
            result.missed_constraints += [(c[:40], call.index) for c in constraints]
            return
        texts, calls = _texts(call.response), _calls(call.response)
        latest = before[-1]
        present = [v for v in before if shown(v, texts, calls)]
        if shown(latest, texts, calls):
            result.plan_kept += 1
        elif present:
            result.stale += 1
            newest_shown = present[-1]
            done = {text for text, status in latest.items() if status in DONE}
            result.regressions += sum(1 for text, status in newest_shown.items()
                                      if text in done and status not in DONE)
        squashed = _squash(texts)
        for constraint in constraints:
            if constraint in squashed:
                result.constraints_kept += 1
            else:
                result.missed_constraints.append((constraint[:40], call.index))


def measure_plans(sessions: list[Session], budget_name: str, window: str, output: int,
                  modes: list[Mode], functions: tuple[str, ...]) -> list[dict[str, Any]]:
    """One row per mode at one budget, summed over the plan sessions."""
    pressure = {s.name: pressure_calls(s, window, output) for s in sessions}
    rows = []
    for chosen in modes:
        observer = PlanObserver(pressure, functions)
        bill, overflows = Ledger(), 0
        for session in sessions:
            ledger = round_trip(session, chosen, BUDGETS[window], max_output_tokens=output, observer=observer)
            bill.add(ledger)
            overflows += ledger.overflows
        found = observer.result
        rows.append({"budget": budget_name, "mode": chosen.name, "calls": found.calls,
                     "plan_fidelity": found.plan_share, "stale_plans": found.stale,
                     "regressions": found.regressions, "constraint_fidelity": found.constraint_share,
                     "constraints": found.constraints, "overflows": overflows,
                     "billed_auto": bill.billed_automatic, "missed_constraints": found.missed_constraints})
    return rows


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def plan_table(rows: list[dict[str, Any]]) -> str:
    cells: list[tuple[str, ...]] = [(str(r["mode"]), str(r["calls"]), _share(r["plan_fidelity"]), str(r["stale_plans"]),
              str(r["regressions"]), _share(r["constraint_fidelity"]), str(r["overflows"]),
              f"{r['billed_auto'] / 1e6:.2f} M") for r in rows]
    return markdown(cells, PLAN_COLUMNS, text_columns=(0,))
