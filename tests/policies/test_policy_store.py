"""Versions under concurrent publishes, a failing state store at each step of publish and
activate, malformed documents, and the write token."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from context_manager import api
from context_manager.adapters.stores import build_policies
from context_manager.api import call_async
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.handlers.context import HandlerContext
from context_manager.wire.errors import CallError
from tests.policies.support import EngineState, Refused, RoomBus, budget, library_bus, memory_room, state_room


@pytest.fixture(autouse=True)
def fresh_library_policies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "LIBRARY_POLICIES", build_policies(DEFAULT_CONFIG, None))  # type: ignore[arg-type]


# --- concurrent publishes ------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["memory", "state"])
def test_fifty_concurrent_publishes_get_versions_1_to_50_and_none_is_lost(backend: str) -> None:
    state = EngineState()
    state.yields = 3  # every state call lets the other publishes run first
    room = memory_room() if backend == "memory" else state_room(state)
    ctx = HandlerContext(policies=room)

    async def publish_all() -> list[dict[str, Any]]:
        return await asyncio.gather(*(
            call_async("context::policy::publish", {"surface": "budget", "namespace": "acme",
                                                    "document": budget(round(0.01 * n, 2))}, ctx)
            for n in range(1, 51)))

    answers = asyncio.run(publish_all())
    assert sorted(a["version"] for a in answers) == list(range(1, 51))
    listed = asyncio.run(call_async("context::policy::list", {"surface": "budget", "namespace": "acme"}, ctx))
    assert [v["version"] for v in listed["versions"]] == list(range(50, 0, -1))
    # Every document is kept under the version its publish answered.
    by_version = {v["version"]: v["document"]["headroom"] for v in listed["versions"]}
    assert sorted(by_version.values()) == [round(0.01 * n, 2) for n in range(1, 51)]
    assert sum(v["is_active"] for v in listed["versions"]) == 1


# --- a failing state store -----------------------------------------------------------------

PUBLISH_STEPS = ["state::update", "state::set", "state::update"]  # counter, record, index
ACTIVATE_STEPS = ["state::get", "state::update"]  # record, index


def _published_twice() -> tuple[EngineState, RoomBus]:
    state = EngineState()
    bus = RoomBus(state_room(state))
    bus("context::policy::publish", {"surface": "budget", "namespace": "acme", "document": budget(0.2)})
    bus("context::policy::publish", {"surface": "budget", "namespace": "acme", "document": budget(0.3)})
    bus("context::policy::activate", {"id": "budget:acme:1"})
    return state, bus


def _in_force(bus: RoomBus) -> Any:
    return bus("context::policy::resolve", {"namespace": "acme"})["sources"]["budget"]["id"]


@pytest.mark.parametrize("step", range(1, len(PUBLISH_STEPS) + 1))
def test_a_publish_failing_at_any_step_leaves_the_previous_version_in_force(step: int) -> None:
    state, bus = _published_twice()
    state.calls.clear()
    state.fail_at = step
    answer = bus("context::policy::publish", {"surface": "budget", "namespace": "acme", "document": budget(0.5)})
    assert state.calls == PUBLISH_STEPS[:step]
    assert isinstance(answer, Refused)
    assert answer.message.startswith("handler error: context/policy_store: policy store failed, nothing changed: ")
    state.fail_at = None
    # In force in this process and in a fresh one.
    assert _in_force(bus) == "budget:acme:1"
    assert _in_force(RoomBus(state_room(state))) == "budget:acme:1"


@pytest.mark.parametrize("step", range(1, len(ACTIVATE_STEPS) + 1))
def test_an_activation_failing_at_any_step_leaves_the_previous_version_in_force(step: int) -> None:
    state, bus = _published_twice()
    state.calls.clear()
    state.fail_at = step
    answer = bus("context::policy::activate", {"id": "budget:acme:2"})
    assert state.calls == ACTIVATE_STEPS[:step]
    assert isinstance(answer, Refused) and "context/policy_store" in answer.message
    state.fail_at = None
    assert _in_force(bus) == "budget:acme:1"
    assert _in_force(RoomBus(state_room(state))) == "budget:acme:1"


def test_a_withdrawal_that_fails_leaves_the_version_in_force() -> None:
    state, bus = _published_twice()
    for step in (1, 2):
        state.calls.clear()
        state.fail_at = step
        assert isinstance(bus("context::policy::withdraw", {"surface": "budget", "namespace": "acme"}), Refused)
        state.fail_at = None
        assert _in_force(bus) == "budget:acme:1"


def test_context_calls_keep_the_last_policies_read_while_the_store_fails(caplog: pytest.LogCaptureFixture) -> None:
    state, bus = _published_twice()
    assert _in_force(bus) == "budget:acme:1"
    state.fail_at = len(state.calls) + 1
    assert _in_force(bus) == "budget:acme:1"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "state store unusable for policies; the last policies read stay in force and none can be changed: "
        f"state::get: remote error (SET_ERROR): injected failure of call {state.fail_at}"]


# --- malformed documents -------------------------------------------------------------------

MALFORMED: list[tuple[dict[str, Any], str]] = [
    ({"surface": "budget", "document": {"headroom": 0.1}}, "document: missing member `version`"),
    ({"surface": "budget", "document": {"version": 2, "headroom": 0.1}}, "document.version: expected 3, got integer `2`"),
    ({"surface": "budget", "document": {"version": 3}}, "document: missing member `headroom`"),
    ({"surface": "budget", "document": budget(1.0)}, "document.headroom: expected a fraction in [0, 1), got floating point `1.0`"),
    ({"surface": "budget", "document": budget(-0.1)}, "document.headroom: expected a fraction in [0, 1), got floating point `-0.1`"),
    ({"surface": "budget", "document": budget("0.1")}, 'document.headroom: expected a fraction in [0, 1), got string "0.1"'),
    ({"surface": "budget", "document": budget(0.1, history_mode="keep")},
     'document.history_mode: expected "summarize" or "drop_oldest", got string "keep"'),
    ({"surface": "budget", "document": budget(0.1, max_history_tokens=31999)},
     "document.max_history_tokens: expected null or an integer from 32000 to 2147483647, got integer `31999`"),
    ({"surface": "budget", "document": budget(0.1, eager_compaction={"mode": "at_fill"})},
     "document.eager_compaction: missing member `at`"),
    ({"surface": "budget", "document": budget(0.1, eager_compaction={"mode": "at_fill", "at": 0})},
     "document.eager_compaction.at: expected a fraction in (0, 1], got integer `0`"),
    ({"surface": "budget", "document": budget(0.1, eager_compaction={"mode": "soon"})},
     'document.eager_compaction.mode: expected "off" or "at_fill", got string "soon"'),
    ({"surface": "budget", "document": budget(0.1, extra=1)},
     "document: unknown member `extra`, expected one of `eager_compaction`, `headroom`, `history_mode`, "
     "`max_history_tokens`, `version`"),
    ({"surface": "retention", "document": {"verbatim_turns": -1}},
     "document.verbatim_turns: expected a non-negative integer, got -1"),
    ({"surface": "retention", "document": None}, "document: expected an object, got null"),
    ({"surface": "settings", "document": {"tail_turns": "two"}},
     'document.tail_turns: invalid type: string "two", expected usize'),
    ({"surface": "settings", "document": []}, "document: expected an object, got sequence"),
    ({"surface": "budget"}, "request: missing member `document`"),
    ({"surface": "tools", "document": {}}, 'surface: expected "budget", "retention" or "settings", got string "tools"'),
    ({"surface": "retention", "model_id": "gpt-a", "document": {}}, "model_id: the retention surface is not tagged by model"),
    ({"surface": "budget", "namespace": "ACME", "document": budget(0.1)},
     "namespace: a namespace is segments of 1 to 64 characters a-z, 0-9, _ or - separated by /"),
    ({"surface": "budget", "document": budget(0.1), "extra": 1},
     "request: unknown member `extra`, expected one of `document`, `model_id`, `namespace`, `surface`, `token`"),
]


@pytest.mark.parametrize(("payload", "detail"), MALFORMED)
def test_a_malformed_request_is_an_invalid_request_naming_the_path_and_stores_nothing(payload: dict[str, Any],
                                                                                      detail: str) -> None:
    call = library_bus()
    assert call("context::policy::publish", payload) == Refused(f"handler error: context/invalid_request: {detail}")
    assert call("context::policy::list", {"surface": "budget"}) == {"versions": []}
    assert api.LIBRARY_POLICIES.store._counters == {}  # type: ignore[attr-defined]


@pytest.mark.parametrize("key", ["lease_dir", "lease_store", "session_store", "session_ttl_secs", "lease_ttl_secs",
                                 "summarizer_timeout_ms", "policy_write_token", "retention", "nope"])
def test_settings_refuse_structural_and_unknown_keys(key: str) -> None:
    answer = library_bus()("context::policy::publish", {"surface": "settings", "document": {key: None}})
    assert isinstance(answer, Refused)
    assert answer.message.startswith(f"handler error: context/invalid_request: document: unknown or structural key `{key}`")


def test_a_settings_profile_changes_the_keys_left_at_their_default() -> None:
    call = library_bus({"tail_turns": 4})
    call("context::policy::publish", {"surface": "settings", "namespace": "acme", "document": {"profile": "recommended"}})
    config = call("context::policy::resolve", {"namespace": "acme"})["config"]
    assert (config["profile"], config["summary_check"], config["overflow_fallback"], config["tail_turns"]) == (
        "recommended", "append", "drop_oldest", 4)


# --- the write token -----------------------------------------------------------------------

TOKEN = "s3cret-token"


def test_the_write_token_guards_publish_activate_and_withdraw(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    call = library_bus({"policy_write_token": TOKEN})
    publish = {"surface": "budget", "namespace": "acme", "document": budget(0.2)}
    refused = Refused("handler error: context/unauthorized: a valid token is required to change policies")
    for token in (None, "wrong", TOKEN + "x", "", 7):
        extra = {} if token is None else {"token": token}
        assert call("context::policy::publish", {**publish, **extra}) == refused
    assert call("context::policy::list", {"surface": "budget", "namespace": "acme"}) == {"versions": []}
    published = call("context::policy::publish", {**publish, "token": TOKEN})
    assert published["version"] == 1
    call("context::policy::publish", {**publish, "token": TOKEN})
    assert call("context::policy::activate", {"id": "budget:acme:1"}) == refused
    assert call("context::policy::withdraw", {"surface": "budget", "namespace": "acme", "token": "no"}) == refused
    assert call("context::policy::resolve", {"namespace": "acme"})["sources"]["budget"]["version"] == 2
    assert call("context::policy::activate", {"id": "budget:acme:1", "token": TOKEN})["is_active"] is True
    answers = [published, call("context::policy::resolve", {"namespace": "acme"}),
               call("context::policy::list", {"surface": "budget", "namespace": "acme"}),
               call("context::policy::withdraw", {"surface": "budget", "namespace": "acme", "token": TOKEN})]
    assert TOKEN not in repr(answers)
    assert TOKEN not in caplog.text


def test_without_a_store_the_policy_functions_answer_an_error() -> None:
    ctx = HandlerContext(config=WorkerConfig())
    with pytest.raises(CallError) as caught:
        asyncio.run(call_async("context::policy::resolve", {}, ctx))
    assert caught.value.message == "handler error: context/policy_store: this process has no policy store"


def test_a_process_that_has_not_read_a_version_fails_the_call_until_the_store_answers() -> None:
    from tests.policies.test_policy_resolution import request

    state, bus = _published_twice()
    fresh = RoomBus(state_room(state))
    assert fresh("context::policy::resolve", {})["sources"]["budget"] == {"kind": "worker_config"}  # index read
    bus("context::policy::publish", {"surface": "budget", "document": budget(0.3)})  # org-global, version 1
    state.fail_at = len(state.calls) + 2  # the index reads, the version does not
    answer = fresh("context::assemble", request())
    assert isinstance(answer, Refused) and answer.message.startswith(
        "handler error: context/policy_store: policy store failed: state::get: ")
    state.fail_at = None
    assert fresh("context::assemble", request())["applied"]["policy"]["sources"]["budget"]["id"] == "budget::1"


def test_after_a_timed_out_index_read_the_index_is_not_asked_for_again_for_a_second() -> None:
    from context_manager.adapters.policy_codec import ConfigPolicyCodec
    from context_manager.adapters.state_policy_store import StatePolicyStore
    from context_manager.core.policies.room import PolicyRoom

    state = EngineState()
    now = [100.0]
    store = StatePolicyStore(state, logging.getLogger("tests.policies"), timeout_ms=50, monotonic=lambda: now[0])
    bus = RoomBus(PolicyRoom(store, ConfigPolicyCodec()))
    bus("context::policy::publish", {"surface": "budget", "document": budget(0.2)})
    assert _in_force(bus) == "budget::1"
    reads = len(state.calls)

    async def stalled(function_id: str, payload: dict[str, Any], timeout_ms: int) -> Any:
        await asyncio.sleep(1)

    store._calls._invoke = stalled  # the next read times out (50 ms)
    assert _in_force(bus) == "budget::1"  # served with the last index read
    store._calls._invoke = state
    assert _in_force(bus) == "budget::1" and len(state.calls) == reads  # within the second: not asked
    now[0] += 1.5
    assert _in_force(bus) == "budget::1" and len(state.calls) == reads + 1


# --- the scopes that have versions ---------------------------------------------------------

@pytest.mark.parametrize("backend", ["memory", "state"])
def test_the_scopes_list_every_scope_published_to_with_its_latest_and_active_version(backend: str) -> None:
    bus = RoomBus(memory_room() if backend == "memory" else state_room(EngineState()))
    assert bus("context::policy::scopes", {}) == {"namespaces": [], "scopes": []}
    bus("context::policy::publish", {"surface": "budget", "namespace": "acme", "document": budget(0.2)})
    bus("context::policy::publish", {"surface": "budget", "namespace": "acme", "document": budget(0.25)})
    bus("context::policy::publish", {"surface": "budget", "namespace": "acme", "model_id": "gpt-a",
                                     "document": budget(0.3)})
    bus("context::policy::publish", {"surface": "retention", "document": {"verbatim_turns": 3}})
    bus("context::policy::publish", {"surface": "settings", "namespace": "acme/proj-7", "document": {"tail_turns": 4}})
    bus("context::policy::withdraw", {"surface": "settings", "namespace": "acme/proj-7"})
    bus("context::policy::activate", {"id": "budget:acme:1"})
    assert bus("context::policy::scopes", {}) == {"namespaces": ["acme", "acme/proj-7"], "scopes": [
        {"surface": "retention", "namespace": None, "model_id": None, "latest_version": 1, "active_version": 1},
        {"surface": "budget", "namespace": "acme", "model_id": None, "latest_version": 2, "active_version": 1},
        {"surface": "budget", "namespace": "acme", "model_id": "gpt-a", "latest_version": 1, "active_version": 1},
        {"surface": "settings", "namespace": "acme/proj-7", "model_id": None, "latest_version": 1,
         "active_version": None},
    ]}


def test_the_scopes_take_no_member_and_a_failing_store_is_an_error() -> None:
    state = EngineState()
    bus = RoomBus(state_room(state))
    assert bus("context::policy::scopes", {"namespace": "acme"}) == Refused(
        "handler error: context/invalid_request: request: unknown member `namespace`, expected none")
    assert bus("context::policy::scopes", []) == Refused(
        "handler error: context/invalid_request: request: expected an object, got sequence")
    state.fail_at = 1
    refused = bus("context::policy::scopes", {})
    assert isinstance(refused, Refused) and refused.message.startswith(
        "handler error: context/policy_store: policy store failed: ")
