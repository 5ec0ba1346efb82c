"""Read who an ``invokefunction`` frame calls without parsing its payload.

A process that only routes calls (the parent of ``--processes N``) needs three things from an
inbound frame: that it is an invocation, the function id and the invocation id, and a hint of
which session it belongs to. Parsing a multi-megabyte history to learn them would put the very
work the routing moves elsewhere back on the routing loop, so the frame's top-level members are
read from its opening bytes while they are plain strings and numbers; the engine writes ``type``
first and the short members before ``data``. A frame laid out any other way is parsed in full,
which gives the same answer, only slower.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import orjson

from context_manager.engine import protocol

# One top-level member whose value is a string, a number, a boolean or null, with its comma.
_SCALAR_MEMBER = re.compile(
    rb'\s*"((?:[^"\\]|\\.)*)"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+\-]*|true|false|null)\s*,'
)
_OBJECT_START = re.compile(rb"\s*\{")
_INVOKE_MARK = b'"invokefunction"'
# Where the message array's first bytes begin: the session hint is read from there.
_MESSAGES_KEY = b'"messages":['
HINT_BYTES = 256


@dataclass(frozen=True, slots=True)
class Invocation:
    """The routing facts of an ``invokefunction`` frame."""

    function_id: str
    invocation_id: str | None  # None: the caller expects no reply


def peek_invocation(message: bytes) -> Invocation | None:
    """The invocation ``message`` makes, or None when it is some other frame (or not JSON)."""
    if _INVOKE_MARK not in message:
        return None
    found = _scan_opening(message)
    if found is None:
        return _parse_whole(message)
    return found


def _scan_opening(message: bytes) -> Invocation | None:
    start = _OBJECT_START.match(message)
    if start is None:
        return None
    members: dict[bytes, bytes] = {}
    position = start.end()
    while True:
        match = _SCALAR_MEMBER.match(message, position)
        if match is None:
            break
        members.setdefault(match.group(1), match.group(2))
        position = match.end()
    # Only what came before the first structured member is known; a later duplicate key could
    # still change it, which the engine never writes and a full parse settles anyway.
    if members.get(b"type") != b'"invokefunction"':
        return None
    function_id = _string(members.get(b"function_id"))
    if function_id is None:
        return None
    raw_id = members.get(b"invocation_id")
    invocation_id = _string(raw_id)
    if raw_id is not None and invocation_id is None:
        return None
    if raw_id is None and b'"invocation_id"' in message:
        return None  # it may come after the payload
    return Invocation(function_id, invocation_id)


def _string(raw: bytes | None) -> str | None:
    if raw is None or not raw.startswith(b'"'):
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None


def _parse_whole(message: bytes) -> Invocation | None:
    try:
        frame = protocol.decode(message)
    except protocol.PayloadError as exc:
        frame = exc.frame
    except protocol.FrameError:
        return None
    if frame.get("type") != protocol.INVOKE_FUNCTION:
        return None
    function_id = frame.get("function_id")
    invocation_id = frame.get("invocation_id")
    if not isinstance(function_id, str):
        return None
    return Invocation(function_id, invocation_id if isinstance(invocation_id, str) else None)


def session_hint(message: bytes) -> bytes | None:
    """The opening bytes of the frame's message array: calls of one session share them."""
    at = message.find(_MESSAGES_KEY)
    if at < 0:
        return None
    start = at + len(_MESSAGES_KEY)
    return message[start:start + HINT_BYTES]
