"""Frame text for the test engine: orjson first, the standard library for what orjson refuses.

The engine forwards large invocation payloads both ways, so its JSON costs count in the
end-to-end benchmark. orjson writes non-finite floats as ``null``, as the real engine's JSON
writer does; integers beyond 64 bits and non-string keys fall back to ``json``. Reading falls
back to ``json`` too, so hand-written frames (huge integers, ``NaN``, lone surrogates) are
read exactly as before.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def encode(frame: Any) -> bytes:
    try:
        return orjson.dumps(frame)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(frame, ensure_ascii=False).encode("utf-8")


def decode(message: str | bytes) -> Any:
    """Parse one frame; raises ``ValueError`` when it is not JSON."""
    try:
        return orjson.loads(message)
    except orjson.JSONDecodeError:
        return json.loads(message)
