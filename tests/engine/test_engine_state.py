"""The test engine's `state::*` functions (docs/iii-engine-protocol.md): inputs, replies, errors."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from context_manager.engine.client import Backoff, EngineClient, RemoteError, worker_metadata
from testengine import TestEngine
from testengine.state import StateStore


def result(body: dict[str, Any]) -> Any:
    assert "error" not in body, body
    return body["result"]


def error(body: dict[str, Any]) -> tuple[str, str]:
    return body["error"]["code"], body["error"]["message"]


def test_set_then_get_returns_the_value_itself() -> None:
    store = StateStore()
    assert result(store.call("state::set", {"scope": "s", "key": "k", "value": {"a": 1}})) == {
        "old_value": None, "new_value": {"a": 1}}
    assert result(store.call("state::get", {"scope": "s", "key": "k"})) == {"a": 1}
    assert result(store.call("state::set", {"scope": "s", "key": "k", "data": [2]})) == {
        "old_value": {"a": 1}, "new_value": [2]}
    assert store.events == [("state:created", "s", "k"), ("state:updated", "s", "k")]


def test_a_missing_key_has_no_result() -> None:
    store = StateStore()
    assert store.call("state::get", {"scope": "s", "key": "k"}) == {}
    assert store.call("state::delete", {"scope": "s", "key": "k"}) == {}


def test_delete_returns_the_deleted_value_and_empties_the_group() -> None:
    store = StateStore()
    store.call("state::set", {"scope": "s", "key": "k", "value": 7})
    assert result(store.call("state::delete", {"scope": "s", "key": "k"})) == 7
    assert store.call("state::get", {"scope": "s", "key": "k"}) == {}
    assert result(store.call("state::list_groups", {})) == {"groups": []}
    assert store.events[-1] == ("state:deleted", "s", "k")


def test_list_and_list_groups() -> None:
    store = StateStore()
    for scope, key, value in (("b", "1", "x"), ("a", "2", "y"), ("b", "3", "z")):
        store.call("state::set", {"scope": scope, "key": key, "value": value})
    assert result(store.call("state::list", {"scope": "b"})) == ["x", "z"]
    assert result(store.call("state::list", {"scope": "none"})) == []
    assert result(store.call("state::list_groups", {})) == {"groups": ["a", "b"]}


def test_update_set_at_the_root_swaps_the_whole_value() -> None:
    store = StateStore()
    op = {"type": "set", "path": "", "value": {"nonce": "n1", "ts": 1}}
    assert result(store.call("state::update", {"scope": "s", "key": "k", "ops": [op]})) == {
        "old_value": None, "new_value": {"nonce": "n1", "ts": 1}}
    op2 = {"type": "set", "path": "", "value": {"nonce": "n2", "ts": 2}}
    assert result(store.call("state::update", {"scope": "s", "key": "k", "ops": [op2]})) == {
        "old_value": {"nonce": "n1", "ts": 1}, "new_value": {"nonce": "n2", "ts": 2}}


def test_update_ops_on_members() -> None:
    store = StateStore()
    ops = [
        {"type": "set", "path": "a", "value": 1},
        {"type": "increment", "path": "n", "by": 5},
        {"type": "decrement", "path": "n", "by": 2},
        {"type": "append", "path": "list", "value": "x"},
        {"type": "append", "path": "list", "value": "y"},
        {"type": "merge", "value": {"b": True}},
        {"type": "merge", "path": "m", "value": {"c": 1}},
        {"type": "remove", "path": "a"},
    ]
    assert result(store.call("state::update", {"scope": "s", "key": "k", "ops": ops})) == {
        "old_value": None,
        "new_value": {"n": 3, "list": ["x", "y"], "b": True, "m": {"c": 1}},
    }
    assert result(store.call("state::update", {"scope": "s", "key": "k", "ops": [{"type": "remove", "path": ""}]})) == {
        "old_value": {"n": 3, "list": ["x", "y"], "b": True, "m": {"c": 1}}, "new_value": None}


def test_update_reports_ops_that_cannot_apply_and_applies_the_rest() -> None:
    store = StateStore()
    store.call("state::set", {"scope": "s", "key": "k", "value": {"n": "text"}})
    ops = [{"type": "increment", "path": "n", "by": 1}, {"type": "set", "path": "m", "value": 2}]
    assert result(store.call("state::update", {"scope": "s", "key": "k", "ops": ops})) == {
        "old_value": {"n": "text"},
        "new_value": {"n": "text", "m": 2},
        "errors": [{"op_index": 0, "code": "UPDATE_ERROR", "message": "increment target is not a number"}],
    }


@pytest.mark.parametrize(("function_id", "data", "message"), [
    ("state::get", None, "Failed to deserialize input for state::get: invalid type: null, expected an object"),
    ("state::get", [1], "Failed to deserialize input for state::get: invalid type: list, expected an object"),
    ("state::set", {"key": "k", "value": 1}, "Failed to deserialize input for state::set: missing field `scope`"),
    ("state::delete", {"scope": "s"}, "Failed to deserialize input for state::delete: missing field `key`"),
    ("state::get", {"scope": 1, "key": "k"},
     "Failed to deserialize input for state::get: invalid type for `scope`, expected a string"),
    ("state::update", {"scope": "s", "key": "k"}, "Failed to deserialize input for state::update: missing field `ops`"),
    ("state::update", {"scope": "s", "key": "k", "ops": [{"type": "swap"}]},
     "Failed to deserialize input for state::update: unknown variant `swap`, expected one of "
     "set, merge, increment, decrement, append, remove"),
    ("state::list_groups", "x", "Failed to deserialize input for state::list_groups: invalid type: str, expected an object"),
])
def test_malformed_input_is_a_deserialization_error(function_id: str, data: Any, message: str) -> None:
    assert error(StateStore().call(function_id, data)) == ("deserialization_error", message)


def test_a_stored_value_is_a_copy() -> None:
    store = StateStore()
    value = {"a": [1]}
    store.call("state::set", {"scope": "s", "key": "k", "value": value})
    value["a"].append(2)
    got = result(store.call("state::get", {"scope": "s", "key": "k"}))
    got["a"].append(3)
    assert result(store.call("state::get", {"scope": "s", "key": "k"})) == {"a": [1]}


# --- over the wire ----------------------------------------------------------------------------


async def _with_client(engine: TestEngine, body: Any) -> Any:
    client = EngineClient(engine.url, worker_metadata("state-user", "0.1.0"), backoff=Backoff(initial_ms=10))
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.run)
        try:
            with anyio.fail_after(10):
                await client.wait_connected()
                out = await body(client)
        finally:
            await client.close()  # ends run(); the engine's stop then finds no open socket
    return out


async def test_state_over_the_wire(anyio_backend: str) -> None:
    engine = TestEngine().start()

    async def body(client: EngineClient) -> Any:
        set_reply = await client.invoke("state::set", {"scope": "s", "key": "k", "value": {"v": 1}})
        return set_reply, await client.invoke("state::get", {"scope": "s", "key": "k"}), \
            await client.invoke("state::get", {"scope": "s", "key": "other"})

    try:
        assert await _with_client(engine, body) == ({"old_value": None, "new_value": {"v": 1}}, {"v": 1}, None)
    finally:
        engine.stop()


async def test_state_off_is_function_not_found(anyio_backend: str) -> None:
    engine = TestEngine(state=False).start()

    async def body(client: EngineClient) -> Any:
        with pytest.raises(RemoteError) as caught:
            await client.invoke("state::get", {"scope": "s", "key": "k"})
        return caught.value.code, caught.value.message

    try:
        assert await _with_client(engine, body) == (
            "function_not_found", "Function state::get not found in namespace default.")
    finally:
        engine.stop()


async def test_the_hook_answers_instead_of_the_store(anyio_backend: str) -> None:
    engine = TestEngine().start()
    seen: list[str] = []

    def hook(function_id: str, data: Any) -> dict[str, Any] | None:
        seen.append(function_id)
        return {"error": {"code": "GET_ERROR", "message": "disk on fire"}} if function_id == "state::get" else None

    engine.state_hook = hook

    async def body(client: EngineClient) -> Any:
        await client.invoke("state::set", {"scope": "s", "key": "k", "value": 1})
        with pytest.raises(RemoteError) as caught:
            await client.invoke("state::get", {"scope": "s", "key": "k"})
        return caught.value.code, caught.value.message

    try:
        assert await _with_client(engine, body) == ("GET_ERROR", "disk on fire")
        assert seen == ["state::set", "state::get"]
        assert engine.state.groups == {"s": {"k": 1}}
    finally:
        engine.stop()
