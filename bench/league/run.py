"""Replay one session at one budget under one strategy (a peer or a worker mode) into a Ledger.

A peer's loop sends what the peer's policy keeps (``bench.kit.peers``), with its last line of
defence (the worker's ``drop_oldest``) when it has one; a worker mode is the caller's round trip
of ``bench.kit.loop``."""

from __future__ import annotations

import anyio

from bench.kit.ledger import Ledger
from bench.kit.loop import Call, round_trip
from bench.kit.modes import Mode
from bench.kit.peer_loop import drive_peer
from bench.kit.peers import Budget, Peer
from bench.kit.sessions import Session
from bench.league.recall import RecallProbe

BUDGETS = {"32k": Budget("32k", 32_000, 4_000), "128k": Budget("128k", 128_000, 8_000)}


def run_peer(session: Session, budget: Budget, peer: Peer) -> Ledger:
    return anyio.run(_run_peer, session, budget, peer, RecallProbe(session, budget))


async def _run_peer(session: Session, budget: Budget, peer: Peer, probe: RecallProbe) -> Ledger:
    ledger = Ledger()
    await drive_peer(session, peer, budget, ledger, model_id="league-model",
                      observe=lambda call: probe.score(ledger, call.index, call.sent))
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
