"""The policy functions of a worker on the test engine with ``session_store: state``: the
resolution table over the wire, and, with ``--processes 2``, a version published or activated
is in force for the next call served by either process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testengine import CallFailed
from tests.policies.support import Refused, budget, check_table, policy
from tests.policies.test_policy_resolution import request
from tests.reliability.engine_support import worker_on_engine
from tests.reliability.faults import write_seed

pytestmark = pytest.mark.slow

POLICY = {"context::policy::publish", "context::policy::list", "context::policy::activate",
          "context::policy::withdraw", "context::policy::resolve"}


def engine_bus(engine: Any) -> Any:
    def send(function_id: str, payload: Any) -> Any:
        try:
            return engine.call(function_id, payload, timeout=30)
        except CallFailed as failed:
            return Refused(failed.message)

    return send


def sessions(namespace: str) -> list[dict[str, Any]]:
    """Six requests of six different sessions, so the pool spreads them over its processes."""
    out = []
    for n in range(6):
        one = request(namespace)
        one["messages"][0] = {**one["messages"][0], "content": [{"type": "text", "text": f"session {n}"}]}
        out.append(one)
    return out


def test_the_table_through_the_worker_on_the_engine(tmp_path: Path) -> None:
    seed = write_seed(tmp_path / "seed.yaml", session_store="state")
    with worker_on_engine(tmp_path, args=("--config", str(seed))) as (engine, process):
        engine.wait_for_functions(POLICY, timeout=30)
        check_table(engine_bus(engine))
        assert "context_policy" in engine.state.groups
        assert "Traceback" not in process.stderr


def test_a_version_is_in_force_on_the_next_call_in_both_processes(tmp_path: Path) -> None:
    seed = write_seed(tmp_path / "seed.yaml", session_store="state")
    with worker_on_engine(tmp_path, args=("--config", str(seed), "--processes", "2")) as (engine, process):
        engine.wait_for_functions(POLICY, timeout=30)
        call = engine_bus(engine)
        # Warm both processes' caches with the worker configuration.
        for one in sessions("acme"):
            assert call("context::assemble", one)["usable"] == 17000
        call("context::policy::publish", {"surface": "budget", "namespace": "acme", "document": budget(0.25)})
        for one in sessions("acme"):
            served = call("context::assemble", one)
            assert (served["usable"], served["applied"]["policy"]["sources"]["budget"]) == (
                14000, policy("budget", "acme", 1))
        call("context::policy::publish", {"surface": "budget", "namespace": "acme", "document": budget(0.3)})
        call("context::policy::activate", {"id": "budget:acme:1"})
        assert {call("context::assemble", one)["usable"] for one in sessions("acme")} == {14000}
        call("context::policy::withdraw", {"surface": "budget", "namespace": "acme"})
        assert {call("context::assemble", one)["usable"] for one in sessions("acme")} == {17000}
        assert "Traceback" not in process.stderr
