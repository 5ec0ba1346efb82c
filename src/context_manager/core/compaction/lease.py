"""The compaction lease: at most one summarisation of a history at a time (spec 03 §6.1–§6.3).

A claim is a ``{nonce, ts}`` record under the scope ``context_lease``. Readers apply the TTL
themselves (nothing deletes expired claims), so a crashed holder's claim is simply taken over
once it is ``ttl_ms`` old. A failing store never grants the lease: it reads as "busy".
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from collections.abc import Iterable
from typing import Any

from context_manager.ports import ClaimingLeaseStore, Clock, LeaseRecord, LeaseStore, LeaseStoreError
from context_manager.wire.canonical import canonical_message
from context_manager.wire.codec import dumps
from context_manager.wire.ints import I64_MAX, U64_MAX

SCOPE = "context_lease"

_LOG = logging.getLogger("context_manager.lease")
# An adapter that lets an I/O error through still must not grant the lease.
_STORE_ERRORS = (LeaseStoreError, OSError)


def default_lease_key(messages: Iterable[dict[str, Any]]) -> str:
    """SHA-256 over each canonical message followed by one zero byte, as lowercase hex (03 §6.2)."""
    digest = hashlib.sha256()
    for message in messages:
        digest.update(dumps(canonical_message(message)))
        digest.update(b"\x00")
    return digest.hexdigest()


def ttl_ms(lease_ttl_secs: int) -> int:
    """``lease_ttl_secs * 1000`` as the original computes it: a wrapping u64 read as i64."""
    product = (lease_ttl_secs * 1000) & U64_MAX
    return product - (U64_MAX + 1) if product > I64_MAX else product


def new_nonce() -> str:
    return f"{os.getpid()}-{uuid.uuid4().hex}"


def _warn(message: str, key: str, exc: BaseException) -> None:
    """A store failure; one the store has already reported is only noted at DEBUG."""
    level = logging.DEBUG if getattr(exc, "reported", False) else logging.WARNING
    _LOG.log(level, message, key, exc)


def is_active(record: LeaseRecord | None, now_ms: int, ttl: int) -> bool:
    """A claim counts while it is strictly younger than the TTL."""
    return record is not None and now_ms - record.ts < ttl


async def acquire(store: LeaseStore, clock: Clock, key: str, ttl: int) -> str | None:
    """Claim ``key``; the nonce to release it with, or ``None`` when someone else holds it."""
    now = clock.now_ms()
    try:
        existing = await store.get(SCOPE, key)
    except _STORE_ERRORS as exc:
        _warn("lease store unreadable for %s; treating it as busy: %s", key, exc)
        return None
    if is_active(existing, now, ttl):
        return None
    nonce = new_nonce()
    claims = isinstance(store, ClaimingLeaseStore)
    try:
        if isinstance(store, ClaimingLeaseStore):  # repeated so the type checker narrows ``store``
            prior = await store.claim(SCOPE, key, LeaseRecord(nonce, now), lambda r: is_active(r, now, ttl))
        else:
            prior = await store.swap(SCOPE, key, LeaseRecord(nonce, now))
    except _STORE_ERRORS as exc:
        _warn("lease store write failed for %s; treating it as busy: %s", key, exc)
        return None
    if is_active(prior, now, ttl):
        if claims:
            return None  # a racer holds it and our claim was never written
        # A racer claimed the key between our read and our write: give its claim back. With
        # three racers or more this can write back a loser's claim, which then outlives the
        # winner's release until its TTL (spec 03 §6.3); a ClaimingLeaseStore never does.
        try:
            await store.set(SCOPE, key, prior)
        except _STORE_ERRORS as exc:
            _warn("could not restore the lease of %s: %s", key, exc)
        return None
    return nonce


async def release(store: LeaseStore, key: str, nonce: str) -> None:
    """Drop our claim, unless it expired and somebody else has taken the key over since."""
    try:
        current = await store.get(SCOPE, key)
    except _STORE_ERRORS as exc:
        _warn("lease store unreadable on release of %s: %s", key, exc)
        return
    if current is None or current.nonce != nonce:
        return
    try:
        await store.set(SCOPE, key, None)
    except _STORE_ERRORS as exc:
        _warn("could not release the lease of %s: %s", key, exc)
