"""The league's peers (``bench.kit.peers``), replayed as the league replays them, each summariser
request made at a call counted against that call (a peer blocks on every compaction)."""

from __future__ import annotations

from collections.abc import Callable

import anyio

from bench.kit.ledger import Ledger
from bench.kit.peer_loop import PeerCall, drive_peer
from bench.kit.peers import PEERS, Budget, Peer
from bench.kit.sessions import Session
from bench.latency.worker import Replay

LATENCY_PEERS: tuple[Peer, ...] = PEERS


def replay_peer(session: Session, peer: Peer, budget: Budget) -> Replay:
    replay = Replay(session)

    def observe(call: PeerCall) -> None:
        replay.indexes.append(call.index)
        replay.in_call.append(call.summaries)
        replay.sent.append(call.sent)
        replay.tokens.append(call.tokens if call.sent is not None else 0)

    anyio.run(_replay, session, peer, budget, replay.ledger, observe)
    return replay


async def _replay(session: Session, peer: Peer, budget: Budget, ledger: Ledger,
                  observe: Callable[[PeerCall], None]) -> None:
    await drive_peer(session, peer, budget, ledger, model_id="latency-model", observe=observe)
