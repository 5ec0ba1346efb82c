"""What the policy tests share: the buses a test drives (the library, the policy room over the
test engine's state functions without a socket, the worker on the test engine) and the
resolution table they all must answer alike."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from context_manager.adapters.memory_policy_store import MemoryPolicyStore
from context_manager.adapters.policy_codec import ConfigPolicyCodec
from context_manager.adapters.state_policy_store import StatePolicyStore
from context_manager.api import run_handler
from context_manager.core.policies.room import PolicyRoom
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.handlers.context import HandlerContext
from context_manager.ports import InvokeError
from context_manager.wire.errors import CallError, ContextManagerError, error_envelope
from testengine.state import StateStore


@dataclass(frozen=True)
class Refused:
    """A call answered with an error: the envelope's message."""

    message: str


Call = Callable[[str, Any], Any]


def budget(headroom: float, **more: Any) -> dict[str, Any]:
    return {"version": 3, "headroom": headroom, **more}


class EngineState:
    """The ``Invoke`` port over the test engine's state functions, without a socket. ``fail_at``
    (1-based) answers that call of ``fail_function`` (any, when None) with an error; ``yields``
    lets other coroutines run before each call, as a network round trip does."""

    def __init__(self, store: StateStore | None = None) -> None:
        self.store = store or StateStore()
        self.calls: list[str] = []
        self.fail_at: int | None = None
        self.yields = 0

    async def __call__(self, function_id: str, payload: dict[str, Any], timeout_ms: int) -> Any:
        for _ in range(self.yields):
            await asyncio.sleep(0)
        self.calls.append(function_id)
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise InvokeError(f"remote error (SET_ERROR): injected failure of call {self.fail_at}")
        body = self.store.call(function_id, payload)
        if "error" in body:
            raise InvokeError(f"remote error ({body['error']['code']}): {body['error']['message']}")
        return body.get("result")


def state_room(state: EngineState) -> PolicyRoom:
    return PolicyRoom(StatePolicyStore(state, logging.getLogger("tests.policies")), ConfigPolicyCodec())


def memory_room() -> PolicyRoom:
    return PolicyRoom(MemoryPolicyStore(), ConfigPolicyCodec())


@dataclass
class RoomBus:
    """Calls through the handlers with one process's policy room (``run_handler``)."""

    room: PolicyRoom
    config: WorkerConfig = DEFAULT_CONFIG
    summarizer: Any = None
    contexts: list[HandlerContext] = field(default_factory=list)

    def __call__(self, function_id: str, payload: Any) -> Any:
        ctx = HandlerContext(config=self.config, policies=self.room, summarizer=self.summarizer)
        try:
            return run_handler(function_id, payload, ctx)
        except CallError as exc:
            return Refused(exc.message)
        except ContextManagerError as exc:
            return Refused(error_envelope(exc)[1])


def library_bus(config: dict[str, Any] | None = None) -> Call:
    from context_manager import call

    def send(function_id: str, payload: Any) -> Any:
        try:
            return call(function_id, payload, config)
        except CallError as exc:
            return Refused(exc.message)

    return send


# --- the resolution table --------------------------------------------------------------------

B = "budget"
R = "retention"
S = "settings"


def policy(surface: str, namespace: str | None, version: int, model: str | None = None) -> dict[str, Any]:
    tag = "" if model is None else f":{model}"
    return {"kind": "policy", "id": f"{surface}:{namespace or ''}:{version}{tag}", "namespace": namespace,
            "tagged_model": model, "version": version}


WORKER = {"kind": "worker_config"}

# Published in this order; each is version 1 of its scope.
PUBLISHED: list[dict[str, Any]] = [
    {"surface": B, "document": budget(0.1)},
    {"surface": B, "namespace": "acme", "document": budget(0.2)},
    {"surface": B, "namespace": "acme", "model_id": "gpt-a", "document": budget(0.3, history_mode="drop_oldest")},
    {"surface": B, "namespace": "acme/proj-7", "model_id": "gpt-b",
     "document": budget(0.4, eager_compaction={"mode": "at_fill", "at": 0.6}, max_history_tokens=32000)},
    {"surface": R, "document": {"verbatim_turns": 3}},
    {"surface": R, "namespace": "acme/proj-7", "document": {"verbatim_turns": 1, "reasoning": {"keep_turns": 0}}},
    {"surface": S, "namespace": "acme", "document": {"tail_turns": 5, "summary_check": "append"}},
    {"surface": S, "namespace": "acme", "model_id": "gpt-a", "document": {"tail_turns": 7, "reserved_pct": 50}},
]

# (namespace, model) -> (sources, warnings, some keys of the effective configuration)
RESOLVED: list[tuple[str | None, str | None, dict[str, Any], list[dict[str, Any]], dict[str, Any]]] = [
    # No namespace: the org-global level, the plainest place: no warning.
    (None, None, {B: policy(B, None, 1), R: policy(R, None, 1), S: WORKER}, [],
     {"reserved_pct": 10, "reserved_tokens_cap": 18446744073709551615, "tail_turns": 2,
      "retention": {"verbatim_turns": 3}}),
    # A model tag at the namespace itself; the namespace's retention hides the org-global one.
    ("acme/proj-7", "gpt-b", {B: policy(B, "acme/proj-7", 1, "gpt-b"), R: policy(R, "acme/proj-7", 1),
                              S: policy(S, "acme", 1)},
     [{"code": "context_budget_resolved_at", "namespace": "acme/proj-7", "tagged_model": "gpt-b"},
      {"code": "retention_policy_overridden", "displaced": None, "namespace": "acme/proj-7"}],
     {"reserved_pct": 40, "eager_compaction_at": 0.6, "max_history_tokens": 32000, "tail_turns": 5,
      "summary_check": "append", "retention": {"verbatim_turns": 1, "reasoning": {"keep_turns": 0}}}),
    # A level with only another model's tag does not apply: the ancestor's untagged budget wins.
    ("acme/proj-7", "gpt-c", {B: policy(B, "acme", 1), R: policy(R, "acme/proj-7", 1), S: policy(S, "acme", 1)},
     [{"code": "context_budget_resolved_at", "namespace": "acme", "tagged_model": None},
      {"code": "retention_policy_overridden", "displaced": None, "namespace": "acme/proj-7"}],
     {"reserved_pct": 20, "eager_compaction_at": None, "max_history_tokens": None, "tail_turns": 5}),
    # The ancestor's tag beats its untagged versions, whole: the tagged settings leave
    # summary_check out, and the untagged one's "append" is not merged in; the budget's reserve
    # beats the settings' reserved_pct.
    ("acme/proj-7/user-99", "gpt-a", {B: policy(B, "acme", 1, "gpt-a"), R: policy(R, "acme/proj-7", 1),
                                      S: policy(S, "acme", 1, "gpt-a")},
     [{"code": "context_budget_resolved_at", "namespace": "acme", "tagged_model": "gpt-a"},
      {"code": "retention_policy_overridden", "displaced": None, "namespace": "acme/proj-7"}],
     {"reserved_pct": 30, "tail_turns": 7, "summary_check": "off", "overflow_fallback": "drop_oldest",
      "summarizer_fallback": "none"}),
    # Another namespace: the org-global budget is an inherited one.
    ("other", None, {B: policy(B, None, 1), R: policy(R, None, 1), S: WORKER},
     [{"code": "context_budget_resolved_at", "namespace": None, "tagged_model": None}],
     {"reserved_pct": 10, "tail_turns": 2}),
]


def resolved_view(answer: dict[str, Any], keys: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    config = answer["config"]
    return answer["sources"], answer["warnings"], {key: config[key] for key in keys}


def publish_all(call: Call, **extra: Any) -> list[Any]:
    return [call("context::policy::publish", {**entry, **extra}) for entry in PUBLISHED]


def check_table(call: Call) -> None:
    """The table's resolutions, then withdrawing falls back a level and activating an old
    version restores it."""
    answers = publish_all(call)
    assert [a["version"] for a in answers] == [1] * len(PUBLISHED), answers
    for namespace, model, sources, warnings, keys in RESOLVED:
        answer = call("context::policy::resolve", {"namespace": namespace, "model_id": model})
        assert answer["namespace"] == namespace and answer["model_id"] == model
        assert resolved_view(answer, keys) == (sources, warnings, keys), (namespace, model)
        assert "policy_write_token" not in answer["config"]

    # Withdrawing acme's untagged budget: acme/proj-7 for gpt-c falls back to the org-global one.
    withdrawn = call("context::policy::withdraw", {"surface": B, "namespace": "acme"})
    assert withdrawn == {"surface": B, "namespace": "acme", "model_id": None, "withdrawn": "budget:acme:1"}
    answer = call("context::policy::resolve", {"namespace": "acme/proj-7", "model_id": "gpt-c"})
    assert answer["sources"][B] == policy(B, None, 1)
    assert answer["warnings"][0] == {"code": "context_budget_resolved_at", "namespace": None, "tagged_model": None}
    assert answer["config"]["reserved_pct"] == 10

    # A second version, then the first re-activated.
    second = call("context::policy::publish", {"surface": B, "namespace": "acme", "document": budget(0.25)})
    assert (second["id"], second["version"], second["is_active"]) == ("budget:acme:2", 2, True)
    assert call("context::policy::resolve", {"namespace": "acme/proj-7"})["config"]["reserved_pct"] == 25
    restored = call("context::policy::activate", {"id": "budget:acme:1"})
    assert (restored["id"], restored["version"], restored["is_active"]) == ("budget:acme:1", 1, True)
    answer = call("context::policy::resolve", {"namespace": "acme/proj-7"})
    assert (answer["sources"][B], answer["config"]["reserved_pct"]) == (policy(B, "acme", 1), 20)
    listed = call("context::policy::list", {"surface": B, "namespace": "acme"})["versions"]
    assert [(v["id"], v["version"], v["is_active"]) for v in listed] == [
        ("budget:acme:2", 2, False), ("budget:acme:1", 1, True)]
    assert listed[1]["document"] == budget(0.2)
    assert all(v["created_at"].endswith("Z") for v in listed)
