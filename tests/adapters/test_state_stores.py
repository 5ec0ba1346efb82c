"""Leases and remembered compactions in the engine's state store (spec 03 §6.7), the store factory
and how a failing state store reads: busy leases and missed summaries, one warning line each."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from compaction_support import FakeSummarizer

from context_manager.adapters.fs_lease_store import FsLeaseStore
from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.adapters.state_lease_store import StateLeaseStore
from context_manager.adapters.state_session_store import StateSessionStore
from context_manager.adapters.stores import (
    build_lease_store,
    build_session_store,
    describe_lease_store,
    lease_store_changed,
    session_store_changed,
)
from context_manager.adapters.traced import TracedSwappingLeaseStore
from context_manager.core.compaction import lease
from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.ports import (
    ClaimingLeaseStore,
    InvokeError,
    LeaseRecord,
    LeaseStoreError,
    ManualClock,
    RememberedCompaction,
)
from context_manager.wire.errors import HandlerError
from testengine.state import StateStore
from tests.core.compaction.test_inline_compaction import EXAMPLE_10_KEY, OVERFLOW, assemble, context, request

LEASE_WARNING = ("state store unusable for compaction leases; every compaction reads as busy until it "
                 "answers: ")
SESSION_WARNING = "state store unusable for remembered compactions; summaries are not reused until it answers: "


class EngineState:
    """The ``Invoke`` port over the test engine's state functions, without a socket; ``fail``
    answers every call with that error body, ``reply`` replaces every result."""

    def __init__(self) -> None:
        self.store = StateStore()
        self.calls: list[tuple[str, dict[str, Any], int]] = []
        self.fail: tuple[str, str] | None = None
        self.reply: Any = ...
        self.hang = False

    async def __call__(self, function_id: str, payload: dict[str, Any], timeout_ms: int) -> Any:
        self.calls.append((function_id, payload, timeout_ms))
        if self.hang:
            await asyncio.sleep(3600)
        if self.fail is not None:
            raise InvokeError(f"remote error ({self.fail[0]}): {self.fail[1]}")
        if self.reply is not ...:
            return self.reply
        body = self.store.call(function_id, payload)
        if "error" in body:
            raise InvokeError(f"remote error ({body['error']['code']}): {body['error']['message']}")
        return body.get("result")


ABSENT = ("function_not_found", "Function state::get not found in namespace default.")


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


# --- the lease store ------------------------------------------------------------------------


def test_records_are_stored_as_nonce_and_ts_with_a_5000_ms_bound() -> None:
    state = EngineState()
    store = StateLeaseStore(state, logging.getLogger("t"))
    assert run(store.get("context_lease", "k")) is None
    run(store.set("context_lease", "k", LeaseRecord("n1", 10)))
    assert state.store.groups == {"context_lease": {"k": {"nonce": "n1", "ts": 10}}}
    assert run(store.get("context_lease", "k")) == LeaseRecord("n1", 10)
    assert run(store.swap("context_lease", "k", LeaseRecord("n2", 20))) == LeaseRecord("n1", 10)
    assert run(store.swap("context_lease", "other", LeaseRecord("n3", 30))) is None
    run(store.set("context_lease", "k", None))
    assert state.store.groups == {"context_lease": {"other": {"nonce": "n3", "ts": 30}}}
    assert state.calls == [
        ("state::get", {"scope": "context_lease", "key": "k"}, 5000),
        ("state::set", {"scope": "context_lease", "key": "k", "value": {"nonce": "n1", "ts": 10}}, 5000),
        ("state::get", {"scope": "context_lease", "key": "k"}, 5000),
        ("state::update", {"scope": "context_lease", "key": "k",
                           "ops": [{"type": "set", "path": "", "value": {"nonce": "n2", "ts": 20}}]}, 5000),
        ("state::update", {"scope": "context_lease", "key": "other",
                           "ops": [{"type": "set", "path": "", "value": {"nonce": "n3", "ts": 30}}]}, 5000),
        ("state::delete", {"scope": "context_lease", "key": "k"}, 5000),
    ]


@pytest.mark.parametrize("stored", [{"nonce": 1, "ts": 2}, {"nonce": "n"}, "text", [1], {"nonce": "n", "ts": 2**63},
                                    {"nonce": "n", "ts": True}])
def test_a_stored_value_that_is_not_a_record_is_free(stored: Any) -> None:
    state = EngineState()
    state.store.groups = {"context_lease": {"k": stored}}
    store = StateLeaseStore(state, logging.getLogger("t"))
    assert run(store.get("context_lease", "k")) is None
    assert run(store.swap("context_lease", "k", LeaseRecord("n", 1))) is None


def test_extra_members_of_a_record_are_ignored() -> None:
    state = EngineState()
    state.store.groups = {"context_lease": {"k": {"nonce": "n", "ts": 5, "host": "a"}}}
    assert run(StateLeaseStore(state, logging.getLogger("t")).get("context_lease", "k")) == LeaseRecord("n", 5)


@pytest.mark.parametrize(("reply", "reason"), [
    (None, "state::update: no reply value"),
    ("ok", "state::update: the reply is not an {old_value, new_value} object"),
    ({"new_value": {}}, "state::update: the reply is not an {old_value, new_value} object"),
])
def test_a_swap_without_a_usable_reply_is_an_error_never_a_win(reply: Any, reason: str) -> None:
    state = EngineState()
    state.reply = reply
    with pytest.raises(LeaseStoreError) as failure:
        run(StateLeaseStore(state, logging.getLogger("t")).swap("context_lease", "k", LeaseRecord("n", 1)))
    assert str(failure.value) == reason


def test_it_is_a_plain_store_so_the_protocol_swaps_and_restores() -> None:
    state = EngineState()
    store = StateLeaseStore(state, logging.getLogger("t"))
    assert not isinstance(store, ClaimingLeaseStore)
    clock = ManualClock(1_000_000)
    nonce = run(lease.acquire(store, clock, "k", 300_000))
    assert nonce is not None and state.store.groups["context_lease"]["k"] == {"nonce": nonce, "ts": 1_000_000}
    assert run(lease.acquire(store, clock, "k", 300_000)) is None  # held
    run(lease.release(store, "k", nonce))
    assert state.store.groups == {}


def test_the_unusable_store_is_logged_once_until_it_answers_again(caplog: pytest.LogCaptureFixture) -> None:
    state = EngineState()
    state.fail = ABSENT
    store = StateLeaseStore(state, logging.getLogger("context_manager.test"))
    clock = ManualClock(1_000_000)
    caplog.set_level(logging.DEBUG)
    for _ in range(3):
        assert run(lease.acquire(store, clock, "k", 300_000)) is None
    assert warnings(caplog) == [LEASE_WARNING + "state::get: remote error (function_not_found): "
                                "Function state::get not found in namespace default."]
    state.fail = None
    nonce = run(lease.acquire(store, clock, "k", 300_000))
    assert nonce is not None
    assert "state store answering again; compaction leases are taken normally" in caplog.messages
    state.fail = ("UPDATE_ERROR", "disk full")
    run(lease.release(store, "k", nonce))
    assert run(lease.acquire(store, clock, "k", 300_000)) is None
    assert warnings(caplog)[1:] == [LEASE_WARNING + "state::get: remote error (UPDATE_ERROR): disk full"]


def test_a_timeout_is_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    state = EngineState()
    state.hang = True
    store = StateLeaseStore(state, logging.getLogger("t"), timeout_ms=20)
    with pytest.raises(LeaseStoreError) as failure:
        run(store.get("context_lease", "k"))
    assert str(failure.value) == "state::get: timed out after 20ms" and failure.value.reported
    assert warnings(caplog) == [LEASE_WARNING + "state::get: timed out after 20ms"]


@pytest.mark.parametrize("fail", [ABSENT, ("GET_ERROR", "store offline")])
def test_an_unusable_state_store_falls_through_like_a_held_lease(
        caplog: pytest.LogCaptureFixture, fail: tuple[str, str]) -> None:
    state = EngineState()
    state.fail = fail
    store = StateLeaseStore(state, logging.getLogger("context_manager.test"))
    summarizer = FakeSummarizer()
    for _ in range(2):
        with pytest.raises(HandlerError) as failure:
            assemble(request(system_prompt=None), context(summarizer, store))
        assert failure.value.wire_message == OVERFLOW  # exactly as test_example_19_busy_lease
    assert summarizer.calls == 0
    assert [c[:2] for c in state.calls] == [("state::get", {"scope": "context_lease", "key": EXAMPLE_10_KEY})] * 2
    assert len(warnings(caplog)) == 1 and warnings(caplog)[0].startswith(LEASE_WARNING)


# --- the session store ----------------------------------------------------------------------


REMEMBERED = RememberedCompaction("## Goal\n- ship", 4, "ab" * 32, 1)


def test_a_remembered_compaction_round_trips_until_its_ttl() -> None:
    state, clock = EngineState(), ManualClock(1_000_000)
    store = StateSessionStore(state, clock, 60, logging.getLogger("t"))
    assert run(store.get("s1")) is None
    run(store.put("s1", REMEMBERED))
    assert state.store.groups == {"context_session": {"s1": {
        "summary": "## Goal\n- ship", "head_len": 4, "head_digest": "ab" * 32, "anchor_len": 1,
        "expires_at": 1_060_000}}}
    clock.advance(59_999)
    assert run(store.get("s1")) == REMEMBERED
    clock.advance(1)  # exactly the TTL: expired, and deleted
    assert run(store.get("s1")) is None
    assert state.store.groups == {}
    assert [c[0] for c in state.calls] == ["state::get", "state::set", "state::get", "state::get", "state::delete"]


def test_a_second_process_sees_what_the_first_remembered() -> None:
    state, clock = EngineState(), ManualClock(5)
    first = StateSessionStore(state, clock, 3600, logging.getLogger("t"))
    second = StateSessionStore(state, clock, 3600, logging.getLogger("t"))
    run(first.put("s", REMEMBERED))
    assert run(second.get("s")) == REMEMBERED


@pytest.mark.parametrize("stored", [
    "text", None, [], {"summary": "s", "head_len": 1, "head_digest": "d", "anchor_len": 0},
    {"summary": 1, "head_len": 1, "head_digest": "d", "anchor_len": 0, "expires_at": 10**12},
    {"summary": "s", "head_len": -1, "head_digest": "d", "anchor_len": 0, "expires_at": 10**12},
    {"summary": "s", "head_len": 1, "head_digest": "d", "anchor_len": True, "expires_at": 10**12},
    {"summary": "s", "head_len": 1, "head_digest": "d", "anchor_len": 0, "expires_at": "never"},
])
def test_an_unparseable_record_is_a_miss_and_is_deleted(stored: Any) -> None:
    state = EngineState()
    state.store.groups = {"context_session": {"s": stored}}
    assert run(StateSessionStore(state, ManualClock(0), 60, logging.getLogger("t")).get("s")) is None
    assert state.store.groups == ({"context_session": {"s": None}} if stored is None else {})


def test_failures_are_misses_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    state = EngineState()
    state.fail = ABSENT
    store = StateSessionStore(state, ManualClock(0), 60, logging.getLogger("t"))
    caplog.set_level(logging.INFO)
    assert run(store.get("s")) is None
    run(store.put("s", REMEMBERED))
    assert run(store.get("s")) is None
    assert warnings(caplog) == [SESSION_WARNING + "state::get: remote error (function_not_found): "
                                "Function state::get not found in namespace default."]
    state.fail = None
    run(store.put("s", REMEMBERED))
    assert run(store.get("s")) == REMEMBERED
    assert "state store answering again; remembered compactions are kept" in caplog.messages


def test_summary_reuse_over_the_state_store_reuses_the_first_summary() -> None:
    from tests.core.compaction.test_summary_reuse import REUSE, Summaries, _assemble, _grown

    state, summaries = EngineState(), Summaries()
    store = StateSessionStore(state, ManualClock(1_000), 3600, logging.getLogger("t"))
    first = _assemble(_grown(12), REUSE, summaries, store)  # type: ignore[arg-type]
    asked = len(summaries.prompts)
    assert first["applied"]["compacted"] is True and asked >= 1
    second = _assemble(_grown(13), REUSE, summaries, store)  # type: ignore[arg-type]
    assert len(summaries.prompts) == asked
    assert second["applied"]["summary_reused"] is True
    assert list(state.store.groups) == ["context_session"]


# --- the factory ----------------------------------------------------------------------------


def test_the_factory_builds_what_the_config_names(tmp_path: Path) -> None:
    state = EngineState()
    file_config = replace(DEFAULT_CONFIG, lease_dir=str(tmp_path / "leases"))
    assert isinstance(build_lease_store(file_config, state), FsLeaseStore)
    assert (tmp_path / "leases").is_dir()
    state_config = replace(DEFAULT_CONFIG, lease_store="state", lease_dir=str(tmp_path / "never"))
    assert isinstance(build_lease_store(state_config, state), StateLeaseStore)
    assert not (tmp_path / "never").exists()  # no lease directory with the state store
    assert isinstance(build_session_store(DEFAULT_CONFIG, state), MemorySessionStore)
    assert isinstance(build_session_store(replace(DEFAULT_CONFIG, session_store="state"), state), StateSessionStore)
    assert state.calls == []


def test_a_traced_state_store_stays_a_plain_store(tmp_path: Path) -> None:
    class On:
        enabled = True

        def span(self, *args: Any, **kwargs: Any) -> Any:
            from context_manager.ports import NO_TELEMETRY
            return NO_TELEMETRY.span("x")

        def count(self, *args: Any) -> None:
            pass

    config = replace(DEFAULT_CONFIG, lease_store="state")
    store = build_lease_store(config, EngineState(), On())  # type: ignore[arg-type]
    assert isinstance(store, TracedSwappingLeaseStore) and not isinstance(store, ClaimingLeaseStore)


def test_what_a_reload_rebuilds() -> None:
    base = DEFAULT_CONFIG
    assert not lease_store_changed(base, replace(base, lease_ttl_secs=5))
    assert lease_store_changed(base, replace(base, lease_dir="elsewhere"))
    assert lease_store_changed(base, replace(base, lease_store="state"))
    on_state = replace(base, lease_store="state")
    assert not lease_store_changed(on_state, replace(on_state, lease_dir="elsewhere"))
    assert lease_store_changed(on_state, base)
    assert not session_store_changed(base, replace(base, session_ttl_secs=5))
    assert session_store_changed(base, replace(base, session_store="state"))
    shared = replace(base, session_store="state")
    assert session_store_changed(shared, replace(shared, session_ttl_secs=5))
    assert describe_lease_store(base) == "lease_dir=data/context-manager"
    assert describe_lease_store(on_state) == "lease_store=state"


def test_a_one_shot_call_without_an_engine_uses_the_file_and_memory_stores(tmp_path: Path) -> None:
    from context_manager.api import LIBRARY_SESSIONS, build_context
    from context_manager.config.parse import parse_config_value

    config = parse_config_value({"lease_store": "state", "session_store": "state",
                                 "lease_dir": str(tmp_path / "leases")})
    ctx = build_context(config, lambda system, prompt, model: "summary")
    assert isinstance(ctx.lease_store, FsLeaseStore) and ctx.lease_store.directory == tmp_path / "leases"
    assert ctx.session_store is LIBRARY_SESSIONS


def test_a_summary_computed_ahead_keeps_its_retained_items_and_a_remembered_one_writes_none():
    from context_manager.adapters.state_session_store import record_from_value, record_value

    plain = RememberedCompaction("s", 3, "d", 0)
    assert record_value(plain, 10) == {"summary": "s", "head_len": 3, "head_digest": "d", "anchor_len": 0,
                                       "expires_at": 10}
    ahead = RememberedCompaction("s", 3, "d", 0, retained_items=4)
    assert record_value(ahead, 10)["retained_items"] == 4
    assert record_from_value(record_value(ahead, 10), 5) == ahead
    assert record_from_value({**record_value(ahead, 10), "retained_items": -1}, 5) is None
