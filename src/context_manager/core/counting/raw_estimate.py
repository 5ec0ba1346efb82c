"""Heuristic estimates of messages still in their parsed-JSON form.

Counting needs no canonical dict: the heuristic is a byte length, and the length of a
serialization does not depend on key order. A raw message that is valid and carries exactly
the canonical members serializes to as many bytes as its canonical dict, give or take the
defaults decoding fills in (``,"details":null``, ``,"is_error":false``,
``,"arguments":null``), which are added as constants. Free-form values keep their parsed keys
in any order for the same reason, and their floats already have the reference text when
orjson writes every float as the reference does (checked once, see ``floats_match``).

Anything unusual (a null optional member, an unknown member, an integer cost, a wrong type)
returns None and the caller decodes the message the ordinary way, which also raises the exact
error. Only payloads parsed from JSON text may come here: a Python caller's values (tuples,
NaN, enums...) would serialize where decoding refuses them.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import orjson

from context_manager.core.counting.estimate import IMAGE_TOKEN_BUDGET
from context_manager.wire import schema
from context_manager.wire.codec import format_float
from context_manager.wire.ints import I64_MAX, I64_MIN, U64_MAX
from context_manager.wire.schema import BLOCKS, MESSAGES, USAGE_RECORD, Presence, Record

_STOP_REASON_SET = frozenset(schema.member(MESSAGES["assistant"], "stop_reason").type)
_USAGE_INT_SET = frozenset(schema.names(USAGE_RECORD, of_type=schema.U64))
_USAGE_FLOAT_SET = frozenset(schema.names(USAGE_RECORD, of_type=schema.F64))


def _filled_length(record: Record, name: str) -> int:
    """The bytes decoding adds for the member when it is absent: `,"name":default`."""
    return len(b',"' + name.encode() + b'":' + orjson.dumps(schema.member(record, name).default))


DETAILS_NULL = _filled_length(MESSAGES["function_result"], "details")
IS_ERROR_FALSE = _filled_length(MESSAGES["function_result"], "is_error")
ARGUMENTS_NULL = _filled_length(BLOCKS["function_call"], "arguments")
_NULL_LEN = 4

# A record's member count (its tag included) when it carries none of its optional members. The
# checks below test the members listed in schema.RAW_CHECKED_*; a record with any other member
# but one the canonical form omits gets a count no record has, so it is always decoded instead
# (and one carrying an omitted member the checks do not know fails their count).
_NO_RECORD_HAS = -(1 << 20)


def _count(record: Record, checked: tuple[str, ...], usable: bool = True) -> int:
    if not usable or not schema.knows_all_but_omitted(record, checked):
        return _NO_RECORD_HAS
    return 1 + len(schema.names(record, presence=Presence.REQUIRED))


def _message_count(role: str, usable: bool = True) -> int:
    return _count(MESSAGES[role], schema.RAW_CHECKED_MESSAGES[role], usable)


def _block_count(kind: str) -> int:
    return _count(BLOCKS[kind], schema.RAW_CHECKED_BLOCKS[kind])


_USER_N = _message_count("user")
# Usage members are checked by their types alone, which is enough while every one may be left out.
_ASSISTANT_N = _message_count("assistant", all(m.presence is Presence.OMITTED for m in USAGE_RECORD))
_ASSISTANT_USAGE_N = _ASSISTANT_N + 1
_FUNCTION_RESULT_N = _message_count("function_result")
_CUSTOM_N = _message_count("custom")
_TEXT_N = _block_count("text")
_CALL_N = _block_count("function_call")
_CALL_ARGUMENTS_N = _CALL_N + 1
_THINKING_N = _block_count("thinking")
_THINKING_SIGNED_N = _THINKING_N + 1
_IMAGE_N = _block_count("image")
_IMAGE_ATTACHED_N = _IMAGE_N + 1
_FILE_N = _block_count("file")
_RESULT_N = _block_count("function_result")
_RESULT_FLAGGED_N = _RESULT_N + 1


@lru_cache(maxsize=1)
def floats_match() -> bool:
    """Does orjson write every float with the reference text? Probed over all exponents and
    both layouts (fixed and scientific) with short and 17-digit mantissas, signs and zeros."""
    probes = [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308]
    for exponent in range(-323, 308):
        for mantissa in (1.0, 1.5, 9.87654321012345):
            probes.append(mantissa * 10.0**exponent)
    for x in probes:
        if not math.isfinite(x):
            continue
        for value in (x, -x):
            if orjson.dumps(value) != format_float(value).encode():
                return False
    return True


def _counted_with_optional_string(block: dict[str, Any], n: int, name: str, with_it: int, without_it: int) -> bool:
    """Whether the block's member count ``n`` is ``with_it`` and its member ``name`` a string when
    it carries that optional member, else ``without_it``."""
    if name in block:
        return n == with_it and type(block[name]) is str
    return n == without_it


def _blocks(blocks: Any, acc: list[int]) -> bool:
    """Check the blocks; acc = [bytes to add, images, image bytes to discount]."""
    if type(blocks) is not list:
        return False
    for block in blocks:
        if type(block) is not dict:
            return False
        kind = block.get("type")
        n = len(block)
        if kind == "text":
            if n != _TEXT_N or type(block.get("text")) is not str:
                return False
        elif kind == "function_call":
            if type(block.get("id")) is not str or type(block.get("function_id")) is not str:
                return False
            if "arguments" in block:
                if n != _CALL_ARGUMENTS_N:
                    return False
            elif n == _CALL_N:
                acc[0] += ARGUMENTS_NULL
            else:
                return False
        elif kind == "thinking":
            if type(block.get("text")) is not str:
                return False
            if not _counted_with_optional_string(block, n, "signature", _THINKING_SIGNED_N, _THINKING_N):
                return False
        elif kind == "image":
            data = block.get("data")
            if type(block.get("mime")) is not str or type(data) is not str:
                return False
            if not _counted_with_optional_string(block, n, "attachment_id", _IMAGE_ATTACHED_N, _IMAGE_N):
                return False
            acc[1] += 1
            acc[2] += len(orjson.dumps(data)) - 2
        elif kind == "file":
            size = block.get("size")
            if (n != _FILE_N or type(block.get("attachment_id")) is not str or type(block.get("name")) is not str
                    or type(block.get("mime")) is not str or type(size) is not int or not 0 <= size <= U64_MAX):
                return False
        elif kind == "function_result":
            if type(block.get("function_call_id")) is not str:
                return False
            if "is_error" in block:
                if n != _RESULT_FLAGGED_N or (block["is_error"] is not True and block["is_error"] is not False):
                    return False
            elif n != _RESULT_N:
                return False
            if not _blocks(block.get("content"), acc):
                return False
        else:
            return False
    return True


def heuristic_tokens(raw: Any, exact: bool = False) -> int | None:
    """The heuristic estimate of the message ``raw`` decodes to, or None (decode it instead).

    ``exact``: only for a message that already is its canonical form member for member (no
    default to fill in), so that it may stand for the decoded message as it is.

    Subscripts, not ``.get()``: this runs for every message of every count, and a member missing
    where it is required (KeyError) or an unhashable stop reason (TypeError) makes an unusual
    message anyway.
    """
    if type(raw) is not dict:
        return None
    try:
        timestamp = raw["timestamp"]
        if type(timestamp) is not int or not I64_MIN <= timestamp <= I64_MAX:
            return None
        role = raw["role"]
        n = len(raw)
        extra = 0
        if role == "assistant":
            if (raw["stop_reason"] not in _STOP_REASON_SET or type(raw["model"]) is not str
                    or type(raw["provider"]) is not str):
                return None
            if n == _ASSISTANT_USAGE_N:
                usage = raw["usage"]
                if type(usage) is not dict:
                    return None
                for name, value in usage.items():
                    if type(value) is int:
                        # an integer cost is written as a float: another length
                        if name not in _USAGE_INT_SET or not 0 <= value <= U64_MAX:
                            return None
                    elif type(value) is not float or name not in _USAGE_FLOAT_SET:
                        return None
            elif n != _ASSISTANT_N:
                return None
        elif role == "function_result":
            if type(raw["function_call_id"]) is not str or type(raw["function_id"]) is not str:
                return None
            expected = _FUNCTION_RESULT_N
            if "details" in raw:
                expected += 1
                details = raw["details"]
                if details is not None and not (type(details) is dict and details.get("status") == "denied"):
                    # `details` never reaches the provider: it counts as null.
                    try:
                        extra += _NULL_LEN - len(orjson.dumps(details))
                    except (TypeError, ValueError):
                        return None
            else:
                if exact:
                    return None
                extra += DETAILS_NULL
            if "is_error" in raw:
                expected += 1
                if raw["is_error"] is not True and raw["is_error"] is not False:
                    return None
            else:
                if exact:
                    return None
                extra += IS_ERROR_FALSE
            if n != expected:
                return None
        elif role == "user":
            if n != _USER_N:
                return None
        elif role == "custom":
            if type(raw["custom_type"]) is not str:
                return None
            expected = _CUSTOM_N
            if "display" in raw:
                expected += 1
                if type(raw["display"]) is not str:
                    return None
            if "details" in raw:
                expected += 1
                if raw["details"] is None:  # omitted by decoding: `"details":null` would not count
                    return None
            if n != expected:
                return None
        else:
            return None
        content = raw["content"]
        if type(content) is not list:
            return None
        images = 0
        for block in content:
            # Text, thinking and calls, the bulk of any history, are checked inline.
            if type(block) is not dict:
                return None
            kind = block["type"]
            if kind == "text":
                if len(block) != _TEXT_N or type(block["text"]) is not str:
                    return None
            elif kind == "function_call":
                if type(block["id"]) is not str or type(block["function_id"]) is not str:
                    return None
                if len(block) != _CALL_ARGUMENTS_N:
                    if exact or len(block) != _CALL_N or "arguments" in block:
                        return None
                    extra += ARGUMENTS_NULL
            elif kind == "thinking":
                if type(block["text"]) is not str:
                    return None
                if len(block) != _THINKING_N and (len(block) != _THINKING_SIGNED_N
                                                  or type(block.get("signature")) is not str):
                    return None
            else:
                acc = [0, 0, 0]
                if not _blocks([block], acc) or exact and acc[0]:
                    return None
                extra += acc[0] - acc[2]
                images += acc[1]
        try:
            size = len(orjson.dumps(raw))
        except (TypeError, ValueError):
            return None
        return (size + extra) // 4 + IMAGE_TOKEN_BUDGET * images
    except (KeyError, TypeError):
        return None
