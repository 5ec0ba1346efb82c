"""Messages between the worker and its serving processes, over a pair of pipes.

Each message is a 13-byte header (body length, kind, tag) and the body. An invocation frame
travels as the bytes the engine sent and a reply as the bytes the engine will receive, so
nothing is parsed or encoded on the way through the parent.
"""

from __future__ import annotations

import asyncio
import struct

_HEADER = struct.Struct(">IcQ")
HEADER_BYTES = _HEADER.size

# Parent to serving process.
CALL = b"C"  # tag, the invocation frame as received
RESULT = b"R"  # tag of an INVOKE, the outcome as JSON
CONFIG = b"K"  # the configuration in force (pickled WorkerConfig)
FLUSH_MODELS = b"F"  # empty the model cache

# Serving process to parent.
ANSWER = b"A"  # tag of a CALL, the reply frame (empty: no reply is due)
INVOKE = b"I"  # tag, a call to make on the engine: JSON header, newline, payload JSON


def send(writer: asyncio.StreamWriter, kind: bytes, tag: int, body: bytes = b"") -> None:
    """Queue one message; a message is written whole, never interleaved with another."""
    writer.writelines((_HEADER.pack(len(body), kind, tag), body))


async def receive(reader: asyncio.StreamReader) -> tuple[bytes, int, bytes] | None:
    """The next message, or None at the end of the stream (the other side is gone)."""
    try:
        header = await reader.readexactly(HEADER_BYTES)
        length, kind, tag = _HEADER.unpack(header)
        body = await reader.readexactly(length) if length else b""
    except asyncio.IncompleteReadError:
        return None
    return kind, tag, body
