"""Replay one session at one budget under one strategy (a peer or a worker mode) into a Ledger."""

from __future__ import annotations

import logging
from typing import Any

import anyio

from bench.kit.ledger import Ledger, Message, Sent, count
from bench.kit.peers import Budget, Peer
from bench.kit.summariser import RecordingSummarizer
from bench.league.recall import RecallProbe
from bench.replay.economy import cached_prefix_tokens
from bench.replay.replay import Mode, Session, _anchor_messages
from context_manager.adapters.callable_summarizer import CallableSummarizer
from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.config.parse import parse_config_value
from context_manager.handlers import assemble as assemble_handler
from context_manager.handlers.context import HandlerContext
from context_manager.wire.errors import OVERFLOW, HandlerError

BUDGETS = {"32k": Budget("32k", 32_000, 4_000), "128k": Budget("128k", 128_000, 8_000)}


def _log() -> logging.Logger:
    log = logging.getLogger("bench.league.worker")
    log.setLevel(logging.ERROR)
    return log


def _context(config: dict[str, Any], summarizer: RecordingSummarizer | None) -> HandlerContext:
    return HandlerContext(
        config=parse_config_value(config),
        summarizer=CallableSummarizer(summarizer) if summarizer is not None else None,
        lease_store=None, tokenizers=PACKAGED_TOKENIZERS, log=_log(),
        session_store=MemorySessionStore())


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
    defence = _context({"overflow_fallback": "drop_oldest"}, None) if peer.defence else None
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
    recorder = RecordingSummarizer() if mode.summarizer else None
    return anyio.run(_run_worker, session, budget, mode, _context(mode.config, recorder), recorder,
                     RecallProbe(session, budget))


async def _run_worker(session: Session, budget: Budget, mode: Mode, ctx: HandlerContext,
                      recorder: RecordingSummarizer | None, probe: RecallProbe) -> Ledger:
    """As ``bench.replay``: the round trip kept (when the mode persists it), the anchor resent."""
    anchor = _anchor_messages(session, mode)
    held_from = len(anchor)
    ledger, previous = Ledger(), None
    previous_summary: str | None = None
    for index, message in enumerate(session.messages):
        if message["role"] != "assistant" or (index == held_from and not anchor):
            continue
        ledger.calls += 1
        sending = anchor + session.messages[held_from:index]
        answer = await _assemble(ctx, session.system_prompt, sending, budget, previous_summary)
        if answer is None:
            ledger.overflows += 1
            probe.score(ledger, index, None)
            continue
        sent = (answer["system_prompt"], answer["messages"])
        ledger.send(previous, sent, answer["token_count"])
        previous = sent
        probe.score(ledger, index, sent)
        applied = answer["applied"]
        if applied["compacted"] and mode.persist:
            previous_summary = applied["summary"]
            held_from += applied["tail_start_index"] - len(anchor)
    if recorder is not None:
        ledger.summarizer_calls += len(recorder.calls)
        ledger.summarizer_input += recorder.input_tokens
        ledger.summarizer_output += recorder.output_tokens
    return ledger
