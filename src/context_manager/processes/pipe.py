"""Messages between the worker and its serving processes, over a pair of pipes.

Each message is a 13-byte header (body length, kind, tag) and the body. An invocation frame
travels as the bytes the engine sent and a reply as the bytes the engine will receive, so
nothing is parsed or encoded on the way through the parent.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import itertools
import os
import struct
from collections import deque

# A pipe holds 64 KiB by default: a frame of a few hundred KiB would then cross it in many
# small writes, each one a wake-up on both sides. A megabyte (Linux's default ceiling for an
# unprivileged process) lets most frames through in one.
PIPE_BYTES = 1024 * 1024
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_IOV_MAX = 64

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


def widen(fd: int) -> None:
    """Grow the pipe under ``fd`` to :data:`PIPE_BYTES`, where the system allows it."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BYTES)


class PipeWriter:
    """Writes messages to a pipe without blocking and without copying their bodies.

    asyncio's pipe transport joins what it is given and, when the pipe is full, deletes each
    written piece from the front of one buffer, which copies the rest every time: quadratic
    in a multi-megabyte frame. Here the pending pieces are views, advanced as they are written.
    A write to a pipe whose reader is gone drops everything (:attr:`closed`); the reader's end
    of the other pipe tells the owner that the process is gone.
    """

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._pending: deque[memoryview] = deque()
        self._emptied: asyncio.Event | None = None
        self.closed = False

    def send(self, kind: bytes, tag: int, body: bytes = b"") -> None:
        """Queue one message; messages are written whole and in order."""
        if self.closed:
            return
        idle = not self._pending
        self._pending.append(memoryview(_HEADER.pack(len(body), kind, tag)))
        if body:
            self._pending.append(memoryview(body))
        if idle:
            self._write()
            if self._pending and not self.closed:
                self._loop.add_writer(self._fd, self._write)

    def _write(self) -> None:
        pending = self._pending
        while pending:
            try:
                written = os.writev(self._fd, list(itertools.islice(pending, _IOV_MAX)))
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._drop()
                return
            while written:
                head = pending[0]
                if written >= len(head):
                    written -= len(head)
                    pending.popleft()
                else:
                    pending[0] = head[written:]
                    written = 0
        self._loop.remove_writer(self._fd)
        self._wake()

    def _drop(self) -> None:
        self.closed = True
        self._pending.clear()
        self._loop.remove_writer(self._fd)
        self._wake()

    def _wake(self) -> None:
        if self._emptied is not None:
            self._emptied.set()
            self._emptied = None

    async def drained(self) -> None:
        """Until everything queued is written (or the pipe is gone)."""
        while self._pending and not self.closed:
            self._emptied = self._emptied or asyncio.Event()
            await self._emptied.wait()

    def close(self) -> None:
        """Close the pipe now (the reader sees its end); anything not yet written is dropped."""
        if not self.closed:
            self._drop()
        with contextlib.suppress(OSError):
            os.close(self._fd)


async def receive(reader: asyncio.StreamReader) -> tuple[bytes, int, bytes] | None:
    """The next message, or None at the end of the stream (the other side is gone)."""
    try:
        header = await reader.readexactly(HEADER_BYTES)
        length, kind, tag = _HEADER.unpack(header)
        body = await reader.readexactly(length) if length else b""
    except asyncio.IncompleteReadError:
        return None
    return kind, tag, body
