"""A peer's replay loop, shared by every suite that replays the league's peers.

At each assistant turn the peer's policy (``bench.kit.peers``) decides what to send; its
summariser requests are billed on the ledger (input cached up to the prefix it shares with the
previous send); a send over the budget's limit is an overflow unless the peer has a last line of
defence (the worker's ``drop_oldest``, no summariser), which then sends what the worker answers.
``observe`` sees every call: its message index, what was sent (``None``: an overflow) and how many
summariser requests the policy made at it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.kit.ledger import Ledger, Message, Sent, cached_prefix_tokens, count
from bench.kit.loop import model_input, quiet_logger, worker_context
from bench.kit.peers import Budget, Peer
from bench.kit.sessions import Session
from context_manager.handlers import assemble as assemble_handler
from context_manager.handlers.context import HandlerContext
from context_manager.wire.errors import OVERFLOW, HandlerError


@dataclass(frozen=True)
class PeerCall:
    index: int
    sent: Sent | None
    tokens: int
    summaries: int


async def assemble_or_overflow(ctx: HandlerContext, system: str | None, messages: list[Message],
                               model: dict[str, Any]) -> dict[str, Any] | None:
    """``context::assemble``'s answer, or ``None`` when it answers ``context/overflow``."""
    payload: dict[str, Any] = {"messages": messages, "model": model}
    if system is not None:
        payload["system_prompt"] = system
    try:
        return await assemble_handler.handle(payload, ctx)
    except HandlerError as exc:
        if exc.kind != OVERFLOW:
            raise
        return None


async def drive_peer(session: Session, peer: Peer, budget: Budget, ledger: Ledger, *,
                      model_id: str, observe: Callable[[PeerCall], None]) -> None:
    strategy = peer.make(budget)
    system = session.system_prompt or ""
    # OpenHands truncates the history on a context-window error: drop_oldest, no summariser.
    defence = worker_context({"overflow_fallback": "drop_oldest"}, None,
                             quiet_logger("bench.peer.defence")) if peer.defence else None
    previous: Sent | None = None
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
                    answer = await assemble_or_overflow(defence, session.system_prompt, step.messages,
                                                        model_input(budget.window, model_id, budget.max_output))
                    if answer is not None:
                        sent, tokens = (answer["system_prompt"], answer["messages"]), answer["token_count"]
                        ledger.defended += 1
            if sent is None:
                ledger.overflows += 1
            else:
                ledger.send(previous, sent, tokens)
                previous = sent
            observe(PeerCall(index, sent, tokens, len(step.summaries)))
        if message["role"] != "custom":
            history.append(message)
