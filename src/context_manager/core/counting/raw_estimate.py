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

from context_manager.wire.codec import format_float
from context_manager.wire.ints import I64_MAX, I64_MIN, U64_MAX
from context_manager.core.counting.estimate import IMAGE_TOKEN_BUDGET

# types.STOP_REASONS and the integer members of usage (types imports this module, not back).
_STOP_REASON_SET = frozenset(("end", "length", "function_call", "aborted", "error"))
_USAGE_INT_SET = frozenset(("input", "output", "cache_read", "cache_write", "reasoning"))

DETAILS_NULL = len(b',"details":null')
IS_ERROR_FALSE = len(b',"is_error":false')
ARGUMENTS_NULL = len(b',"arguments":null')
_NULL_LEN = 4


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
            if n != 2 or type(block.get("text")) is not str:
                return False
        elif kind == "function_call":
            if type(block.get("id")) is not str or type(block.get("function_id")) is not str:
                return False
            if "arguments" in block:
                if n != 4:
                    return False
            elif n == 3:
                acc[0] += ARGUMENTS_NULL
            else:
                return False
        elif kind == "thinking":
            if type(block.get("text")) is not str:
                return False
            if "signature" in block:
                if n != 3 or type(block["signature"]) is not str:
                    return False
            elif n != 2:
                return False
        elif kind == "image":
            data = block.get("data")
            if type(block.get("mime")) is not str or type(data) is not str:
                return False
            if "attachment_id" in block:
                if n != 4 or type(block["attachment_id"]) is not str:
                    return False
            elif n != 3:
                return False
            acc[1] += 1
            acc[2] += len(orjson.dumps(data)) - 2
        elif kind == "file":
            size = block.get("size")
            if (n != 5 or type(block.get("attachment_id")) is not str or type(block.get("name")) is not str
                    or type(block.get("mime")) is not str or type(size) is not int or not 0 <= size <= U64_MAX):
                return False
        elif kind == "function_result":
            if type(block.get("function_call_id")) is not str:
                return False
            if "is_error" in block:
                if n != 4 or (block["is_error"] is not True and block["is_error"] is not False):
                    return False
            elif n != 3:
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
            if n == 7:
                usage = raw["usage"]
                if type(usage) is not dict:
                    return None
                for name, value in usage.items():
                    if type(value) is int:
                        # an integer cost is written as a float: another length
                        if name not in _USAGE_INT_SET or not 0 <= value <= U64_MAX:
                            return None
                    elif type(value) is not float or name != "cost_usd":
                        return None
            elif n != 6:
                return None
        elif role == "function_result":
            if type(raw["function_call_id"]) is not str or type(raw["function_id"]) is not str:
                return None
            expected = 5
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
            if n != 3:
                return None
        elif role == "custom":
            if type(raw["custom_type"]) is not str:
                return None
            expected = 4
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
                if len(block) != 2 or type(block["text"]) is not str:
                    return None
            elif kind == "function_call":
                if type(block["id"]) is not str or type(block["function_id"]) is not str:
                    return None
                if len(block) != 4:
                    if exact or len(block) != 3 or "arguments" in block:
                        return None
                    extra += ARGUMENTS_NULL
            elif kind == "thinking":
                if type(block["text"]) is not str:
                    return None
                if len(block) != 2 and (len(block) != 3 or type(block.get("signature")) is not str):
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
