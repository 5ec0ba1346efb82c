"""Decoding of wire values into canonical dicts (spec 01 §3, §4.4).

A decoded message or block is a dict whose insertion order is the original's declaration order,
with optional members omitted, defaults filled and unknown members dropped, so that
``codec.dumps`` reproduces the original's serialization byte for byte.

Error texts follow the original's decoder. When several members are wrong, the original reports
the first one in ascending key order, then missing required members; decoders here succeed in
declaration order and, only when something fails, walk the keys again in sorted order to name
the same first failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from context_manager.wire import schema
from context_manager.wire.codec import Fragment, canonical_free_form, float_fragment
from context_manager.wire.errors import DecodeError
from context_manager.wire.ints import I64_MAX, I64_MIN, U64_MAX
from context_manager.wire.plain import note_cost
from context_manager.wire.schema import (  # the layouts and enums are also read from this module
    BLOCK_TYPES,
    ROLES,
    STOP_REASONS,
    USAGE_LAYOUT,
    Presence,
    Record,
)

THINKING_LEVELS = ("minimal", "low", "medium", "high", "xhigh")
EXECUTION_MODES = ("parallel", "sequential")

Decoder = Callable[[Any], Any]


# --- describing unexpected values the way the original's decoder does ---------------------


def _float_text(x: float) -> str:
    if x.is_integer() and abs(x) < 1e17:
        return f"{int(x)}.0"
    return repr(x)


def unexpected(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{_float_text(value)}`"
    if isinstance(value, Fragment):
        return "floating point"
    if isinstance(value, str):
        return 'string "' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "sequence"
    if isinstance(value, dict):
        return "map"
    return "value"


def invalid_type(value: Any, expected: str) -> DecodeError:
    return DecodeError(f"invalid type: {unexpected(value)}, expected {expected}")


def missing_field(name: str) -> DecodeError:
    return DecodeError(f"missing field `{name}`")


def unknown_variant(value: str, allowed: tuple[str, ...]) -> DecodeError:
    # The original's decoder words the list by its length: `a`; `a` or `b`; one of `a`, `b`, `c`.
    if len(allowed) == 1:
        expected = f"`{allowed[0]}`"
    elif len(allowed) == 2:
        expected = f"`{allowed[0]}` or `{allowed[1]}`"
    else:
        expected = "one of " + ", ".join(f"`{v}`" for v in allowed)
    return DecodeError(f"unknown variant `{value}`, expected {expected}")


# --- primitive decoders ---------------------------------------------------------------------


def _unsigned(name: str) -> Decoder:
    """A 64-bit unsigned integer; ``name`` is how the original's decoder calls the type."""

    def decode(value: Any) -> int:
        if type(value) is int:
            if 0 <= value <= U64_MAX:
                return value
            raise DecodeError(f"invalid value: integer `{value}`, expected {name}")
        raise invalid_type(value, name)

    return decode


u64 = _unsigned("u64")
usize = _unsigned("usize")  # the platform word of the original's 64-bit builds


def i64(value: Any) -> int:
    if type(value) is int:
        if I64_MIN <= value <= I64_MAX:
            return value
        raise DecodeError(f"invalid value: integer `{value}`, expected i64")
    raise invalid_type(value, "i64")


def f64(value: Any) -> Fragment | float:
    """The one typed float (`usage.cost_usd`): any number, re-emitted as a float."""
    if type(value) is int or type(value) is float:
        return _cost(float(value))
    if isinstance(value, Fragment):
        return note_cost(value)
    raise invalid_type(value, "f64")


def _cost(x: float) -> Fragment | float:
    value = float_fragment(x)
    return note_cost(value) if type(value) is Fragment else value


def boolean(value: Any) -> bool:
    if value is True or value is False:
        return value
    raise invalid_type(value, "a boolean")


def string(value: Any) -> str:
    if type(value) is str:
        return value
    raise invalid_type(value, "a string")


def free_form(value: Any) -> Any:
    return canonical_free_form(value)


def variant_name(value: Any, allowed: tuple[str, ...]) -> str:
    """A string naming one of ``allowed``: a record's tag (`role`, a block's `type`), a map key
    naming a variant, a configuration choice. Anything but a string is not a name."""
    if type(value) is str:
        if value in allowed:
            return value
        raise unknown_variant(value, allowed)
    raise invalid_type(value, "variant identifier")


def variant_name_of(allowed: tuple[str, ...]) -> Decoder:
    return lambda value: variant_name(value, allowed)


def enum_value(value: Any, allowed: tuple[str, ...], *, buffered: bool = False) -> str:
    """A member whose type is one of the original's enums of plain variants (`stop_reason`,
    `error_kind`, `thinking_level`, `execution_mode`), read as its decoder reads one from a JSON
    value: a string names the variant; so does the key of an object of exactly one member, whose
    value must be null (or, inside a message, whose members the original's decoder buffers
    first, an empty object); any other value is neither of the two forms."""
    if type(value) is str:
        return variant_name(value, allowed)
    if type(value) is dict:
        if len(value) != 1:
            raise DecodeError("invalid value: map, expected map with a single key")
        ((key, unit),) = value.items()
        name = variant_name(key, allowed)
        if unit is None or (buffered and type(unit) is dict and not unit):
            return name
        raise invalid_type(unit, "unit")
    raise invalid_type(value, "string or map")


def enum_of(allowed: tuple[str, ...], *, buffered: bool = False) -> Decoder:
    return lambda value: enum_value(value, allowed, buffered=buffered)


def sequence(item: Decoder) -> Decoder:
    def decode(value: Any) -> list[Any]:
        if type(value) is not list:
            raise invalid_type(value, "a sequence")
        return [item(v) for v in value]

    return decode


def string_map(value: Any) -> dict[str, str]:
    if type(value) is not dict:
        raise invalid_type(value, "a map")
    for key in sorted(value):
        string(value[key])
    return {key: value[key] for key in sorted(value)}


def optional(decoder: Decoder) -> Decoder:
    """Null and absent mean "none" (for use inside sequences or as a top-level value)."""
    return lambda value: None if value is None else decoder(value)


# --- structs --------------------------------------------------------------------------------


class FieldSpec(NamedTuple):
    decoder: Decoder
    required: bool = False
    default: Any = None
    # For optional members null means absent; a few defaulted booleans reject an explicit null.
    null_is_absent: bool = True


_ABSENT = object()


def decode_struct(value: Any, type_name: str, fields: dict[str, FieldSpec]) -> dict[str, Any]:
    """Decode an object against ``fields``; the result has every field (absent -> default)."""
    if type(value) is not dict:
        raise invalid_type(value, f"struct {type_name}")
    try:
        return _decode_fields(value, fields, {})
    except DecodeError:
        _explain_struct(value, fields)
        raise


def _decode_fields(value: dict[str, Any], fields: dict[str, FieldSpec], out: dict[str, Any]) -> dict[str, Any]:
    """``out`` with every field appended in order (absent -> default)."""
    get = value.get
    for name, spec in fields.items():
        raw = get(name, _ABSENT)
        if raw is _ABSENT:
            if spec.required:
                raise missing_field(name)
            out[name] = spec.default
        elif raw is None and spec.null_is_absent and not spec.required:
            out[name] = spec.default
        else:
            out[name] = spec.decoder(raw)
    return out


def _explain_struct(value: dict[str, Any], fields: dict[str, FieldSpec]) -> None:
    """Raise the failure the original reports first: sorted present keys, then missing ones."""
    for name in sorted(value):
        spec = fields.get(name)
        if spec is None:
            continue
        raw = value[name]
        if raw is None and spec.null_is_absent and not spec.required:
            continue
        spec.decoder(raw)
    for name, spec in fields.items():
        if spec.required and name not in value:
            raise missing_field(name)


class _RecordSpec(NamedTuple):
    fields: dict[str, FieldSpec]
    omitted: tuple[str, ...]  # members the canonical form leaves out when they decode to None


def _decode_record(tag: str | None, kind: str, value: Any, spec: _RecordSpec) -> dict[str, Any]:
    """The canonical dict of a record: its tag (if any), then its members in declaration order,
    omitted ones left out when they decode to None."""
    if type(value) is not dict:
        raise invalid_type(value, f"struct {kind}")
    try:
        out = _decode_fields(value, spec.fields, {} if tag is None else {tag: kind})
    except DecodeError:
        _explain_struct(value, spec.fields)
        raise
    for name in spec.omitted:
        if out[name] is None:
            del out[name]
    return out


# --- content blocks -------------------------------------------------------------------------


def _tag(value: Any, tag: str, enum_name: str, allowed: tuple[str, ...]) -> str:
    if type(value) is not dict:
        raise invalid_type(value, f"internally tagged enum {enum_name}")
    if tag not in value:
        raise missing_field(tag)
    return variant_name(value[tag], allowed)


def decode_block(value: Any) -> dict[str, Any]:
    kind = _tag(value, "type", "ContentBlock", BLOCK_TYPES)
    return _decode_record(schema.BLOCK_TAG, kind, value, _BLOCK_SPECS[kind])


def decode_blocks(value: Any) -> list[dict[str, Any]]:
    if type(value) is not list:
        raise invalid_type(value, "a sequence")
    if not _FAST_BLOCKS_ON:  # a kind decoded inline below has members the checks do not know
        return [decode_block(v) for v in value]
    out: list[dict[str, Any]] = []
    append = out.append
    for v in value:
        # Well-formed text, thinking and call blocks, the bulk of a history, skip the generic
        # dispatch; anything else (or anything unusual) goes through it.
        if type(v) is dict:
            kind = v.get("type")
            if kind == "text":
                text = v.get("text")
                if type(text) is str:
                    append({"type": "text", "text": text})
                    continue
            elif kind == "function_call":
                call_id, function_id = v.get("id"), v.get("function_id")
                if type(call_id) is str and type(function_id) is str:
                    arguments = v.get("arguments")
                    append({"type": "function_call", "id": call_id, "function_id": function_id,
                            "arguments": None if arguments is None else canonical_free_form(arguments)})
                    continue
            elif kind == "thinking":
                text, signature = v.get("text"), v.get("signature")
                if type(text) is str:
                    if signature is None:
                        append({"type": "thinking", "text": text})
                        continue
                    if type(signature) is str:
                        append({"type": "thinking", "text": text, "signature": signature})
                        continue
        append(decode_block(v))
    return out


# --- messages -------------------------------------------------------------------------------


def decode_usage(value: Any) -> dict[str, Any]:
    return _decode_record(None, "Usage", value, _USAGE_SPEC)


def _timestamp(value: dict[str, Any]) -> int | None:
    ts = value.get("timestamp")
    return ts if type(ts) is int and I64_MIN <= ts <= I64_MAX else None


def _fast_usage(value: Any) -> dict[str, Any] | None:
    """A usage object of known members with plain values, else None (the general path)."""
    if type(value) is not dict or not _FAST_USAGE:
        return None
    out: dict[str, Any] = {}
    get = value.get
    for name in _USAGE_INTEGERS:
        n = get(name)
        if n is not None:
            if type(n) is not int or n < 0 or n > U64_MAX:
                return None
            out[name] = n
    cost = get("cost_usd")
    if cost is not None:
        if type(cost) is not float and type(cost) is not int:
            return None
        out["cost_usd"] = _cost(float(cost))
    return out


def _fast_message(role: str, value: dict[str, Any]) -> dict[str, Any] | None:
    """The common, well-formed shapes decoded without the generic walker.

    Returns None whenever anything is unusual; the generic path then decodes the message and
    raises the original's first error. Content errors raised here are the generic path's
    too (``content`` is each role's first member in sorted order), but callers re-run the
    generic path on any DecodeError anyway.
    """
    content = value.get("content")
    ts = _timestamp(value)
    if type(content) is not list or ts is None:
        return None
    if role == "function_result":
        call_id, function_id = value.get("function_call_id"), value.get("function_id")
        is_error = value.get("is_error", False)
        if type(call_id) is not str or type(function_id) is not str or (is_error is not True and is_error is not False):
            return None
        details = value.get("details")
        return {"role": "function_result", "function_call_id": call_id, "function_id": function_id,
                "content": decode_blocks(content),
                "details": None if details is None else canonical_free_form(details),
                "is_error": is_error, "timestamp": ts}
    if role == "user":
        return {"role": "user", "content": decode_blocks(content), "timestamp": ts}
    if role == "assistant":
        stop_reason, model, provider = value.get("stop_reason"), value.get("model"), value.get("provider")
        if (type(stop_reason) is not str or stop_reason not in STOP_REASONS or type(model) is not str
                or type(provider) is not str):
            return None
        for name in _ASSISTANT_LEFT_TO_GENERIC:
            if value.get(name) is not None:
                return None
        out: dict[str, Any] = {"role": "assistant", "content": decode_blocks(content),
                               "stop_reason": stop_reason}
        usage = value.get("usage")
        if usage is not None:
            usage = _fast_usage(usage)
            if usage is None:
                return None
            out["usage"] = usage
        out["model"] = model
        out["provider"] = provider
        out["timestamp"] = ts
        return out
    return None


def decode_message(value: Any) -> dict[str, Any]:
    if type(value) is dict:
        role = value.get("role")
        if type(role) is str and role in _FAST_ROLES:
            try:
                fast = _fast_message(role, value)
            except DecodeError:
                fast = None
            if fast is not None:
                return fast
    # Anything unusual: the generic walker raises the original's first error.
    role = _tag(value, "role", "AgentMessage", ROLES)
    return _decode_record(schema.MESSAGE_TAG, role, value, _MESSAGE_SPECS[role])


# --- the field tables, from the schema ------------------------------------------------------


_DECODERS: dict[str, Decoder] = {
    schema.STRING: string,
    schema.U64: u64,
    schema.I64: i64,
    schema.F64: f64,
    schema.BOOLEAN: boolean,
    schema.FREE_FORM: free_form,
    schema.STRINGS: sequence(string),
    schema.BLOCK_LIST: decode_blocks,
    schema.USAGE: decode_usage,
}


def _field_spec(m: schema.Member) -> FieldSpec:
    # Every record here sits inside a message, which the original's decoder buffers first.
    decoder = enum_of(m.type, buffered=True) if isinstance(m.type, tuple) else _DECODERS[m.type]
    if m.presence is Presence.REQUIRED:
        return FieldSpec(decoder, required=True)
    if m.presence is Presence.DEFAULT:
        return FieldSpec(decoder, default=m.default, null_is_absent=False)
    return FieldSpec(decoder)


def _record_spec(record: Record) -> _RecordSpec:
    return _RecordSpec({m.name: _field_spec(m) for m in record}, schema.names(record, presence=Presence.OMITTED))


_BLOCK_SPECS = {kind: _record_spec(record) for kind, record in schema.BLOCKS.items()}
_MESSAGE_SPECS = {role: _record_spec(record) for role, record in schema.MESSAGES.items()}
_USAGE_SPEC = _record_spec(schema.USAGE_RECORD)

# The fast paths above test members by name (the names are listed in wire/schema.py); one
# whose record has members it does not know is switched off here, leaving the generic path.
_FAST_BLOCKS_ON = all(schema.knows_all(schema.BLOCKS[kind], known)
                      for kind, known in schema.DECODE_FAST_BLOCKS.items())
_FAST_ROLES = frozenset(
    {role for role, known in schema.DECODE_FAST_MESSAGES.items() if schema.knows_all(schema.MESSAGES[role], known)}
    | ({"assistant"} if schema.knows_all_but_omitted(schema.MESSAGES["assistant"], schema.DECODE_FAST_ASSISTANT)
       else set()))
_ASSISTANT_LEFT_TO_GENERIC = schema.unknown(schema.MESSAGES["assistant"], schema.DECODE_FAST_ASSISTANT)
_USAGE_INTEGERS = schema.names(schema.USAGE_RECORD, of_type=schema.U64)
_FAST_USAGE = (
    USAGE_LAYOUT == (*_USAGE_INTEGERS, schema.DECODE_FAST_USAGE_FLOAT)
    and schema.member(schema.USAGE_RECORD, schema.DECODE_FAST_USAGE_FLOAT).type == schema.F64
    and all(m.presence is Presence.OMITTED for m in schema.USAGE_RECORD))


def decode_messages(value: Any) -> list[dict[str, Any]]:
    """Every message decoded into a new dict (``core.intake`` adds the reuse of a call)."""
    if type(value) is not list:
        raise invalid_type(value, "a sequence")
    return [decode_message(v) for v in value]


# --- tools, models --------------------------------------------------------------------------

_FUNCTION = {
    "name": FieldSpec(string, required=True),
    "description": FieldSpec(string, required=True),
    "parameters": FieldSpec(free_form),
    "label": FieldSpec(string),
    "execution_mode": FieldSpec(enum_of(EXECUTION_MODES)),
}


def decode_function(value: Any) -> dict[str, Any]:
    f = decode_struct(value, "AgentFunction", _FUNCTION)
    out = {"name": f["name"], "description": f["description"], "parameters": f["parameters"]}
    if f["label"] is not None:
        out["label"] = f["label"]
    if f["execution_mode"] is not None:
        out["execution_mode"] = f["execution_mode"]
    return out


_decode_tool_list = sequence(decode_function)


def decode_tools(value: Any) -> list[dict[str, Any]]:
    return _decode_tool_list(value)


@dataclass(frozen=True, slots=True)
class ModelLimits:
    context_window: int
    max_output_tokens: int
    input_limit: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"context_window": self.context_window,
                               "max_output_tokens": self.max_output_tokens}
        if self.input_limit is not None:
            out["input_limit"] = self.input_limit
        return out


@dataclass(frozen=True, slots=True)
class ModelInput:
    id: str
    provider: str | None = None
    limits: ModelLimits | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        if self.provider is not None:
            out["provider"] = self.provider
        if self.limits is not None:
            out["limits"] = self.limits.to_dict()
        return out


_LIMITS = {
    "context_window": FieldSpec(u64, required=True),
    "max_output_tokens": FieldSpec(u64, required=True),
    "input_limit": FieldSpec(u64),
}


def decode_limits(value: Any) -> ModelLimits:
    f = decode_struct(value, "ModelLimits", _LIMITS)
    return ModelLimits(f["context_window"], f["max_output_tokens"], f["input_limit"])


_MODEL_INPUT = {
    "id": FieldSpec(string, required=True),
    "provider": FieldSpec(string),
    "limits": FieldSpec(decode_limits),
}


def decode_model_input(value: Any) -> ModelInput:
    f = decode_struct(value, "ModelInput", _MODEL_INPUT)
    return ModelInput(f["id"], f["provider"], f["limits"])


# The members a request about one model-facing history shares (``context::assemble`` adds its
# options; ``context::count-tokens`` is these): the handlers swap in their intake's decoders.
HISTORY_REQUEST: dict[str, FieldSpec] = {
    "messages": FieldSpec(decode_messages),
    "model": FieldSpec(decode_model_input, required=True),
    "system_prompt": FieldSpec(string),
    "tools": FieldSpec(decode_tools),
    "parts": FieldSpec(string_map),
}
