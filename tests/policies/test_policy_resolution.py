"""The resolution rules, table-driven (support.PUBLISHED, support.RESOLVED): levels, ancestors,
model tags, whole selection, both warnings, a withdrawal falling back a level and an old version
re-activated; through the library, through the handlers over the engine's state functions (two
processes sharing one store), and what a context call reports and is served with."""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import api
from context_manager.adapters.stores import build_policies
from context_manager.core.settings import DEFAULT_CONFIG
from testengine.state import StateStore
from tests.policies.support import (
    RESOLVED,
    EngineState,
    Refused,
    RoomBus,
    budget,
    check_table,
    library_bus,
    policy,
    publish_all,
    state_room,
)


@pytest.fixture(autouse=True)
def fresh_library_policies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "LIBRARY_POLICIES", build_policies(DEFAULT_CONFIG, None))  # type: ignore[arg-type]


def test_the_table_through_the_library() -> None:
    check_table(library_bus())


def test_the_table_through_the_state_store() -> None:
    check_table(RoomBus(state_room(EngineState())))


def test_a_change_in_one_process_is_in_force_for_the_next_call_of_another() -> None:
    shared = StateStore()
    first, second = RoomBus(state_room(EngineState(shared))), RoomBus(state_room(EngineState(shared)))
    publish_all(first)
    for namespace, model, sources, _warnings, _keys in RESOLVED:
        assert second("context::policy::resolve", {"namespace": namespace, "model_id": model})["sources"] == sources
    first("context::policy::publish", {"surface": "budget", "namespace": "acme", "document": budget(0.5)})
    assert second("context::policy::resolve", {"namespace": "acme"})["config"]["reserved_pct"] == 50
    second("context::policy::activate", {"id": "budget:acme:1"})
    assert first("context::policy::resolve", {"namespace": "acme"})["config"]["reserved_pct"] == 20
    first("context::policy::withdraw", {"surface": "budget", "namespace": "acme"})
    assert second("context::policy::resolve", {"namespace": "acme"})["sources"]["budget"] == policy("budget", None, 1)


def test_withdrawing_what_is_not_active_changes_nothing() -> None:
    call = library_bus()
    assert call("context::policy::withdraw", {"surface": "settings"}) == {
        "surface": "settings", "namespace": None, "model_id": None, "withdrawn": None}
    assert call("context::policy::resolve", {})["sources"] == {
        "budget": {"kind": "worker_config"}, "retention": {"kind": "worker_config"},
        "settings": {"kind": "worker_config"}}


def test_activating_an_unknown_version_is_not_found() -> None:
    call = library_bus()
    for version_id in ("budget:acme:1", "nonsense", "budget:acme:0", "retention::1:gpt-a"):
        answer = call("context::policy::activate", {"id": version_id})
        assert answer == Refused(f"handler error: context/not_found: no policy version {version_id!r}")


# --- what the context functions are served with -----------------------------------------------

def history(turns: int, size: int = 400) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {turn} " + "q" * size}],
                         "timestamp": 2 * turn})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {turn} " + "a" * size}],
                         "stop_reason": "end", "api": "a", "provider": "p", "model": "m",
                         "usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0},
                         "timestamp": 2 * turn + 1})
    return messages


def request(namespace: str | None = None, model: str = "gpt-a", window: int = 20000) -> dict[str, Any]:
    options: dict[str, Any] = {} if namespace is None else {"namespace": namespace}
    return {"messages": history(4), "model": {"id": model, "limits": {"context_window": window, "max_output_tokens": 1000}},
            "options": options}


def test_with_nothing_published_and_no_namespace_every_answer_is_unchanged() -> None:
    call = library_bus()
    for function_id in ("context::assemble", "context::count-tokens", "context::prune", "context::compact"):
        plain = call(function_id, {k: v for k, v in request().items() if k != "options"})
        assert call(function_id, request()) == plain, function_id
        assert "policy" not in (plain.get("applied") or {})


def test_assemble_reports_the_policy_it_used_and_is_served_with_it() -> None:
    call = library_bus()
    base = call("context::assemble", request())
    assert base["usable"] == 17000  # 20000 less 1000 for output less the reserve, 10% (worker configuration)
    with_namespace = call("context::assemble", request("acme"))
    assert with_namespace["applied"]["policy"] == {
        "sources": {"budget": {"kind": "worker_config"}, "retention": {"kind": "worker_config"},
                    "settings": {"kind": "worker_config"}}, "warnings": []}
    call("context::policy::publish", {"surface": "budget", "namespace": "acme", "document": budget(0.25)})
    served = call("context::assemble", request("acme/team"))
    assert served["usable"] == 14000  # a 25% reserve
    assert served["applied"]["policy"] == {
        "sources": {"budget": policy("budget", "acme", 1), "retention": {"kind": "worker_config"},
                    "settings": {"kind": "worker_config"}},
        "warnings": [{"code": "context_budget_resolved_at", "namespace": "acme", "tagged_model": None}]}
    # Without a namespace nothing applies (the budget is acme's), so the answer is the plain one.
    assert call("context::assemble", request()) == base
    # The other context functions take the namespace and answer as before (no report).
    counted = call("context::count-tokens", request("acme"))
    assert "policy" not in counted and counted == call("context::count-tokens", request())


def test_an_org_global_policy_applies_without_a_namespace() -> None:
    call = library_bus()
    call("context::policy::publish", {"surface": "settings", "model_id": "gpt-a", "document": {"reserved_pct": 30}})
    served = call("context::assemble", request())
    assert served["usable"] == 13000  # a 30% reserve
    assert served["applied"]["policy"]["sources"]["settings"] == policy("settings", None, 1, "gpt-a")
    other_model = call("context::assemble", request(model="gpt-z"))
    assert other_model["usable"] == 17000 and "policy" not in other_model["applied"]


def test_a_drop_oldest_budget_serves_without_a_summariser() -> None:
    from compaction_support import FakeSummarizer

    room = state_room(EngineState())
    summarizer = FakeSummarizer(replies=["a summary"] * 5)
    bus = RoomBus(room, summarizer=summarizer)
    long = {**request("acme", window=3000), "messages": history(12)}
    bus("context::policy::publish", {"surface": "budget", "namespace": "acme",
                                     "document": budget(0.1, history_mode="drop_oldest")})
    served = bus("context::assemble", long)
    assert served["applied"]["compacted"] is False and served["applied"]["dropped_messages"] > 0
    assert summarizer.requests == []


@pytest.mark.parametrize("function_id", ["context::assemble", "context::count-tokens", "context::prune",
                                         "context::compact"])
@pytest.mark.parametrize(("namespace", "reason"), [
    ("Acme", "a namespace is segments of 1 to 64 characters a-z, 0-9, _ or - separated by /"),
    ("acme//x", "a namespace is segments of 1 to 64 characters a-z, 0-9, _ or - separated by /"),
    ("acme/", "a namespace is segments of 1 to 64 characters a-z, 0-9, _ or - separated by /"),
    ("a" * 65, "a namespace is segments of 1 to 64 characters a-z, 0-9, _ or - separated by /"),
    ("/".join(["a" * 60] * 5), "a namespace has at most 255 characters, got 304"),
    (7, "expected a namespace string, got integer `7`"),
    ("", "a namespace is segments of 1 to 64 characters a-z, 0-9, _ or - separated by /"),
])
def test_a_malformed_namespace_is_an_invalid_request_naming_the_path(function_id: str, namespace: Any,
                                                                     reason: str) -> None:
    answer = library_bus()(function_id, {**request(), "options": {"namespace": namespace}})
    assert answer == Refused(f"handler error: context/invalid_request: options.namespace: {reason}")
