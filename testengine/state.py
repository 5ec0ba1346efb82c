"""The engine's `state::*` functions (worker `iii-state`): values by scope and key, in memory.

Inputs, replies and error codes follow the `state::*` table of docs/iii-engine-protocol.md.
Every function runs without awaiting, so on the engine's single event loop each call (an
`update` included) is atomic. Events (`state:created`, `state:updated`, `state:deleted`) are
recorded, not delivered.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

FUNCTIONS = ("state::set", "state::get", "state::delete", "state::update", "state::list",
             "state::list_groups")
OPS = ("set", "merge", "increment", "decrement", "append", "remove")
# A body without "result": the reply of a missing key (get) or of nothing deleted (delete).
NO_RESULT: dict[str, Any] = {}


class StateError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _bad_input(function_id: str, detail: str) -> StateError:
    return StateError("deserialization_error", f"Failed to deserialize input for {function_id}: {detail}")


def _object(function_id: str, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        kind = "null" if data is None else type(data).__name__
        raise _bad_input(function_id, f"invalid type: {kind}, expected an object")
    return data


def _text(function_id: str, data: dict[str, Any], name: str) -> str:
    if name not in data:
        raise _bad_input(function_id, f"missing field `{name}`")
    if not isinstance(data[name], str):
        raise _bad_input(function_id, f"invalid type for `{name}`, expected a string")
    return data[name]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass
class StateStore:
    """``groups[scope][key] = value``; values are deep-copied in and out, as a wire would."""

    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (event, scope, key)

    def call(self, function_id: str, data: Any) -> dict[str, Any]:
        """The reply body of one call: ``{"result": …}``, :data:`NO_RESULT` or ``{"error": …}``."""
        try:
            return self._call(function_id, data)
        except StateError as exc:
            return {"error": {"code": exc.code, "message": exc.message}}

    def _call(self, function_id: str, data: Any) -> dict[str, Any]:
        data = _object(function_id, data)
        if function_id == "state::list_groups":
            return {"result": {"groups": sorted(scope for scope, values in self.groups.items() if values)}}
        scope = _text(function_id, data, "scope")
        if function_id == "state::list":
            return {"result": [copy.deepcopy(v) for v in self.groups.get(scope, {}).values()]}
        key = _text(function_id, data, "key")
        if function_id == "state::get":
            values = self.groups.get(scope, {})
            return {"result": copy.deepcopy(values[key])} if key in values else NO_RESULT
        if function_id == "state::set":
            value = data["value"] if "value" in data else data.get("data")
            old = self._store(scope, key, copy.deepcopy(value))
            return {"result": {"old_value": old, "new_value": copy.deepcopy(value)}}
        if function_id == "state::delete":
            values = self.groups.get(scope, {})
            if key not in values:
                return NO_RESULT
            deleted = values.pop(key)
            if not values:
                del self.groups[scope]
            self.events.append(("state:deleted", scope, key))
            return {"result": deleted}
        if function_id == "state::update":
            return {"result": self._update(scope, key, data)}
        raise StateError("function_not_found", f"Function {function_id} not found in namespace default.")

    def _store(self, scope: str, key: str, value: Any) -> Any:
        values = self.groups.setdefault(scope, {})
        created = key not in values
        old = values.get(key)
        values[key] = value
        self.events.append(("state:created" if created else "state:updated", scope, key))
        return old

    def _update(self, scope: str, key: str, data: dict[str, Any]) -> dict[str, Any]:
        ops = data.get("ops")
        if not isinstance(ops, list):
            raise _bad_input("state::update", "missing field `ops`" if ops is None else "`ops` must be an array")
        for op in ops:
            if not isinstance(op, dict) or op.get("type") not in OPS:
                tag = op.get("type") if isinstance(op, dict) else op
                raise _bad_input("state::update", f"unknown variant `{tag}`, expected one of {', '.join(OPS)}")
        old = copy.deepcopy(self.groups.get(scope, {}).get(key))
        value = copy.deepcopy(old)
        errors: list[dict[str, Any]] = []
        for index, op in enumerate(ops):
            try:
                value = _apply(value, op)
            except StateError as exc:
                errors.append({"op_index": index, "code": exc.code, "message": exc.message})
        self._store(scope, key, value)
        reply: dict[str, Any] = {"old_value": old, "new_value": copy.deepcopy(value)}
        if errors:
            reply["errors"] = errors
        return reply


def _apply(value: Any, op: dict[str, Any]) -> Any:
    """One update op on a copy of the value; ``path`` "" (or absent) is the whole value, any other
    path names a member of an object value (a missing value counts as ``{}``)."""
    kind, path = op["type"], op.get("path", "")
    if not isinstance(path, str):
        raise StateError("UPDATE_ERROR", "path must be a string")
    operand = copy.deepcopy(op.get("value"))
    if path == "":
        if kind == "remove":
            return None
        return _change(value, kind, operand, op)
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise StateError("UPDATE_ERROR", f"cannot apply {kind} at `{path}`: the value is not an object")
    if kind == "remove":
        value.pop(path, None)
    else:
        value[path] = _change(value.get(path), kind, operand, op)
    return value


def _change(current: Any, kind: str, operand: Any, op: dict[str, Any]) -> Any:
    if kind == "set":
        return operand
    if kind == "merge":
        if not isinstance(operand, dict):
            raise StateError("UPDATE_ERROR", "merge needs an object value")
        if current is None:
            return operand
        if not isinstance(current, dict):
            raise StateError("UPDATE_ERROR", "merge target is not an object")
        return {**current, **operand}
    if kind in ("increment", "decrement"):
        by = op.get("by", 1)
        if not _number(by):
            raise StateError("UPDATE_ERROR", f"{kind} needs a number `by`")
        base = 0 if current is None else current
        if not _number(base):
            raise StateError("UPDATE_ERROR", f"{kind} target is not a number")
        return base + by if kind == "increment" else base - by
    # append
    if current is None:
        return [operand]
    if isinstance(current, list):
        return [*current, operand]
    if isinstance(current, str) and isinstance(operand, str):
        return current + operand
    raise StateError("UPDATE_ERROR", "append target is not an array")
