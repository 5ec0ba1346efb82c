"""The lease protocol and the default key (spec 03 §6.1–§6.3; Examples 14, 16, 17)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re

import pytest
from compaction_support import A, MemoryLeaseStore, U, X, decoded

from context_manager.adapters.fs_lease_store import FsLeaseStore
from context_manager.core.compaction import lease
from context_manager.ports import ClaimingLeaseStore, LeaseRecord, ManualClock
from context_manager.wire.codec import dumps

KEY = "K"
TTL = 300_000


# --- §6.2 default key (Example 14) ---------------------------------------------------------


def test_example_14_default_keys():
    hi = decoded(U("hi"))
    assert dumps(hi[0]) == b'{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}'
    assert lease.default_lease_key(hi) == hashlib.sha256(dumps(hi[0]) + b"\x00").hexdigest()
    assert lease.default_lease_key(hi) == "6369ab2a933eedf43fdcf7119f724811d3c96a15dd64c06076da2fae6a54da3c"
    assert lease.default_lease_key(decoded(U("ab"))) == (
        "5434cc56b80f8d1b4fb64bdf626da82589c7f89005263d33c71d6d0f8ddc8c2f")
    both_at_one = [decoded(U("a"))[0], decoded(U("b"))[0]]
    assert lease.default_lease_key(both_at_one) == (
        "4ed52c2c4676c4b1651a686d640f0622b368981edca67e488e6c9a9a6a7b50e0")
    example_10 = decoded(U(X(3000)), A("r0"), U(X(3000)), A("r1"), U("latest question"),
                         A("latest answer"))
    assert lease.default_lease_key(example_10) == (
        "6a124d15295145fb5a0a412a23b207b09469e6f32165dd8ec2aab31f69c7d683")
    assert lease.default_lease_key([]) == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")


def test_default_key_ignores_the_callers_json_layout():
    from context_manager.wire.decode import decode_message

    a = decode_message({"timestamp": 1, "content": [{"text": "hi", "type": "text"}], "role": "user",
                        "extra": True})
    assert lease.default_lease_key([a]) == lease.default_lease_key(decoded(U("hi")))


# --- §6.1 / §6.3 pieces -----------------------------------------------------------------------


def test_nonce_shape():
    nonce = lease.new_nonce()
    assert re.fullmatch(rf"{os.getpid()}-[0-9a-f]{{32}}", nonce)
    assert lease.new_nonce() != nonce


@pytest.mark.parametrize(("secs", "expected"), [
    (300, 300_000), (0, 0), (1, 1000),
    ((1 << 63) // 1000, ((1 << 63) // 1000) * 1000),
    ((1 << 63) // 1000 + 1, ((1 << 63) // 1000 + 1) * 1000 - (1 << 64)),  # wraps negative
    ((1 << 64) // 1000 + 1, ((1 << 64) // 1000 + 1) * 1000 - (1 << 64)),  # wraps past 2^64
])
def test_ttl_ms_wraps_like_the_original(secs, expected):
    assert lease.ttl_ms(secs) == expected


def test_active_is_strict():
    record = LeaseRecord("n", 1_000_000)
    assert lease.is_active(record, 1_299_999, TTL)
    assert not lease.is_active(record, 1_300_000, TTL)
    assert not lease.is_active(None, 0, TTL)
    assert not lease.is_active(record, 1_000_000, 0)  # a TTL of 0 never holds


def acquire(store, clock, key=KEY, ttl=TTL):
    return asyncio.run(lease.acquire(store, clock, key, ttl))


def test_acquire_writes_a_claim_and_release_deletes_it():
    store, clock = MemoryLeaseStore(), ManualClock(1_000_000)
    nonce = acquire(store, clock)
    assert nonce is not None
    assert store.records[(lease.SCOPE, KEY)] == LeaseRecord(nonce, 1_000_000)
    assert acquire(store, clock) is None  # held
    asyncio.run(lease.release(store, KEY, nonce))
    assert store.records == {}
    assert acquire(store, clock) is not None


def test_boundaries_of_a_foreign_claim():
    store = MemoryLeaseStore({(lease.SCOPE, KEY): LeaseRecord("foreign-holder", 1_000_000)})
    assert acquire(store, ManualClock(1_000_000)) is None
    assert acquire(store, ManualClock(1_299_999)) is None
    assert store.records[(lease.SCOPE, KEY)] == LeaseRecord("foreign-holder", 1_000_000)
    nonce = acquire(store, ManualClock(1_300_000))
    assert store.records[(lease.SCOPE, KEY)] == LeaseRecord(nonce, 1_300_000)


def test_example_16_takeover_then_a_stale_release():
    store = MemoryLeaseStore()
    h1 = acquire(store, ManualClock(0))
    h2 = acquire(store, ManualClock(300_001))
    assert h1 and h2 and h1 != h2
    asyncio.run(lease.release(store, KEY, h1))  # H1 finally finishes
    assert store.records[(lease.SCOPE, KEY)] == LeaseRecord(h2, 300_001)
    asyncio.run(lease.release(store, KEY, h2))
    assert store.records == {}


def test_a_failing_store_never_grants_the_lease():
    store = MemoryLeaseStore(fail=True)
    assert acquire(store, ManualClock(0)) is None
    asyncio.run(lease.release(store, KEY, "whatever"))  # logged, not raised


class _ForgetfulSwap(MemoryLeaseStore):
    async def swap(self, scope, key, record):
        raise OSError("disk full")


def test_an_unwrapped_os_error_still_reads_as_busy():
    assert acquire(_ForgetfulSwap(), ManualClock(0)) is None


class _YieldingStore(MemoryLeaseStore):
    """Yields to the event loop before every operation, so concurrent acquirers interleave."""

    def __init__(self):
        super().__init__()
        self.states: list[tuple[str, LeaseRecord | None]] = []

    async def get(self, scope, key):
        await asyncio.sleep(0)
        return await super().get(scope, key)

    async def swap(self, scope, key, record):
        await asyncio.sleep(0)
        prior = await super().swap(scope, key, record)
        self.states.append(("swap", self.records.get((scope, key))))
        return prior

    async def set(self, scope, key, record):
        await asyncio.sleep(0)
        await super().set(scope, key, record)
        self.states.append(("set", self.records.get((scope, key))))


def test_example_17_two_acquirers_in_one_process():
    store, clock = _YieldingStore(), ManualClock(5)

    async def both():
        return await asyncio.gather(
            lease.acquire(store, clock, KEY, TTL), lease.acquire(store, clock, KEY, TTL))

    first, second = asyncio.run(both())
    assert first is not None and second is None
    winner = LeaseRecord(first, 5)
    assert store.records[(lease.SCOPE, KEY)] == winner
    (_, a_swap), (_, b_swap), (_, b_restore) = store.states
    assert a_swap == winner
    assert b_swap != winner and b_swap.ts == 5  # the short window holding B's claim
    assert b_restore == winner


class _ClaimingMemoryStore(_YieldingStore):
    async def claim(self, scope, key, record, held):
        await asyncio.sleep(0)
        prior = self.records.get((scope, key))
        if not held(prior):
            self.records[(scope, key)] = record
        self.states.append(("claim", self.records.get((scope, key))))
        return prior


def test_only_stores_with_claim_are_claiming_stores(tmp_path):
    assert isinstance(FsLeaseStore(tmp_path, create=False), ClaimingLeaseStore)
    assert isinstance(_ClaimingMemoryStore(), ClaimingLeaseStore)
    assert not isinstance(MemoryLeaseStore(), ClaimingLeaseStore)


def test_example_17_with_a_claiming_store_the_loser_never_writes():
    store, clock = _ClaimingMemoryStore(), ManualClock(5)

    async def both():
        return await asyncio.gather(
            lease.acquire(store, clock, KEY, TTL), lease.acquire(store, clock, KEY, TTL))

    first, second = asyncio.run(both())
    assert first is not None and second is None
    winner = LeaseRecord(first, 5)
    assert store.records[(lease.SCOPE, KEY)] == winner
    assert store.states == [("claim", winner), ("claim", winner)]


def test_release_of_a_missing_claim_does_nothing():
    store = MemoryLeaseStore()
    asyncio.run(lease.release(store, KEY, "n"))
    assert [op for op, _ in store.log] == ["get"]
