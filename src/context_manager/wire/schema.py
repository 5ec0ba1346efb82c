"""The wire schema of conversation records (spec 01 §3): the members of each message role, each
content block kind and the usage record, in declaration order, with their types and what an
absent or null member decodes to.

Whatever must agree with these tables is derived from them when the modules load: the decoder's
field tables and record builders (``wire/decode.py``), the canonical layouts
(``wire/canonical.py``), the raw estimator's member counts, enumerations and default lengths
(``core/counting/raw_estimate.py``) and the memo's null and default tables per record kind
(``core/memo.py``). Adding an optional member to a record is one edit here.

The hand-written fast paths test members by name. The names each of them was written for are
listed at the end of this module, next to the tables they must agree with, and a fast path whose
record has a member it does not know steps aside (see ``knows_all`` and ``knows_all_but_omitted``),
so that a new member is decoded and counted right before any fast path learns about it.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import Any, NamedTuple


class Presence(Enum):
    REQUIRED = "required"  # absent: a `missing field` error; null: a type error
    OMITTED = "omitted"  # optional: absent or null, the canonical form leaves it out
    NULL = "null"  # optional: absent or null, the canonical form carries null
    DEFAULT = "default"  # absent: the canonical form carries the default; null: a type error


# Member types (enumerations are given by their variants instead).
STRING = "string"
U64 = "u64"
I64 = "i64"
F64 = "f64"
BOOLEAN = "boolean"
FREE_FORM = "free_form"  # any JSON value, written back with sorted object keys
STRINGS = "strings"  # a sequence of strings
BLOCK_LIST = "block_list"  # a sequence of content blocks
USAGE = "usage"  # the usage record below


class Member(NamedTuple):
    name: str
    type: str | tuple[str, ...]  # a member type above, or the variants of an enumeration
    presence: Presence = Presence.REQUIRED
    default: Any = None  # what the canonical form carries when the member is absent (NULL, DEFAULT)


Record = tuple[Member, ...]


def required(name: str, type: str | tuple[str, ...]) -> Member:
    return Member(name, type)


def omitted(name: str, type: str | tuple[str, ...]) -> Member:
    return Member(name, type, Presence.OMITTED)


def nullable(name: str, type: str | tuple[str, ...]) -> Member:
    return Member(name, type, Presence.NULL)


def defaulted(name: str, type: str | tuple[str, ...], default: Any) -> Member:
    return Member(name, type, Presence.DEFAULT, default)


STOP_REASONS = ("end", "length", "function_call", "aborted", "error")
ERROR_KINDS = ("auth_expired", "rate_limited", "context_overflow", "transient", "permanent")

MESSAGE_TAG = "role"
BLOCK_TAG = "type"

# Kinds in the original's declaration order, which is also the order `unknown variant` errors list.
BLOCKS: dict[str, Record] = {
    "text": (required("text", STRING),),
    "image": (required("mime", STRING), required("data", STRING), omitted("attachment_id", STRING)),
    "file": (required("attachment_id", STRING), required("name", STRING), required("mime", STRING),
             required("size", U64)),
    "thinking": (required("text", STRING), omitted("signature", STRING)),
    "function_call": (required("id", STRING), required("function_id", STRING), nullable("arguments", FREE_FORM)),
    "function_result": (required("function_call_id", STRING), required("content", BLOCK_LIST),
                        omitted("is_error", BOOLEAN)),
}

USAGE_RECORD: Record = (
    omitted("input", U64),
    omitted("output", U64),
    omitted("cache_read", U64),
    omitted("cache_write", U64),
    omitted("reasoning", U64),
    omitted("cost_usd", F64),
)

MESSAGES: dict[str, Record] = {
    "user": (required("content", BLOCK_LIST), required("timestamp", I64)),
    "assistant": (
        required("content", BLOCK_LIST),
        required("stop_reason", STOP_REASONS),
        omitted("native_stop_reason", STRING),
        omitted("error_message", STRING),
        omitted("error_kind", ERROR_KINDS),
        omitted("warnings", STRINGS),
        omitted("usage", USAGE),
        required("model", STRING),
        required("provider", STRING),
        required("timestamp", I64),
    ),
    "function_result": (
        required("function_call_id", STRING),
        required("function_id", STRING),
        required("content", BLOCK_LIST),
        nullable("details", FREE_FORM),
        defaulted("is_error", BOOLEAN, False),
        required("timestamp", I64),
    ),
    "custom": (
        required("custom_type", STRING),
        required("content", BLOCK_LIST),
        omitted("display", STRING),
        omitted("details", FREE_FORM),
        required("timestamp", I64),
    ),
}

ROLES = tuple(MESSAGES)
BLOCK_TYPES = tuple(BLOCKS)


# --- queries over the tables -------------------------------------------------------------------


def member(record: Record, name: str) -> Member:
    for m in record:
        if m.name == name:
            return m
    raise KeyError(name)


def names(record: Record, *, presence: Presence | None = None, of_type: Any = None) -> tuple[str, ...]:
    """The record's member names in declaration order, optionally only those of one presence
    and/or one type."""
    return tuple(m.name for m in record
                 if (presence is None or m.presence is presence) and (of_type is None or m.type == of_type))


def filled_defaults(records: Iterable[Record]) -> dict[str, Any]:
    """Member name -> the value the canonical form carries when that member is absent (NULL and
    DEFAULT members), over ``records``; a name filled differently by two records is refused."""
    out: dict[str, Any] = {}
    for record in records:
        for m in record:
            if m.presence is Presence.NULL or m.presence is Presence.DEFAULT:
                if m.name in out and (type(out[m.name]) is not type(m.default) or out[m.name] != m.default):
                    raise ValueError(f"member {m.name!r} is filled with two different defaults")
                out[m.name] = m.default
    return out


# Each record's members in declaration order, its tag first: the canonical layouts.
MESSAGE_LAYOUTS = {role: (MESSAGE_TAG, *names(record)) for role, record in MESSAGES.items()}
BLOCK_LAYOUTS = {kind: (BLOCK_TAG, *names(record)) for kind, record in BLOCKS.items()}
USAGE_LAYOUT = names(USAGE_RECORD)


# --- the members hand-written fast paths test by name ------------------------------------------


def knows_all(record: Record, known: Iterable[str]) -> bool:
    """Is ``known`` exactly the record's members? For fast paths that ignore any other member."""
    return set(names(record)) == set(known)


def knows_all_but_omitted(record: Record, known: Iterable[str]) -> bool:
    """Are the record's members ``known`` plus members the canonical form omits when absent? For
    fast paths that send a record carrying any member they do not know the general way."""
    known = set(known)
    return known <= set(names(record)) and all(
        m.presence is Presence.OMITTED for m in record if m.name not in known)


def unknown(record: Record, known: Iterable[str]) -> tuple[str, ...]:
    """The record's members not in ``known``, in declaration order."""
    known = set(known)
    return tuple(name for name in names(record) if name not in known)


# wire/decode.py, decode_blocks: these blocks are decoded inline from exactly these members.
DECODE_FAST_BLOCKS = {
    "text": ("text",),
    "function_call": ("id", "function_id", "arguments"),
    "thinking": ("text", "signature"),
}
# wire/decode.py, _fast_message: these roles are decoded from exactly these members...
DECODE_FAST_MESSAGES = {
    "user": ("content", "timestamp"),
    "function_result": ("function_call_id", "function_id", "content", "details", "is_error", "timestamp"),
}
# ...and the assistant from these, an assistant message carrying any other member going the
# general way.
DECODE_FAST_ASSISTANT = ("content", "stop_reason", "usage", "model", "provider", "timestamp")
# wire/decode.py, _fast_usage: the integer members (whichever they are), then this float member.
DECODE_FAST_USAGE_FLOAT = "cost_usd"

# core/counting/raw_estimate.py: the members each record's check tests by name. Any other
# member must be one the canonical form omits: the check counts a record's members, so a record
# carrying one goes the general way.
RAW_CHECKED_MESSAGES = {
    "user": ("content", "timestamp"),
    "assistant": ("content", "stop_reason", "usage", "model", "provider", "timestamp"),
    "function_result": ("function_call_id", "function_id", "content", "details", "is_error", "timestamp"),
    "custom": ("custom_type", "content", "display", "details", "timestamp"),
}
RAW_CHECKED_BLOCKS = {
    "text": ("text",),
    "image": ("mime", "data", "attachment_id"),
    "file": ("attachment_id", "name", "mime", "size"),
    "thinking": ("text", "signature"),
    "function_call": ("id", "function_id", "arguments"),
    "function_result": ("function_call_id", "content", "is_error"),
}
