"""Replay one session at one budget under one strategy (a peer or a worker mode) into a Ledger.

A peer's loop sends what the peer's policy keeps (``bench.kit.peers``), with its last line of
defence (the worker's ``drop_oldest``) when it has one; a worker mode is the caller's round trip
of ``bench.kit.loop``."""

from __future__ import annotations

from typing import Any

import anyio

from bench.kit.ledger import Ledger, Message, Sent, cached_prefix_tokens, count
from bench.kit.loop import Call, quiet_logger, round_trip, worker_context
from bench.kit.modes import Mode
from bench.kit.peers import Budget, Peer
from bench.kit.sessions import Session
from bench.league.recall import RecallProbe
from context_manager.handlers import assemble as assemble_handler
from context_manager.handlers.context import HandlerContext
from context_manager.wire.errors import OVERFLOW, HandlerError

BUDGETS = {"32k": Budget("32k", 32_000, 4_000), "128k": Budget("128k", 128_000, 8_000)}


def _model(budget: Budget) -> dict[str, Any]:
    return {"id": "league-model", "limits": {"context_window": budget.window,
                                             "max_output_tokens": budget.max_output}}


async def _assemble(ctx: HandlerContext, system: str | None, messages: list[Message], budget: Budget,
                    previous_summary: str | None = None) -> dict[str, Any] | None:
    payload: dict[str, Any] = {"messages": messages, "model": _model(budget)}
    if system is not None:
        payload["system_prompt"] = system
    if previous_summary is not None:
        payload["options"] = {"previous_summary": previous_summary}
    try:
        return await assemble_handler.handle(payload, ctx)
    except HandlerError as exc:
        if exc.kind != OVERFLOW:
            raise
        return None


def run_peer(session: Session, budget: Budget, peer: Peer) -> Ledger:
    return anyio.run(_run_peer, session, budget, peer, RecallProbe(session, budget))


async def _run_peer(session: Session, budget: Budget, peer: Peer, probe: RecallProbe) -> Ledger:
    strategy = peer.make(budget)
    system = session.system_prompt or ""
    # OpenHands truncates the history on a context-window error: drop_oldest, no summariser.
    defence = worker_context({"overflow_fallback": "drop_oldest"}, None,
                                                          quiet_logger("bench.league.worker")) if peer.defence else None
    ledger, previous = Ledger(), None
    history: list[Message] = []
    for index, message in enumerate(session.messages):
        if message["role"] == "assistant" and history:
            ledger.calls += 1
            step = strategy(system, list(history))
            for use in step.summaries:
                cached = cached_prefix_tokens(previous, (system, use.continues)) if use.continues else 0
                ledger.summarise(use.summary.input_tokens, use.summary.output_tokens, cached)
            sent: Sent | None = (system, step.messages)
            tokens = count(system, step.messages)
            if tokens > budget.limit:
                sent = None
                if defence is not None:
                    answer = await _assemble(defence, session.system_prompt, step.messages, budget)
                    if answer is not None:
                        sent, tokens = (answer["system_prompt"], answer["messages"]), answer["token_count"]
                        ledger.defended += 1
            if sent is None:
                ledger.overflows += 1
            else:
                ledger.send(previous, sent, tokens)
                previous = sent
            probe.score(ledger, index, sent)
        if message["role"] != "custom":
            history.append(message)
    return ledger


def run_worker(session: Session, budget: Budget, mode: Mode) -> Ledger:
    """As ``bench.replay``: the caller's round trip (``bench.kit.loop``), scored for recall."""
    probe, recalled = RecallProbe(session, budget, mode.config.get("max_history_tokens")), Ledger()

    def observe(_session: Session, call: Call) -> None:
        answer = call.response
        probe.score(recalled, call.index, None if answer is None else (answer["system_prompt"], answer["messages"]))

    ledger = round_trip(session, mode, budget.window, model_id="league-model",
                        max_output_tokens=budget.max_output, observer=observe)
    ledger.add(recalled)
    return ledger
