"""JSON codec with the original worker's byte-exact rules (spec 01 §2).

Token estimates, lease keys and emergency hashes are all taken over the compact serialization
the original writes itself, so the bytes here are a contract:

* typed records keep their declaration order (callers build dicts in that order);
* free-form values carry sorted keys (``canonical_free_form`` sorts them once at decoding);
* floats use the original's layout (``1e+16``, ``1e-7``, ``0.00001``), which differs from
  orjson's own float text, so every free-form float is stored as an ``orjson.Fragment``.
"""

from __future__ import annotations

from typing import Any

import orjson

from context_manager.wire.errors import DecodeError
from context_manager.wire.ints import I64_MIN, U64_MAX
from context_manager.wire.plain import note_free_form

Fragment = orjson.Fragment


def dumps(value: Any) -> bytes:
    """Compact serialization in the order the dicts were built (typed records first-class)."""
    return orjson.dumps(value)


def dumps_wire(value: Any) -> bytes:
    """A response as the engine SDK sends it: every object's keys sorted."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def loads(data: bytes | str) -> Any:
    """Parse a payload the way the original's JSON reader does.

    Integers beyond the 64-bit ranges become floats, non-finite numbers and lone surrogates are
    rejected. ``-0`` arrives as integer 0: an accepted divergence (spec 01 §2.6).
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if not data.strip():
        raise DecodeError("EOF while parsing a value at line 1 column 0")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(str(exc)) from None


def format_float(x: float) -> str:
    """The original's shortest round-trip float text (spec 01 §2.3)."""
    if 1e-4 <= abs(x) < 1e16:
        # Python's repr is the same shortest round-trip text in fixed notation in this band.
        return repr(x)
    if x == 0.0:
        return "-0.0" if str(x).startswith("-") else "0.0"
    sign = "-" if x < 0 else ""
    text = repr(abs(x))
    if "e" in text:
        mantissa, _, exp_text = text.partition("e")
        exponent = int(exp_text)
    else:
        mantissa, exponent = text, 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    # exponent of the first significant digit
    if int_part.strip("0"):
        exponent += len(int_part.lstrip("0")) - 1
    else:
        exponent -= len(frac_part) - len(frac_part.lstrip("0")) + 1
    digits = digits.rstrip("0") or "0"
    n = len(digits)
    if -5 <= exponent <= 15:
        if n - 1 <= exponent:
            body = digits + "0" * (exponent - n + 1) + ".0"
        elif exponent >= 0:
            body = digits[: exponent + 1] + "." + digits[exponent + 1 :]
        else:
            body = "0." + "0" * (-exponent - 1) + digits
    else:
        body = digits[0] + ("." + digits[1:] if n > 1 else "")
        body += "e" + ("+" if exponent >= 0 else "-") + str(abs(exponent))
    return sign + body


def float_fragment(x: float) -> Fragment | float:
    """A float as the original writes it. In [1e-4, 1e16) orjson's own text is already the
    reference text, so the float stays a float and costs no fragment."""
    if 1e-4 <= abs(x) < 1e16:
        return x
    if x != x or x in (float("inf"), float("-inf")):
        raise DecodeError("number out of range")
    return Fragment(format_float(x).encode())


def _free_form_float(x: float) -> Fragment | float:
    value = float_fragment(x)
    return note_free_form(value) if type(value) is Fragment else value


# JSON nested deeper than this is refused. orjson writes at most 254 levels and Python recursion
# is bounded too, so subtrees below DEEP_SUBTREE levels are written ahead into one fragment.
MAX_DEPTH = 1000
DEEP_SUBTREE = 100


def canonical_free_form(value: Any, depth: int = 1) -> Any:
    """Normalise a free-form JSON value: sorted keys at every depth, reference float text."""
    kind = type(value)
    if kind is str or value is None or value is True or value is False:
        return value
    if depth >= DEEP_SUBTREE and (kind is dict or kind is list):
        return _deep_fragment(value, depth)
    if kind is dict:
        out = {}
        for key in sorted(value):
            item = value[key]
            leaf = type(item)
            # Strings, plain integers, in-band floats and literals, most leaves, without a call.
            if (leaf is str or item is None or leaf is bool
                    or leaf is int and I64_MIN <= item <= U64_MAX
                    or leaf is float and 1e-4 <= abs(item) < 1e16):
                out[key] = item
            else:
                out[key] = canonical_free_form(item, depth + 1)
        return out
    if kind is list:
        return [canonical_free_form(item, depth + 1) for item in value]
    if kind is int:
        if I64_MIN <= value <= U64_MAX:
            return value
        return _free_form_float(float(value))
    if kind is float:
        return _free_form_float(value)
    return _canonical_other(value, depth)


def _canonical_other(value: Any, depth: int) -> Any:
    """Subclasses and fragments: the general path, off the hot one."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return {key: canonical_free_form(value[key], depth + 1) for key in sorted(value)}
    if isinstance(value, list):
        return [canonical_free_form(item, depth + 1) for item in value]
    if isinstance(value, int):
        if I64_MIN <= value <= U64_MAX:
            return value
        return _free_form_float(float(value))
    if isinstance(value, float):
        return _free_form_float(value)
    if isinstance(value, Fragment):
        return note_free_form(value)
    raise DecodeError(f"invalid type: {type(value).__name__}, expected any valid JSON value")


def _deep_fragment(value: Any, depth: int) -> Fragment:
    """Write a deeply nested subtree without recursion, as canonical_free_form would lay it out."""
    out = bytearray()
    stack: list[tuple[Any, int]] = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if type(item) is bytes:
            out += item
            continue
        if level > MAX_DEPTH and isinstance(item, (dict, list)):
            raise DecodeError(f"recursion limit exceeded: nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            keys = sorted(item)
            stack.append((b"}", 0))
            for index in range(len(keys) - 1, -1, -1):
                key = keys[index]
                if not isinstance(key, str):
                    raise DecodeError("key must be a string")
                stack.append((item[key], level + 1))
                stack.append(((b"," if index else b"") + _scalar(key) + b":", 0))
            stack.append((b"{", 0))
        elif isinstance(item, list):
            stack.append((b"]", 0))
            for index in range(len(item) - 1, -1, -1):
                stack.append((item[index], level + 1))
                if index:
                    stack.append((b",", 0))
            stack.append((b"[", 0))
        else:
            out += _scalar(canonical_free_form(item, 1))
    return note_free_form(Fragment(bytes(out)))


def _scalar(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        raise DecodeError(str(exc)) from None


def utf8_len(text: str) -> int:
    """Length in UTF-8 bytes: the unit of the heuristic text estimate and of every "chars" knob
    of the reduction passes. ASCII strings skip the encode.

    A lone surrogate counts as the 3 bytes of its surrogate-escaped encoding instead of failing:
    no decoded request carries one (the codec and the library entry refuse them), but a library
    summariser's reply can, and its summary is still measured.
    """
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))
