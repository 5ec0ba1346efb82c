"""Strict parsing of a configuration value into a :class:`WorkerConfig` (spec 04 §2.2).

Rules: the value is an object; unknown keys are rejected; a missing key takes its default; an
explicit ``null`` is a type error; integers are exact non-negative 64-bit integers (no floats,
no booleans); booleans and strings are exactly that. Error texts are ``<prefix>: <detail>``;
only the prefix is stable (``json parse`` for fetched values, ``yaml parse`` for the seed).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Callable, Iterable

from .model import DEFAULT_CONFIG, WorkerConfig

U64_MAX = (1 << 64) - 1

OVERFLOW_FALLBACKS = ("error", "drop_oldest")
ESTIMATORS = ("heuristic", "auto")


class ConfigError(ValueError):
    """A configuration value that does not parse; ``str()`` is ``<prefix>: <detail>``."""

    def __init__(self, prefix: str, detail: str) -> None:
        super().__init__(f"{prefix}: {detail}")
        self.prefix = prefix
        self.detail = detail


class _Invalid(Exception):
    """A rejected member; turned into a ConfigError with the caller's prefix."""


def describe(value: Any) -> str:
    """How an unexpected value is named in a rejection."""
    if value is None:
        return "null"
    if value is True or value is False:
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        text = f"{value:.1f}" if value.is_integer() and abs(value) < 1e17 else repr(value)
        return f"floating point `{text}`"
    if isinstance(value, str):
        return f'string "{value}"'
    if isinstance(value, (list, tuple)):
        return "sequence"
    if isinstance(value, dict):
        return "map"
    return "value"


def _invalid_type(value: Any, expected: str) -> _Invalid:
    return _Invalid(f"invalid type: {describe(value)}, expected {expected}")


def _unsigned(expected: str) -> Callable[[Any], int]:
    def decode(value: Any) -> int:
        if type(value) is int:
            if 0 <= value <= U64_MAX:
                return value
            raise _Invalid(f"invalid value: integer `{value}`, expected {expected}")
        raise _invalid_type(value, expected)

    return decode


def _boolean(value: Any) -> bool:
    if value is True or value is False:
        return value
    raise _invalid_type(value, "a boolean")


def _string(value: Any) -> str:
    if type(value) is str:
        return value
    raise _invalid_type(value, "a string")


def _choice(allowed: tuple[str, ...]) -> Callable[[Any], str]:
    def decode(value: Any) -> str:
        if type(value) is not str:
            raise _invalid_type(value, "variant identifier")
        if value not in allowed:
            listed = " or ".join(f"`{v}`" for v in allowed)
            raise _Invalid(f"unknown variant `{value}`, expected {listed}")
        return value

    return decode


_u64 = _unsigned("u64")
_usize = _unsigned("usize")

# Every key, its decoder; the order is the record's declaration order.
KEY_DECODERS: dict[str, Callable[[Any], Any]] = {
    "reserved_tokens_cap": _u64,
    "reserved_pct": _u64,
    "tail_turns": _usize,
    "protect_recent_tokens": _u64,
    "decay_user_turns": _usize,
    "protected_user_turns": _usize,
    "min_free_tokens": _u64,
    "max_output_chars": _usize,
    "max_result_tokens": _u64,
    "lease_ttl_secs": _u64,
    "allow_fallback_limits": _boolean,
    "summarizer_timeout_ms": _u64,
    "lease_dir": _string,
    "overflow_fallback": _choice(OVERFLOW_FALLBACKS),
    "estimator": _choice(ESTIMATORS),
    "user_less_compaction": _boolean,
}

STRING_KEYS = frozenset(("lease_dir", "overflow_fallback", "estimator"))

assert tuple(KEY_DECODERS) == WorkerConfig.key_names(), "parser and record disagree on the keys"


def _unknown_field(key: str) -> _Invalid:
    expected = ", ".join(f"`{k}`" for k in KEY_DECODERS)
    return _Invalid(f"unknown field `{key}`, expected one of {expected}")


def parse_config_items(items: Iterable[tuple[Any, Any]], prefix: str) -> WorkerConfig:
    """Build a config from (key, value) pairs in the order given; the first bad pair is reported."""
    values: dict[str, Any] = {}
    try:
        for key, value in items:
            if type(key) is not str:
                raise _invalid_type(key, "field identifier")
            decoder = KEY_DECODERS.get(key)
            if decoder is None:
                raise _unknown_field(key)
            if key in values:
                raise _Invalid(f"duplicate field `{key}`")
            values[key] = decoder(value)
    except _Invalid as exc:
        raise ConfigError(prefix, str(exc)) from None
    return WorkerConfig(**values)


def parse_config_value(value: Any, prefix: str = "json parse") -> WorkerConfig:
    """Parse a decoded JSON value (an object) into a config.

    Members are checked in ascending key order, the order in which the original's decoder met
    them, so with several faults the same one is named.
    """
    if type(value) is not dict:
        raise ConfigError(prefix, str(_invalid_type(value, "struct WorkerConfig")))
    return parse_config_items(sorted(value.items(), key=lambda kv: kv[0]), prefix)


def config_to_json(config: WorkerConfig) -> dict[str, Any]:
    """Every key of the record with its value, keys sorted (the seed's full object, the example)."""
    return {f.name: getattr(config, f.name) for f in sorted(fields(config), key=lambda f: f.name)}


def defaults_object() -> dict[str, Any]:
    """The built-in defaults, keys sorted: schema example, manifest ``default_config``, initial value."""
    return config_to_json(DEFAULT_CONFIG)
