"""Worker boot and hot reload against the test engine's `configuration` worker, in-process
(spec 04 §1.5, §2.5–§2.12)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_manager.adapters.configuration import ConfigCallError, ConfigurationSource
from context_manager.config.parse import defaults_object
from context_manager.config.schema import config_schema
from context_manager.core.settings import DEFAULT_CONFIG, ModelChoice
from context_manager.engine.client import Backoff, EngineClient, RemoteError, worker_metadata
from context_manager.handlers.registry import FUNCTIONS
from context_manager.worker import BootError, Worker, config_id
from testengine import CallFailed, TestEngine

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CONFIG_ID = "context-manager"


@pytest.fixture(autouse=True)
def compose_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Relative lease directories resolve under III_COMPOSE_DIR: keep them inside tmp_path.
    monkeypatch.setenv("III_COMPOSE_DIR", str(tmp_path))
    return tmp_path


@asynccontextmanager
async def connected(engine: TestEngine) -> AsyncIterator[Worker]:
    client = EngineClient(engine.url, worker_metadata("context-manager", "0.1.0"), backoff=Backoff(50, 2.0, 400, 0.0))
    worker = Worker(client, ConfigurationSource(client, CONFIG_ID))
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.run)
        await client.wait_connected()
        try:
            yield worker
        finally:
            await client.close()


def store(engine: TestEngine, value: Any) -> None:
    """An entry registered by an earlier run, holding ``value``."""
    engine.configuration.register({"id": CONFIG_ID, "name": "x", "description": "x", "schema": config_schema(), "initial_value": value})


def config_calls(engine: TestEngine) -> list[tuple[str, Any]]:
    return [(fid, data) for fid, data in engine.calls if fid.startswith("configuration::")]


# ---------------------------------------------------------------- NOT_FOUND rule (§2.7)


class _FailingConfiguration:
    """A client whose every configuration call fails with one error."""

    def __init__(self, code: str, message: str) -> None:
        self.error = RemoteError(code, message, "configuration::get")
        self.calls: list[tuple[str, Any, int, str]] = []

    async def invoke(self, function_id: str, payload: Any, *, timeout_ms: int, namespace: str) -> Any:
        self.calls.append((function_id, payload, timeout_ms, namespace))
        raise self.error


@pytest.mark.parametrize(
    ("code", "message", "nothing_stored"),
    [
        ("NOT_FOUND", "configuration not found", True),
        ("NOT_FOUND", "", True),
        ("function_not_found", "Function configuration::get not found in namespace default.", False),
        ("statement_not_found", "x", False),
        ("RESOURCE_NOT_FOUND", "x", False),
        ("ADAPTER_ERROR", "NOT_FOUND", False),
        ("OTHER", "remote error (NOT_FOUND): nested", False),
        ("not_found", "x", False),
    ],
)
async def test_not_found_rule(code: str, message: str, nothing_stored: bool) -> None:
    client = _FailingConfiguration(code, message)
    source = ConfigurationSource(client, CONFIG_ID, retry_step_s=0)  # type: ignore[arg-type]
    if nothing_stored:
        assert await source.try_get() == (False, None)
    else:
        with pytest.raises(ConfigCallError) as info:
            await source.try_get()
        assert info.value.code == code
        assert str(info.value) == f"configuration::get failed after 3 attempts: remote error ({code}): {message}"
    assert client.calls == [("configuration::get", {"id": CONFIG_ID}, 5000, "default")] * 3


@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, "context-manager"), ({"III_CONFIG_NAME": "  ctx-b \n"}, "ctx-b"), ({"III_CONFIG_NAME": "   "}, "context-manager")],
)
def test_config_id(env: dict[str, str], expected: str) -> None:
    assert config_id(env) == expected


# ---------------------------------------------------------------- boot (§2.6 decision matrix)


async def test_first_boot_seeds_the_defaults_after_three_not_found(engine: TestEngine) -> None:
    with anyio.fail_after(15):
        async with connected(engine) as worker:
            started = anyio.current_time()
            await worker.boot(None)
            elapsed = anyio.current_time() - started
    calls = config_calls(engine)
    assert [fid for fid, _ in calls] == ["configuration::get"] * 3 + ["configuration::register", "configuration::get"]
    assert all(data == {"id": CONFIG_ID} for fid, data in calls if fid == "configuration::get")
    register = dict(calls[3][1])
    assert register.pop("schema") == config_schema()
    assert register.pop("initial_value") == defaults_object()
    description = register.pop("description")
    assert isinstance(description, str) and description
    assert register == {"id": CONFIG_ID, "name": "Context Manager", "metadata": {"ui_form": "context-manager"}}
    assert worker.config == DEFAULT_CONFIG
    assert 0.75 <= elapsed < 3
    namespaces = {f.get("namespace") for _, f in engine.received if str(f.get("function_id")).startswith("configuration::")}
    assert namespaces == {"default"}


async def test_stored_value_wins_over_the_seed(engine: TestEngine, tmp_path: Path) -> None:
    store(engine, {"tail_turns": 7, "lease_dir": str(tmp_path / "leases")})
    seed = tmp_path / "seed.yaml"
    seed.write_text("tail_turns: 5\n")
    with anyio.fail_after(10):
        async with connected(engine) as worker:
            await worker.boot(str(seed))
    register = [data for fid, data in config_calls(engine) if fid == "configuration::register"]
    assert len(register) == 1 and "initial_value" not in register[0]
    assert worker.config.tail_turns == 7
    assert worker.lease_store.directory == tmp_path / "leases"
    assert (tmp_path / "leases").is_dir()


async def test_null_value_is_seeded_from_the_file(
    engine: TestEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEASES", str(tmp_path / "seeded"))
    store(engine, None)
    seed = tmp_path / "seed.yaml"
    seed.write_text("tail_turns: 5\nlease_dir: ${LEASES}\n")
    with anyio.fail_after(10):
        async with connected(engine) as worker:
            await worker.boot(str(seed))
    [register] = [data for fid, data in config_calls(engine) if fid == "configuration::register"]
    assert register["initial_value"] == {**defaults_object(), "tail_turns": 5, "lease_dir": str(tmp_path / "seeded")}
    assert worker.config.tail_turns == 5
    assert (tmp_path / "seeded").is_dir()


async def test_unusable_seed_falls_back_to_defaults(engine: TestEngine, tmp_path: Path) -> None:
    seed = tmp_path / "seed.yaml"
    seed.write_text("tail_truns: 5\n")
    with anyio.fail_after(10):
        async with connected(engine) as worker:
            await worker.boot(str(seed))
    [register] = [data for fid, data in config_calls(engine) if fid == "configuration::register"]
    assert register["initial_value"] == defaults_object()


async def test_invalid_stored_value_is_fatal_at_boot(engine: TestEngine) -> None:
    store(engine, {"tail_truns": 3})
    with anyio.fail_after(10):
        async with connected(engine) as worker:
            with pytest.raises(BootError) as info:
                await worker.boot(None)
    assert info.value.step == "loading context-manager configuration"
    assert str(info.value).startswith("loading context-manager configuration: json parse: ")
    assert "unknown field `tail_truns`" in str(info.value)
    assert not engine.function_ids()


async def test_absent_configuration_worker_is_fatal_at_boot(engine: TestEngine) -> None:
    engine.configuration_enabled = False
    with anyio.fail_after(10):
        async with connected(engine) as worker:
            with pytest.raises(BootError) as info:
                await worker.boot(None)
    assert str(info.value) == (
        "registering context-manager configuration schema: configuration::get failed after 3 attempts: "
        "remote error (function_not_found): Function configuration::get not found in namespace default."
    )
    assert [fid for fid, _ in engine.calls if fid.startswith("configuration::")] == ["configuration::get"] * 3


async def test_register_rejection_is_fatal(engine: TestEngine) -> None:
    with anyio.fail_after(10):
        async with connected(engine) as worker:
            worker.source.config_id = "Not Valid!"
            with pytest.raises(BootError) as info:
                await worker.boot(None)
    assert info.value.step == "registering context-manager configuration schema"
    assert "configuration::register failed after 3 attempts: remote error (INVALID_ID)" in str(info.value)


async def test_uncreatable_lease_dir_is_fatal(engine: TestEngine, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store(engine, {"lease_dir": str(blocker / "leases")})
    with anyio.fail_after(10):
        async with connected(engine) as worker:
            with pytest.raises(BootError) as info:
                await worker.boot(None)
    assert str(info.value).startswith(f"opening the compaction lease directory: create lease_dir {blocker / 'leases'}: ")


# ---------------------------------------------------------------- hot reload (§2.10)


async def test_reload_applies_valid_values_and_keeps_the_last_good(engine: TestEngine, tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with connected(engine) as worker:
            await worker.boot(None)
            first_store = worker.lease_store

            engine.configuration.store_unchecked(CONFIG_ID, {"reserved_pct": 50})
            await worker.reload()
            assert worker.config.reserved_pct == 50
            assert worker.lease_store is first_store  # lease_dir unchanged

            engine.configuration.store_unchecked(CONFIG_ID, {"reserved_pct": "fifty"})
            await worker.reload()
            assert worker.config.reserved_pct == 50

            engine.configuration.store_unchecked(CONFIG_ID, None)
            await worker.reload()
            assert worker.config == DEFAULT_CONFIG

            del engine.configuration.entries[CONFIG_ID]
            await worker.reload()
            assert worker.config == DEFAULT_CONFIG


async def test_reload_switches_the_profile_and_an_unknown_one_keeps_the_last_good(engine: TestEngine) -> None:
    with anyio.fail_after(30):
        async with connected(engine) as worker:
            await worker.boot(None)
            engine.configuration.store_unchecked(CONFIG_ID, {"profile": "recommended", "working_set": False})
            await worker.reload()
            config = worker.config
            assert (config.profile, config.summary_check, config.eager_compaction_at, config.working_set) == (
                "recommended", "append", 0.8, False)
            assert worker.context().config == config

            engine.configuration.store_unchecked(CONFIG_ID, {"profile": "best"})
            await worker.reload()
            assert worker.config == config  # rejected: the last good value stays

            engine.configuration.store_unchecked(CONFIG_ID, {"profile": "faithful"})
            await worker.reload()
            assert worker.config == DEFAULT_CONFIG


async def test_reload_applies_the_cache_keys_and_keeps_the_remembered_compactions(engine: TestEngine) -> None:
    with anyio.fail_after(30):
        async with connected(engine) as worker:
            await worker.boot(None)
            sessions = worker.session_store
            assert worker.context().session_store is sessions
            engine.configuration.store_unchecked(CONFIG_ID, {
                "summary_reuse": True, "reduce_to": 0.6, "report_prefix": True,
                "summary_placement": "message", "eager_compaction_at": 0.8})
            await worker.reload()
            config = worker.config
            assert (config.summary_reuse, config.reduce_to, config.report_prefix,
                    config.summary_placement, config.eager_compaction_at) == (True, 0.6, True, "message", 0.8)
            assert worker.session_store is sessions and worker.context().session_store is sessions

            engine.configuration.store_unchecked(CONFIG_ID, {"reduce_to": 0})
            await worker.reload()
            assert worker.config.reduce_to == 0.6  # rejected: the last good value stays


async def test_reload_rebuilds_the_lease_store_when_lease_dir_changes(engine: TestEngine, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with anyio.fail_after(30):
        async with connected(engine) as worker:
            await worker.boot(None)
            assert worker.lease_store.directory == tmp_path / "data" / "context-manager"

            engine.configuration.store_unchecked(CONFIG_ID, {"lease_dir": str(tmp_path / "new"), "tail_turns": 4})
            await worker.reload()
            assert worker.lease_store.directory == tmp_path / "new"
            assert (tmp_path / "new").is_dir()
            assert (worker.config.lease_dir, worker.config.tail_turns) == (str(tmp_path / "new"), 4)
            kept_store = worker.lease_store

            engine.configuration.store_unchecked(CONFIG_ID, {"lease_dir": str(blocker / "x"), "tail_turns": 9})
            await worker.reload()
            assert worker.lease_store is kept_store
            assert (worker.config.lease_dir, worker.config.tail_turns) == (str(tmp_path / "new"), 4)


async def test_reload_switches_the_lease_and_session_stores_and_keeps_snapshots(
        engine: TestEngine, tmp_path: Path) -> None:
    from context_manager.adapters.fs_lease_store import FsLeaseStore
    from context_manager.adapters.memory_session_store import MemorySessionStore
    from context_manager.adapters.state_lease_store import StateLeaseStore
    from context_manager.adapters.state_session_store import StateSessionStore

    store(engine, {"lease_store": "state", "session_store": "state", "lease_dir": str(tmp_path / "unused")})
    with anyio.fail_after(30):
        async with connected(engine) as worker:
            await worker.boot(None)
            assert isinstance(worker.lease_store, StateLeaseStore)
            assert isinstance(worker.session_store, StateSessionStore)
            assert not (tmp_path / "unused").exists()  # no lease directory with the state store
            in_flight = worker.context()
            leases, sessions = worker.lease_store, worker.session_store

            # Neither store's own settings changed: both are kept.
            engine.configuration.store_unchecked(CONFIG_ID, {
                "lease_store": "state", "session_store": "state", "lease_dir": str(tmp_path / "other")})
            await worker.reload()
            assert worker.lease_store is leases and worker.session_store is sessions

            engine.configuration.store_unchecked(CONFIG_ID, {
                "lease_store": "state", "session_store": "state", "session_ttl_secs": 60})
            await worker.reload()
            assert worker.lease_store is leases and worker.session_store is not sessions

            engine.configuration.store_unchecked(CONFIG_ID, {"lease_dir": str(tmp_path / "files")})
            await worker.reload()
            assert isinstance(worker.lease_store, FsLeaseStore) and (tmp_path / "files").is_dir()
            assert isinstance(worker.session_store, MemorySessionStore)
            # A call already running keeps the stores of its snapshot.
            assert in_flight.lease_store is leases and in_flight.session_store is sessions
            assert in_flight.config.lease_store == "state"


async def test_configuration_worker_gone_after_boot_keeps_the_config(engine: TestEngine) -> None:
    with anyio.fail_after(30):
        async with connected(engine) as worker:
            await worker.boot(None)
            engine.configuration.store_unchecked(CONFIG_ID, {"tail_turns": 6})
            await worker.reload()
            engine.configuration_enabled = False
            await worker.reload()
            assert worker.config.tail_turns == 6


# ---------------------------------------------------------------- unexpected handler failures


async def test_an_unexpected_handler_failure_is_answered_and_logged_once(
    engine: TestEngine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def kaput(payload: Any, ctx: Any) -> Any:
        raise RuntimeError("kaput")

    monkeypatch.setitem(FUNCTIONS, "context::count-tokens", kaput)
    with caplog.at_level(logging.ERROR), anyio.fail_after(15):
        async with connected(engine) as worker:
            await worker.register_functions()
            await anyio.to_thread.run_sync(lambda: engine.wait_for_functions({"context::count-tokens"}))
            with pytest.raises(CallFailed) as info:
                await anyio.to_thread.run_sync(lambda: engine.call("context::count-tokens", {"messages": []}))
    assert (info.value.code, info.value.message) == ("invocation_failed", "internal error: kaput")
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert [(record.name, record.getMessage()) for record in errors] == [
        ("context_manager.engine", "function context::count-tokens raised")
    ]
    assert errors[0].exc_info is not None and str(errors[0].exc_info[1]) == "kaput"


async def test_reload_applies_the_budget_and_summariser_keys_to_the_next_call(engine: TestEngine) -> None:
    from context_manager.handlers import assemble

    payload = {"messages": [{"role": "user", "content": [{"type": "text", "text": "x" * 4000}], "timestamp": 1}],
               "model": {"id": "m", "limits": {"context_window": 40000, "max_output_tokens": 1000}}}
    with anyio.fail_after(30):
        async with connected(engine) as worker:
            await worker.boot(None)
            before = await assemble.handle(payload, worker.context())
            assert before["usable"] == 35000 and "window_usable" not in before["breakdown"]

            engine.configuration.store_unchecked(CONFIG_ID, {"max_history_tokens": 32000})
            await worker.reload()
            assert worker.config.max_history_tokens == 32000
            after = await assemble.handle(payload, worker.context())
            assert (after["usable"], after["breakdown"]["window_usable"]) == (32000, 35000)

            engine.configuration.store_unchecked(CONFIG_ID, {"max_history_tokens": 0})
            await worker.reload()
            assert worker.config.max_history_tokens == 32000  # rejected: the last good value stays

            engine.configuration.store_unchecked(CONFIG_ID, {"max_history_tokens": None})
            await worker.reload()
            assert worker.config == DEFAULT_CONFIG
            assert await assemble.handle(payload, worker.context()) == before

            # The summariser's keys reach the next call's context too (their effect through the
            # engine: tests/adapters/test_summarizer_model_engine.py).
            engine.configuration.store_unchecked(CONFIG_ID, {"summarizer_model": {"id": "cheap"},
                                                             "compaction_instructions": "Keep paths."})
            await worker.reload()
            config = worker.context().config
            assert (config.summarizer_model, config.compaction_instructions) == (ModelChoice("cheap"), "Keep paths.")
            engine.configuration.store_unchecked(CONFIG_ID, {"summarizer_model": {"id": ""}})
            await worker.reload()
            assert worker.config == config  # rejected: the last good value stays
