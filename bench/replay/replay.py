"""One recorded session through the caller's round trip (``bench.kit.loop.round_trip``), observed.

:func:`replay` drives the session in one mode (``bench.kit.modes``) and keeps, besides the
ledger of what was sent and billed (``bench.kit.ledger``), what the replay tables report: pruned,
capped, compacted and dropped calls, the probes of every compaction's summarised head
(``bench.replay.probes``), whether the task statement stayed in the returned context, and the
compacting calls whose system prompt changed. An ``observer`` given to :func:`replay` sees every
call as it was sent and answered (``bench.recall`` measures through it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.kit.ledger import Ledger
from bench.kit.loop import Call, Observer, round_trip
from bench.kit.modes import BUDGETS, DEFAULT_BUDGETS, MAX_OUTPUT_TOKENS, MODES, MODES_BY_NAME, Mode
from bench.kit.sessions import SESSIONS_DIR, Session, load_session, shipped_sessions
from bench.replay.probes import Probes, context_text, head_probes, task_text
from context_manager.core.compaction.prompts import render_system_prompt

__all__ = ["BUDGETS", "DEFAULT_BUDGETS", "ECONOMY_MODES", "MAX_OUTPUT_TOKENS", "MODES", "MODES_BY_NAME",
           "SESSIONS_DIR", "Call", "Compaction", "Mode", "ReplayStats", "Session", "load_session", "replay",
           "shipped_sessions"]

ECONOMY_MODES = ("summariser", "summariser-nopersist", "none+drop_oldest", "none",
                 "summariser-nopersist+reuse", "summariser-nopersist+reuse+reduce",
                 "none+drop_oldest+reduce", "summariser+reduce", "summariser+reuse+reduce",
                 "summariser+message", "summariser+eager", "summariser+eager+reduce", "summariser+all",
                 "summariser-nopersist+all")


@dataclass
class Compaction:
    """One compacting call: the summary kept, and every summariser (anchor, reply) of that call."""

    call_index: int
    summary: str
    tail_start_index: int
    summarizer_calls: list[tuple[str | None, str]]


@dataclass
class ReplayStats:
    session: str
    budget: str
    mode: str
    pruned: int = 0
    capped: int = 0
    compacted: int = 0
    dropped: int = 0
    compactions: list[Compaction] = field(default_factory=list)
    probes: Probes = field(default_factory=Probes)
    task_kept: int = 0  # calls whose returned context holds the first user message verbatim
    task_repeated: int = 0  # calls whose returned context holds it more than once
    bill: Ledger = field(default_factory=Ledger)  # calls, overflows, sent, cached, rewrites, summariser
    # compacting calls whose system prompt is not the request's as it renders without a summary
    prompt_changed_at_compaction: int = 0

    @property
    def calls(self) -> int:
        return self.bill.calls

    @property
    def overflows(self) -> int:
        return self.bill.overflows

    @property
    def input_tokens(self) -> int:
        """The sum of ``token_count`` over the successful calls."""
        return self.bill.sent

    @property
    def cache_busts(self) -> int:
        """Successful calls that do not extend the previous successful call's context."""
        return self.bill.rewrites


def replay(session: Session, budget: str, mode: Mode, model_id: str = "replay-model", *,
           max_output_tokens: int = MAX_OUTPUT_TOKENS, observer: Observer | None = None) -> ReplayStats:
    """Replay ``session`` at ``budget`` (a key of :data:`BUDGETS`) in ``mode`` on ``model_id``,
    a model with ``max_output_tokens``; ``observer`` sees every call."""
    stats = ReplayStats(session.name, budget, mode.name)
    task = task_text(session.messages)
    calls = 0

    def observe(session: Session, call: Call) -> None:
        nonlocal calls
        calls += 1
        if observer is not None:
            observer(session, call)
        response = call.response
        if response is None:
            return
        applied = response["applied"]
        stats.pruned += applied["pruned"]
        stats.capped += applied["capped_parts"] > 0
        stats.dropped += "dropped_messages" in applied
        returned = context_text(response["system_prompt"], response["messages"])
        stats.task_kept += task is not None and task in returned
        stats.task_repeated += task is not None and returned.count(task) > 1
        if applied["compacted"]:
            stats.compacted += 1
            stats.prompt_changed_at_compaction += (
                response["system_prompt"] != render_system_prompt(session.system_prompt, None))
            if mode.persist:
                stats.probes.add(head_probes(call.sent[call.anchor:applied["tail_start_index"]], returned))
            stats.compactions.append(Compaction(calls - 1, applied["summary"], applied["tail_start_index"],
                                                call.summarizer_calls))

    stats.bill = round_trip(session, mode, BUDGETS[budget], model_id=model_id,
                            max_output_tokens=max_output_tokens, observer=observe)
    return stats
