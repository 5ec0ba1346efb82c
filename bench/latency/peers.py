"""The league's peers (``bench.kit.peers``), replayed as the league replays them, each summariser
request made at a call counted against that call (a peer blocks on every compaction)."""

from __future__ import annotations

from typing import Any

import anyio

from bench.kit.ledger import Message, Sent, cached_prefix_tokens, count
from bench.kit.loop import quiet_logger, worker_context
from bench.kit.peers import PEERS, Budget, Peer
from bench.kit.sessions import Session
from bench.latency.worker import Replay
from context_manager.handlers import assemble as assemble_handler
from context_manager.handlers.context import HandlerContext
from context_manager.wire.errors import OVERFLOW, HandlerError

LATENCY_PEERS: tuple[Peer, ...] = PEERS


async def _defend(ctx: HandlerContext, system: str | None, messages: list[Message],
                  budget: Budget) -> dict[str, Any] | None:
    payload: dict[str, Any] = {"messages": messages, "model": {
        "id": "latency-model", "limits": {"context_window": budget.window, "max_output_tokens": budget.max_output}}}
    if system is not None:
        payload["system_prompt"] = system
    try:
        return await assemble_handler.handle(payload, ctx)
    except HandlerError as exc:
        if exc.kind != OVERFLOW:
            raise
        return None


def replay_peer(session: Session, peer: Peer, budget: Budget) -> Replay:
    return anyio.run(_replay_peer, session, peer, budget)


async def _replay_peer(session: Session, peer: Peer, budget: Budget) -> Replay:
    strategy = peer.make(budget)
    system = session.system_prompt or ""
    # OpenHands truncates the history on a context-window error: drop_oldest, no summariser.
    defence = worker_context({"overflow_fallback": "drop_oldest"}, None,
                             quiet_logger("bench.latency.peer")) if peer.defence else None
    replay = Replay(session)
    ledger, previous = replay.ledger, None
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
                    answer = await _defend(defence, session.system_prompt, step.messages, budget)
                    if answer is not None:
                        sent, tokens = (answer["system_prompt"], answer["messages"]), answer["token_count"]
                        ledger.defended += 1
            if sent is None:
                ledger.overflows += 1
            else:
                ledger.send(previous, sent, tokens)
                previous = sent
            replay.indexes.append(index)
            replay.in_call.append(len(step.summaries))
            replay.sent.append(sent)
            replay.tokens.append(tokens if sent is not None else 0)
        if message["role"] != "custom":
            history.append(message)
    return replay
