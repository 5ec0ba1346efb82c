"""The file lease store (spec 03 §6.4–§6.6; Example 18) and its cross-instance behaviour."""

from __future__ import annotations

import asyncio

import pytest

from context_manager.adapters.fs_lease_store import (
    FsLeaseStore,
    LeaseDirError,
    encode_component,
    parse_record,
)
from context_manager.config.paths import resolve_lease_dir
from context_manager.core.compaction import lease
from context_manager.ports import LeaseRecord, LeaseStoreError, ManualClock

SCOPE = lease.SCOPE
DEFAULT_KEY = "60835e3a96b7c5d6ef2c3ffe8b162fd9549eaab3936718d32ef5e03edf3ac0d1"
RECORD = LeaseRecord("4242-0123456789abcdef0123456789abcdef", 1767225600000)


def run(coroutine):
    return asyncio.run(coroutine)


# --- Example 18: names, contents, temp file, directories -------------------------------------


@pytest.mark.parametrize(("key", "file_name"), [
    (DEFAULT_KEY, f"{DEFAULT_KEY}.json"),
    ("session-42", "session-42.json"),
    ("../escape/чат 42", "..%2Fescape%2F%D1%87%D0%B0%D1%82%2042.json"),
    ("../etc/passwd: weird key?", "..%2Fetc%2Fpasswd%3A%20weird%20key%3F.json"),
    ("a+b@c", "a%2Bb%40c.json"),
    ("", ".json"),
])
def test_example_18_lease_file_names(key, file_name):
    compose_dir = "/srv/proj"
    lease_dir = resolve_lease_dir("data/context-manager", {"III_COMPOSE_DIR": compose_dir})
    store = FsLeaseStore(lease_dir, create=False)
    assert str(store.record_path(SCOPE, key)) == (
        f"/srv/proj/data/context-manager/context_lease/{file_name}")


def test_example_18_lease_dir_resolution():
    assert resolve_lease_dir("./leases", {"III_COMPOSE_DIR": "/srv/proj"}) == "/srv/proj/leases"
    assert resolve_lease_dir("data/context-manager", {}, cwd=lambda: "/opt/w") == (
        "/opt/w/data/context-manager")
    assert resolve_lease_dir("~/.iii/data/context-manager", {"HOME": "/home/u"}) == (
        "/home/u/.iii/data/context-manager")
    assert resolve_lease_dir("/var/lib/cm", {"III_COMPOSE_DIR": "/srv/proj"}) == "/var/lib/cm"


def test_encoding_is_per_utf8_byte_with_uppercase_hex():
    assert encode_component("context_lease") == "context_lease"
    assert encode_component("Az09._-") == "Az09._-"
    assert encode_component("é/") == "%C3%A9%2F"


def test_temp_names():
    store = FsLeaseStore("/x", create=False)
    assert store.temp_path(SCOPE, "session-42").name == "session-42.json.tmp"
    assert store.temp_path(SCOPE, "").name == ".json.json.tmp"


def test_written_record_bytes_and_no_temp_left(tmp_path):
    store = FsLeaseStore(tmp_path)
    assert run(store.swap(SCOPE, "session-42", RECORD)) is None
    path = tmp_path / "context_lease" / "session-42.json"
    assert path.read_bytes() == b'{"nonce":"4242-0123456789abcdef0123456789abcdef","ts":1767225600000}'
    assert sorted(p.name for p in path.parent.iterdir()) == [".lock", "session-42.json"]
    assert run(store.get(SCOPE, "session-42")) == RECORD
    run(store.set(SCOPE, "session-42", None))
    assert not path.exists()
    run(store.set(SCOPE, "session-42", None))  # deleting a missing file is fine


def test_the_empty_key_is_a_valid_key(tmp_path):
    store = FsLeaseStore(tmp_path)
    run(store.set(SCOPE, "", RECORD))
    assert (tmp_path / "context_lease" / ".json").exists()
    assert run(store.get(SCOPE, "")) == RECORD


def test_construct_creates_the_directory_or_fails(tmp_path):
    target = tmp_path / "a" / "b"
    FsLeaseStore(target)
    assert target.is_dir()
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(LeaseDirError) as failure:
        FsLeaseStore(blocker / "sub")
    assert str(failure.value) == f"create lease_dir {blocker / 'sub'}: Not a directory (os error 20)"


def test_lazy_store_creates_nothing_until_a_lease_is_written(tmp_path):
    target = tmp_path / "lazy"
    store = FsLeaseStore(target, create=False)
    assert run(store.get(SCOPE, "k")) is None
    assert not target.exists()
    run(store.swap(SCOPE, "k", RECORD))
    assert (target / "context_lease" / "k.json").exists()


# --- read rules -------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ('{"nonce":"n","ts":5}', LeaseRecord("n", 5)),
    ('{"ts":-5,"nonce":"n","extra":[1]}', LeaseRecord("n", -5)),
    ('{"nonce":"n","ts":5.0}', None),
    ('{"nonce":"n","ts":"5"}', None),
    ('{"nonce":1,"ts":5}', None),
    ('{"nonce":"n","ts":true}', None),
    ('{"nonce":"n","ts":9223372036854775808}', None),
    ('{"nonce":"n"}', None),
    ("[]", None),
    ("", None),
    ("not json", None),
])
def test_parse_record(text, expected):
    assert parse_record(text) == expected


def test_unparseable_contents_read_as_free(tmp_path):
    store = FsLeaseStore(tmp_path)
    (tmp_path / "context_lease").mkdir()
    (tmp_path / "context_lease" / "k.json").write_text("garbage")
    assert run(store.get(SCOPE, "k")) is None
    assert run(lease.acquire(store, ManualClock(1), "k", 300_000)) is not None


def test_invalid_utf8_is_an_error_and_reads_as_busy(tmp_path):
    store = FsLeaseStore(tmp_path)
    (tmp_path / "context_lease").mkdir()
    (tmp_path / "context_lease" / "k.json").write_bytes(b'{"nonce":"\xff","ts":1}')
    with pytest.raises(LeaseStoreError):
        run(store.get(SCOPE, "k"))
    assert run(lease.acquire(store, ManualClock(1), "k", 300_000)) is None


def test_a_directory_in_place_of_the_record_reads_as_busy(tmp_path):
    store = FsLeaseStore(tmp_path)
    (tmp_path / "context_lease" / "k.json").mkdir(parents=True)
    assert run(lease.acquire(store, ManualClock(1), "k", 300_000)) is None


# --- sharing one lease_dir ------------------------------------------------------------------


def test_two_stores_on_one_directory_see_each_others_claims(tmp_path):
    """No cache: a claim written by another store (another process) is always seen."""
    first, second = FsLeaseStore(tmp_path), FsLeaseStore(tmp_path)
    clock = ManualClock(1_000_000)
    assert run(second.get(SCOPE, "k")) is None  # warm the key on the second store
    nonce = run(lease.acquire(first, clock, "k", 300_000))
    assert nonce is not None
    assert run(lease.acquire(second, clock, "k", 300_000)) is None
    assert run(second.get(SCOPE, "k")) == LeaseRecord(nonce, 1_000_000)
    # the loser gave the winner's claim back; the winner's release removes it
    run(lease.release(first, "k", nonce))
    assert run(second.get(SCOPE, "k")) is None
    assert run(lease.acquire(second, clock, "k", 300_000)) is not None


def test_an_expired_claim_on_disk_is_taken_over(tmp_path):
    store = FsLeaseStore(tmp_path)
    run(store.set(SCOPE, "k", LeaseRecord("crashed-holder", 1_000_000)))
    restarted = FsLeaseStore(tmp_path)
    assert run(lease.acquire(restarted, ManualClock(1_299_999), "k", 300_000)) is None
    nonce = run(lease.acquire(restarted, ManualClock(1_300_001), "k", 300_000))
    assert run(store.get(SCOPE, "k")) == LeaseRecord(nonce, 1_300_001)
    # the crashed holder's late release cannot clear the new claim
    run(lease.release(store, "k", "crashed-holder"))
    assert run(store.get(SCOPE, "k")) == LeaseRecord(nonce, 1_300_001)


def test_swap_is_exclusive_across_open_files(tmp_path):
    """Two threads with their own stores: every swap sees exactly the previous writer's record."""
    import threading

    stores = [FsLeaseStore(tmp_path) for _ in range(2)]
    seen: list[LeaseRecord | None] = []
    lock = threading.Lock()

    def worker(index: int) -> None:
        for n in range(200):
            prior = asyncio.run(stores[index].swap(SCOPE, "k", LeaseRecord(f"{index}", n)))
            with lock:
                seen.append(prior)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # 400 swaps form one chain: each prior was written exactly once, by the preceding swap
    assert seen.count(None) == 1
    priors = [r for r in seen if r is not None]
    assert len(priors) == len(set(priors)) == 399


def test_claim_writes_only_over_a_claim_no_longer_held(tmp_path):
    store = FsLeaseStore(tmp_path)
    held = lambda record: record is not None and record.nonce == "holder"  # noqa: E731
    assert run(store.claim(SCOPE, "k", LeaseRecord("holder", 1), held)) is None
    assert run(store.claim(SCOPE, "k", LeaseRecord("late", 2), held)) == LeaseRecord("holder", 1)
    assert run(store.get(SCOPE, "k")) == LeaseRecord("holder", 1)  # the late claim never landed


def test_racers_who_lose_never_write_over_the_winners_claim(tmp_path):
    """Racers that all read the key as free. With the reference get/swap/restore every loser
    writes its own claim and then the one it displaced back; with three racers or more, one
    loser can restore another loser's claim, which then outlives the winner's release (spec 03
    §6.3). Claiming checks and writes in one step: no loser ever writes."""

    class StaleReads(FsLeaseStore):
        written: list[str] = []

        async def get(self, scope, key):
            return None  # every racer read the key before anyone wrote it

        def _write(self, scope, key, record):
            self.written.append(record.nonce)
            super()._write(scope, key, record)

    store = StaleReads(tmp_path)
    clock = ManualClock(1_000)
    winner = run(lease.acquire(store, clock, "k", 300_000))
    losers = [run(lease.acquire(store, clock, "k", 300_000)) for _ in range(3)]
    assert winner is not None and losers == [None, None, None]
    assert store.written == [winner]
    run(lease.release(FsLeaseStore(tmp_path), "k", winner))
    assert [p.name for p in (tmp_path / "context_lease").iterdir()] == [".lock"]
