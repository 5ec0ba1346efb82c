"""Summary reuse across calls (``summary_reuse``): answer as if the caller did the round trip.

A caller that does not persist the compaction round trip (spec 03 §5.7) sends its whole history
again on every call, so every over-budget call would summarise the same head anew and rewrite
the system prompt. With ``summary_reuse`` the worker remembers each history's last compaction in
a ``SessionStore`` and, when a later request starts with exactly the summarised head (same
messages, byte for byte, after the same pinned anchor), rewrites the request into the round trip
the caller could have sent: the anchor, then the messages from the remembered tail start, with
the remembered summary as ``options.previous_summary``. Everything after that is the ordinary
pipeline, so the answer is the round trip's. A new compaction (the window is over budget again)
updates the record, its summary built on the previous one as ``previous_summary`` does.

The session key is ``options.lease_key`` when given, else the default lease key's digest over
the history's first message: it stays the same while the history grows. The exact-content
check is the head digest, so sessions that share a first message never reuse each other's
summary (they only take turns in the store).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from context_manager.core.anchor import anchor_length
from context_manager.core.compaction.lease import default_lease_key
from context_manager.ports import RememberedCompaction, SessionStore
from context_manager.wire.messages import Message


@dataclass(frozen=True, slots=True)
class Recall:
    """The session of one call; ``reused`` is the record its request extends, if any."""

    key: str
    anchor_len: int
    reused: RememberedCompaction | None


def session_key(messages: Sequence[Message], lease_key: str | None) -> str:
    if lease_key is not None:
        return lease_key
    return default_lease_key(messages[:1])


def request_anchor_len(messages: Sequence[Message], requested: int) -> int:
    """Request messages up to and including the last pinned model-facing one (0: none)."""
    if requested == 0:
        return 0
    facing = [i for i, m in enumerate(messages) if m["role"] != "custom"]
    pinned = anchor_length([messages[i] for i in facing], requested)
    return facing[pinned - 1] + 1 if pinned else 0


async def recall(messages: Sequence[Message], lease_key: str | None, anchor_requested: int,
                 store: SessionStore) -> Recall:
    key = session_key(messages, lease_key)
    anchor_len = request_anchor_len(messages, anchor_requested)
    record = await store.get(key)
    if (record is None or record.anchor_len != anchor_len or len(messages) <= record.head_len
            or default_lease_key(messages[:record.head_len]) != record.head_digest):
        return Recall(key, anchor_len, None)
    return Recall(key, anchor_len, record)


def round_trip_messages(messages: list[Message], session: Recall) -> list[Message]:
    """The history a caller persisting the round trip would hold: anchor, then the tail."""
    assert session.reused is not None
    return messages[:session.anchor_len] + messages[session.reused.head_len:]


def with_round_trip(request: Any, session: Recall) -> Any:
    """``request`` (an ``AssembleRequest``) rewritten into the round trip of ``session``."""
    assert session.reused is not None
    options = replace(request.options, previous_summary=session.reused.summary)
    return replace(request, messages=round_trip_messages(request.messages, session), options=options)


async def remember(messages: Sequence[Message], session: Recall, applied: dict[str, Any],
                   store: SessionStore) -> None:
    """Keep this call's compaction, its tail start mapped back to the caller's request."""
    if not applied["compacted"] or applied.get("tail_start_index") is None:
        return
    tail = applied["tail_start_index"]
    if session.reused is not None:
        tail = tail - session.anchor_len + session.reused.head_len
    await store.put(session.key, RememberedCompaction(
        summary=applied["summary"], head_len=tail,
        head_digest=default_lease_key(messages[:tail]), anchor_len=session.anchor_len))
