"""How a configuration key is declared: once, as a field of the record (``core/settings.py``).

A field's default is written with :func:`declare`, which also records the key's type (its decoder
and JSON-schema fragment), its schema description, its text in ``config.example.yaml`` and what
each profile implies for it. A :class:`KeyTable` reads those declarations back from a record
class; the parser, the registered schema, the manifest, the example file and the console form
are all derived from it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields
from enum import Enum
from typing import Any, Generic, TypeVar, cast, get_args

T = TypeVar("T")
R = TypeVar("R")

# The metadata entry of a record field that holds its declaration.
DECLARATION = "context_manager.key"


@dataclass(frozen=True, slots=True)
class KeyType:
    """How a key's value is read: a decoder the config parser knows by name, the JSON-schema type
    fragment sent with the registered schema, and the accepted names of an enumerated key."""

    decoder: str
    schema: Mapping[str, Any]
    choices: tuple[str, ...] = ()


U64 = KeyType("u64", {"format": "uint64", "minimum": 0.0, "type": "integer"})
USIZE = KeyType("usize", {"format": "uint", "minimum": 0.0, "type": "integer"})
POSITIVE_U64 = KeyType("positive", {"format": "uint64", "minimum": 1.0, "type": "integer"})
# A positive integer, or null: the option is off.
POSITIVE_U64_OR_NULL = KeyType("positive_or_null", {"format": "uint64", "minimum": 1.0, "type": ["integer", "null"]})
BOOLEAN = KeyType("boolean", {"type": "boolean"})
STRING = KeyType("string", {"type": "string"})
# Text, or null: the option is off.
STRING_OR_NULL = KeyType("string_or_null", {"type": ["string", "null"]})
# A model named by id (and provider), or null: the session's model.
MODEL_OR_NULL = KeyType("model_or_null", {
    "additionalProperties": False,
    "properties": {"id": {"minLength": 1, "type": "string"}, "provider": {"type": ["string", "null"]}},
    "required": ["id"],
    "type": ["object", "null"],
})
# A share of ``usable`` in (0, 1]; the second also takes null (the option is off).
FRACTION = KeyType("fraction", {"exclusiveMinimum": 0, "maximum": 1, "type": "number"})
FRACTION_OR_NULL = KeyType("fraction_or_null", {"exclusiveMinimum": 0, "maximum": 1, "type": ["number", "null"]})
# A list of distinct, non-empty names (a JSON array of strings; [] is the empty list).
NAME_LIST = KeyType("name_list", {"items": {"minLength": 1, "type": "string"}, "type": "array", "uniqueItems": True})
RETENTION_POLICY = KeyType("retention", {"anyOf": [{"$ref": "#/definitions/RetentionPolicy"}, {"type": "null"}]})


def choice(names: Any) -> KeyType:
    """An enumerated key whose accepted names are the arguments of a ``Literal`` type."""
    accepted: tuple[str, ...] = get_args(names)
    return KeyType("variant", {"enum": list(accepted), "type": "string"}, accepted)


class Section(Enum):
    """The sections of ``config.example.yaml``, in the file's order."""

    PROFILE = "Profile"
    BUDGET = "Budget defaults (per-call options may override the matching ones)"
    PRUNING = "Pruning and compaction"
    RUNTIME = "Runtime"
    ADDITIONS = "Additions beyond the 1.1.6 configuration"
    CACHE = "Cache-aware reduction"
    CALIBRATION = "Count calibration"
    PROCESSES = "Several processes or hosts"


@dataclass(frozen=True, slots=True)
class Implied:
    """What ``profile`` sets a key to when a configuration leaves the key out.

    ``value`` is written as the configuration's JSON; ``place`` is the key's position (from 1) in
    the profile's summary, the ``key: value`` list the schema and the example file show.
    """

    profile: str
    value: Any
    place: int


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One key as declared: everything but its name and default comes from :func:`declare`."""

    name: str
    default: Any
    type: KeyType
    section: Section
    description: str
    example: str
    implied: tuple[Implied, ...] = ()


def declare(default: T, key_type: KeyType, *, section: Section, description: str, example: str,
            implied: tuple[Implied, ...] = ()) -> T:
    """A record field with ``default`` that carries the key's declaration.

    ``description`` is the schema's text; ``example`` the comment lines above the key in
    ``config.example.yaml``. Either may name a profile's summary as ``{implied:<profile>}``.
    """
    declaration = ConfigKey("", None, key_type, section, description, example, implied)
    return field(default=default, metadata={DECLARATION: declaration})


_SUMMARY = re.compile(r"\{implied:(\w+)\}")


class KeyTable(Generic[R]):
    """The declared keys of a record class, in the record's order, and what follows from them."""

    def __init__(self, record: type[R]) -> None:
        self.record = record
        self.keys: tuple[ConfigKey, ...] = tuple(_declared(f) for f in fields(cast(Any, record)))
        self.names: tuple[str, ...] = tuple(key.name for key in self.keys)
        self.by_name: dict[str, ConfigKey] = {key.name: key for key in self.keys}
        self.profiles: dict[str, dict[str, Any]] = {
            profile: self._implied_by(profile) for profile in self.by_name["profile"].type.choices
        }

    def _implied_by(self, profile: str) -> dict[str, Any]:
        placed = sorted((implied.place, key.name, implied.value)
                        for key in self.keys for implied in key.implied if implied.profile == profile)
        if [place for place, _, _ in placed] != list(range(1, len(placed) + 1)):
            raise ValueError(f"the keys profile {profile!r} implies are not placed 1..{len(placed)}")
        return {name: value for _, name, value in placed}

    def summary(self, profile: str) -> str:
        """What a profile implies, as ``key: value`` pairs in JSON (``summary_check: "append"``)."""
        return ", ".join(f"{key}: {json.dumps(value)}" for key, value in self.profiles[profile].items())

    def expand(self, text: str) -> str:
        """``text`` with every ``{implied:<profile>}`` replaced by that profile's summary."""
        return _SUMMARY.sub(lambda match: self.summary(match.group(1)), text)

    def description(self, name: str) -> str:
        return self.expand(self.by_name[name].description)


def _declared(record_field: Field[Any]) -> ConfigKey:
    declaration = record_field.metadata.get(DECLARATION)
    if not isinstance(declaration, ConfigKey):
        raise TypeError(f"record field {record_field.name!r} is not declared with declare()")
    return ConfigKey(record_field.name, record_field.default, declaration.type, declaration.section,
                     declaration.description, declaration.example, declaration.implied)
