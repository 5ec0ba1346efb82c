"""Strict parsing of a configuration value into a :class:`WorkerConfig` (spec 04 §2.2).

Rules: the value is an object; unknown keys are rejected; a missing key takes its default; an
explicit ``null`` is a type error; integers are exact non-negative 64-bit integers (no floats,
no booleans); booleans and strings are exactly that. Error texts are ``<prefix>: <detail>``;
only the prefix is stable (``json parse`` for fetched values, ``yaml parse`` for the seed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar, get_args

from context_manager.config.retention import parse_retention
from context_manager.core.keys import ConfigKey, KeyTable
from context_manager.core.settings import (
    CONFIG_KEYS,
    CountCalibration,
    EstimatorName,
    LeaseStoreName,
    ModelChoice,
    OverflowFallback,
    ProfileName,
    SessionStoreName,
    SummarizerFallback,
    SummaryCheck,
    SummaryPlacement,
    WorkerConfig,
)
from context_manager.wire import decode as t
from context_manager.wire.errors import DecodeError, Error

OVERFLOW_FALLBACKS: tuple[str, ...] = get_args(OverflowFallback)
ESTIMATORS: tuple[str, ...] = get_args(EstimatorName)
SUMMARY_CHECKS: tuple[str, ...] = get_args(SummaryCheck)
SUMMARIZER_FALLBACKS: tuple[str, ...] = get_args(SummarizerFallback)
SUMMARY_PLACEMENTS: tuple[str, ...] = get_args(SummaryPlacement)
COUNT_CALIBRATIONS: tuple[str, ...] = get_args(CountCalibration)
LEASE_STORES: tuple[str, ...] = get_args(LeaseStoreName)
SESSION_STORES: tuple[str, ...] = get_args(SessionStoreName)
PROFILES: tuple[str, ...] = get_args(ProfileName)

C = TypeVar("C", bound=WorkerConfig)
_D = TypeVar("_D")  # what a decoder yields


class ConfigError(Error, ValueError):
    """A configuration value that does not parse; ``str()`` is ``<prefix>: <detail>``."""

    def __init__(self, prefix: str, detail: str) -> None:
        super().__init__(f"{prefix}: {detail}")
        self.prefix = prefix
        self.detail = detail


def _positive(value: Any) -> int:
    """A u64 above zero (a TTL of 0 would keep nothing)."""
    number = t.u64(value)
    if number == 0:
        raise DecodeError("invalid value: integer `0`, expected a positive integer")
    return number


def _fraction(value: Any) -> float:
    """A share of ``usable``: a JSON number in (0, 1] (integers 1 accepted, booleans not)."""
    if type(value) is int and value == 1:
        return 1.0
    if type(value) is not float:
        raise t.invalid_type(value, "a fraction in (0, 1]")
    if not 0.0 < value <= 1.0:
        raise DecodeError(f"invalid value: {t.unexpected(value)}, expected a fraction in (0, 1]")
    return value


def _null_or(decode: Callable[[Any], _D], value: Any, *expected: str) -> _D | None:
    """``null`` (the option is off) or what ``decode`` accepts; in its error, each ``expected X``
    phrase named in ``expected`` reads ``expected null or X``."""
    if value is None:
        return None
    try:
        return decode(value)
    except DecodeError as exc:
        detail = exc.detail
        for phrase in expected:
            detail = detail.replace(f"expected {phrase}", f"expected null or {phrase}")
        raise DecodeError(detail) from None


def _fraction_or_null(value: Any) -> float | None:
    """``null`` (the option is off) or a fraction in (0, 1]."""
    return _null_or(_fraction, value, "a fraction")


def _positive_or_null(value: Any) -> int | None:
    """``null`` (the option is off) or a u64 above zero."""
    return _null_or(_positive, value, "a positive integer", "u64")


def _name_list(value: Any) -> tuple[str, ...]:
    """A JSON array of distinct, non-empty strings, kept as a tuple in the record's order."""
    if type(value) is not list:
        raise t.invalid_type(value, "a sequence of names")
    names: list[str] = []
    for item in value:
        name = t.string(item)
        if not name:
            raise DecodeError("invalid value: an empty name, expected a non-empty string")
        if name in names:
            raise DecodeError(f"invalid value: the name `{name}` is listed twice, expected distinct names")
        names.append(name)
    return tuple(names)


def _string_or_null(value: Any) -> str | None:
    """``null`` (the option is off) or text."""
    if value is None:
        return None
    try:
        return t.string(value)
    except DecodeError as exc:
        raise DecodeError(exc.detail.replace("expected a string", "expected null or a string")) from None


_MODEL_FIELDS = {"id": t.FieldSpec(t.string, required=True), "provider": t.FieldSpec(t.string)}


def _model_or_null(value: Any) -> ModelChoice | None:
    """``null`` (the session's model) or ``{id, provider?}`` with a non-empty id."""
    if value is None:
        return None
    if type(value) is dict:
        unknown = sorted(set(value) - set(_MODEL_FIELDS))
        if unknown:
            raise DecodeError(f"unknown field `{unknown[0]}`, expected `id` or `provider`")
    fields = t.decode_struct(value, "ModelChoice", _MODEL_FIELDS)
    if not fields["id"]:
        raise DecodeError("invalid value: string \"\", expected a model id")
    return ModelChoice(fields["id"], fields["provider"])


# The decoders a key declaration names (core/keys.py, ``KeyType.decoder``).
DECODERS: dict[str, Callable[[Any], Any]] = {
    "u64": t.u64,
    "usize": t.usize,
    "boolean": t.boolean,
    "string": t.string,
    "positive": _positive,
    "positive_or_null": _positive_or_null,
    "string_or_null": _string_or_null,
    "model_or_null": _model_or_null,
    "fraction": _fraction,
    "fraction_or_null": _fraction_or_null,
    "retention": parse_retention,
    "name_list": _name_list,
}


def decoder_for(key: ConfigKey) -> Callable[[Any], Any]:
    if key.type.decoder == "variant":
        return t.variant_name_of(key.type.choices)
    return DECODERS[key.type.decoder]


class ConfigCodec(Generic[C]):
    """Strict parsing and JSON writing of the record a key table declares."""

    def __init__(self, table: KeyTable[C]) -> None:
        self.table = table
        # Every key, its decoder; the order is the record's declaration order.
        self.decoders: dict[str, Callable[[Any], Any]] = {key.name: decoder_for(key) for key in table.keys}
        # Keys whose YAML plain scalars are read as text (config/seed.py).
        self.string_keys = frozenset(key.name for key in table.keys
                                     if key.type.schema.get("type") in ("string", ["string", "null"]))
        self.defaults: C = table.record()

    def _unknown_field(self, key: str) -> DecodeError:
        expected = ", ".join(f"`{k}`" for k in self.decoders)
        return DecodeError(f"unknown field `{key}`, expected one of {expected}")

    def parse_items(self, items: Iterable[tuple[Any, Any]], prefix: str) -> C:
        """Build a config from (key, value) pairs in the order given; the first bad pair is reported."""
        values: dict[str, Any] = {}
        try:
            for key, value in items:
                if type(key) is not str:
                    raise t.invalid_type(key, "field identifier")
                decoder = self.decoders.get(key)
                if decoder is None:
                    raise self._unknown_field(key)
                if key in values:
                    raise DecodeError(f"duplicate field `{key}`")
                values[key] = decoder(value)
            for key, implied in self.table.profiles[values.get("profile", "faithful")].items():
                if key not in values:
                    values[key] = self.decoders[key](implied)
        except DecodeError as exc:
            raise ConfigError(prefix, exc.detail) from None
        return self.table.record(**values)

    def parse_value(self, value: Any, prefix: str = "json parse") -> C:
        """Parse a decoded JSON value (an object) into a config.

        Members are checked in ascending key order, the order in which the original's decoder met
        them, so with several faults the same one is named.
        """
        if type(value) is not dict:
            raise ConfigError(prefix, t.invalid_type(value, "struct WorkerConfig").detail)
        return self.parse_items(sorted(value.items(), key=lambda kv: kv[0]), prefix)

    def to_json(self, config: C) -> dict[str, Any]:
        """Every key of the record with its value, keys sorted (the seed's full object, the example).

        A key whose value is the one its profile implies is left out, so the stored object keeps
        following the profile: switching the profile later changes it too.
        """
        as_json = config.to_dict()
        implied = self.table.profiles[config.profile]
        return {name: as_json[name] for name in sorted(self.table.names)
                if name not in implied or as_json[name] != implied[name]}

    def defaults_object(self) -> dict[str, Any]:
        """The built-in defaults, keys sorted: schema example, manifest ``default_config``, initial value."""
        return self.to_json(self.defaults)


WORKER_CONFIG = ConfigCodec(CONFIG_KEYS)
KEY_DECODERS = WORKER_CONFIG.decoders
STRING_KEYS = WORKER_CONFIG.string_keys


def parse_config_items(items: Iterable[tuple[Any, Any]], prefix: str) -> WorkerConfig:
    """Build a config from (key, value) pairs in the order given; the first bad pair is reported."""
    return WORKER_CONFIG.parse_items(items, prefix)


def parse_config_value(value: Any, prefix: str = "json parse") -> WorkerConfig:
    """Parse a decoded JSON value (an object) into a config.

    Members are checked in ascending key order, the order in which the original's decoder met
    them, so with several faults the same one is named.
    """
    return WORKER_CONFIG.parse_value(value, prefix)


def config_to_json(config: WorkerConfig) -> dict[str, Any]:
    """Every key of the record with its value, keys sorted, less the values its profile implies."""
    return WORKER_CONFIG.to_json(config)


def defaults_object() -> dict[str, Any]:
    """The built-in defaults, keys sorted: schema example, manifest ``default_config``, initial value."""
    return WORKER_CONFIG.defaults_object()
