"""The engine's built-in `configuration` worker: register/get/set/list/schema plus change events."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

import jsonschema

_ID = re.compile(r"^[a-z0-9_-]{1,64}$")

REGISTERED = "configuration:registered"
UPDATED = "configuration:updated"


class ConfigurationError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Entry:
    id: str
    name: str
    description: str
    schema: Any
    value: Any = None
    metadata: Any = None


@dataclass
class ConfigurationStore:
    """Entries survive an engine restart (the real engine persists them)."""

    entries: dict[str, Entry] = field(default_factory=dict)

    def register(self, data: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            raise ConfigurationError(
                "deserialization_error",
                "Failed to deserialize input for configuration::register: missing field `id`",
            )
        config_id = data["id"]
        if not _ID.match(config_id):
            raise ConfigurationError("INVALID_ID", f"invalid configuration id `{config_id}`")
        schema = data.get("schema")
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ConfigurationError("SCHEMA_INVALID", exc.message) from None
        previous = self.entries.get(config_id)
        entry = Entry(
            config_id,
            str(data.get("name", "")),
            str(data.get("description", "")),
            schema,
            previous.value if previous else None,
            data.get("metadata"),
        )
        if "initial_value" in data:
            entry.value = copy.deepcopy(data["initial_value"])
        self.entries[config_id] = entry
        event = self._event(
            REGISTERED if previous is None else UPDATED,
            entry,
            None if previous is None else previous.value,
            entry.value,
        )
        return self._stored(entry), event

    def get(self, data: Any) -> dict[str, Any]:
        entry = self._entry(data)
        return {"id": entry.id, "value": copy.deepcopy(entry.value)}

    def set(self, data: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Validates against the registered schema, as the real worker does."""
        entry = self._entry(data, missing_code="NOT_REGISTERED")
        value = data.get("value") if isinstance(data, dict) else None
        try:
            jsonschema.validate(value, entry.schema)
        except jsonschema.ValidationError as exc:
            raise ConfigurationError("SCHEMA_INVALID", exc.message) from None
        return self.store_unchecked(entry.id, value)

    def store_unchecked(self, config_id: str, value: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Test hook: store a value the schema would refuse (an operator editing the store)."""
        entry = self.entries[config_id]
        old = entry.value
        entry.value = copy.deepcopy(value)
        return {"old_value": old, "new_value": entry.value}, self._event(UPDATED, entry, old, value)

    def list(self) -> dict[str, Any]:
        return {
            "configurations": [
                {k: v for k, v in self._stored(e).items() if k != "value"}
                for _, e in sorted(self.entries.items())
            ]
        }

    def _entry(self, data: Any, missing_code: str = "NOT_FOUND") -> Entry:
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            raise ConfigurationError("deserialization_error", "missing field `id`")
        entry = self.entries.get(data["id"])
        if entry is None:
            raise ConfigurationError(missing_code, f"configuration `{data['id']}` not found")
        return entry

    @staticmethod
    def _stored(entry: Entry) -> dict[str, Any]:
        stored = {
            "id": entry.id,
            "name": entry.name,
            "description": entry.description,
            "schema": entry.schema,
            "value": entry.value,
        }
        if entry.metadata is not None:
            stored["metadata"] = entry.metadata
        return stored

    @staticmethod
    def _event(event_type: str, entry: Entry, old: Any, new: Any) -> dict[str, Any]:
        event = {
            "type": "configuration",
            "event_type": event_type,
            "id": entry.id,
            "name": entry.name,
            "description": entry.description,
            "schema": entry.schema,
            "old_value": copy.deepcopy(old),
            "new_value": copy.deepcopy(new),
        }
        if entry.metadata is not None:
            event["metadata"] = entry.metadata
        return event


def binding_matches(config: Any, event: dict[str, Any]) -> bool:
    if not isinstance(config, dict):
        return True
    wanted_id = config.get("configuration_id")
    if wanted_id is not None and wanted_id != event["id"]:
        return False
    event_types = config.get("event_types")
    if event_types is not None and event["event_type"] not in event_types:
        return False
    return True
