"""Strict parsing of a configuration value into a :class:`WorkerConfig` (spec 04 §2.2).

Rules: the value is an object; unknown keys are rejected; a missing key takes its default; an
explicit ``null`` is a type error; integers are exact non-negative 64-bit integers (no floats,
no booleans); booleans and strings are exactly that. Error texts are ``<prefix>: <detail>``;
only the prefix is stable (``json parse`` for fetched values, ``yaml parse`` for the seed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import Any, get_args

from context_manager.config.retention import parse_retention
from context_manager.core.settings import (
    DEFAULT_CONFIG,
    PROFILE_KEYS,
    CountCalibration,
    EstimatorName,
    LeaseStoreName,
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


class ConfigError(Error, ValueError):
    """A configuration value that does not parse; ``str()`` is ``<prefix>: <detail>``."""

    def __init__(self, prefix: str, detail: str) -> None:
        super().__init__(f"{prefix}: {detail}")
        self.prefix = prefix
        self.detail = detail


_u64 = t.u64
_usize = t.usize
_boolean = t.boolean
_string = t.string

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


def _fraction_or_null(value: Any) -> float | None:
    """``null`` (the option is off) or a fraction in (0, 1]."""
    if value is None:
        return None
    try:
        return _fraction(value)
    except DecodeError as exc:
        raise DecodeError(exc.detail.replace("expected a fraction", "expected null or a fraction")) from None


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
    "overflow_fallback": t.variant_name_of(OVERFLOW_FALLBACKS),
    "estimator": t.variant_name_of(ESTIMATORS),
    "user_less_compaction": _boolean,
    "anchor_messages": _usize,
    "summary_check": t.variant_name_of(SUMMARY_CHECKS),
    "summarizer_fallback": t.variant_name_of(SUMMARIZER_FALLBACKS),
    "working_set": _boolean,
    "report_prefix": _boolean,
    "reduce_to": _fraction,
    "summary_reuse": _boolean,
    "summary_placement": t.variant_name_of(SUMMARY_PLACEMENTS),
    "eager_compaction_at": _fraction_or_null,
    "retention": parse_retention,
    "count_calibration": t.variant_name_of(COUNT_CALIBRATIONS),
    "lease_store": t.variant_name_of(LEASE_STORES),
    "session_store": t.variant_name_of(SESSION_STORES),
    "session_ttl_secs": _positive,
    "profile": t.variant_name_of(PROFILES),
}

STRING_KEYS = frozenset(("lease_dir", "overflow_fallback", "estimator", "summary_check",
                         "summarizer_fallback", "summary_placement", "count_calibration",
                         "lease_store", "session_store", "profile"))

assert tuple(KEY_DECODERS) == WorkerConfig.key_names(), "parser and record disagree on the keys"


def _unknown_field(key: str) -> DecodeError:
    expected = ", ".join(f"`{k}`" for k in KEY_DECODERS)
    return DecodeError(f"unknown field `{key}`, expected one of {expected}")


def parse_config_items(items: Iterable[tuple[Any, Any]], prefix: str) -> WorkerConfig:
    """Build a config from (key, value) pairs in the order given; the first bad pair is reported."""
    values: dict[str, Any] = {}
    try:
        for key, value in items:
            if type(key) is not str:
                raise t.invalid_type(key, "field identifier")
            decoder = KEY_DECODERS.get(key)
            if decoder is None:
                raise _unknown_field(key)
            if key in values:
                raise DecodeError(f"duplicate field `{key}`")
            values[key] = decoder(value)
        for key, implied in PROFILE_KEYS[values.get("profile", "faithful")].items():
            if key not in values:
                values[key] = KEY_DECODERS[key](implied)
    except DecodeError as exc:
        raise ConfigError(prefix, exc.detail) from None
    return WorkerConfig(**values)


def parse_config_value(value: Any, prefix: str = "json parse") -> WorkerConfig:
    """Parse a decoded JSON value (an object) into a config.

    Members are checked in ascending key order, the order in which the original's decoder met
    them, so with several faults the same one is named.
    """
    if type(value) is not dict:
        raise ConfigError(prefix, t.invalid_type(value, "struct WorkerConfig").detail)
    return parse_config_items(sorted(value.items(), key=lambda kv: kv[0]), prefix)


def config_to_json(config: WorkerConfig) -> dict[str, Any]:
    """Every key of the record with its value, keys sorted (the seed's full object, the example).

    A key whose value is the one its profile implies is left out, so the stored object keeps
    following the profile: switching the profile later changes it too.
    """
    as_json = config.to_dict()
    implied = PROFILE_KEYS[config.profile]
    return {f.name: as_json[f.name] for f in sorted(fields(config), key=lambda f: f.name)
            if f.name not in implied or as_json[f.name] != implied[f.name]}


def defaults_object() -> dict[str, Any]:
    """The built-in defaults, keys sorted: schema example, manifest ``default_config``, initial value."""
    return config_to_json(DEFAULT_CONFIG)
