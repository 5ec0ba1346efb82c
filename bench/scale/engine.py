"""The test engine with a cheap path for the benchmark's own calls.

The engine shares two cores with the worker it measures, so a benchmark call costs it as little
as possible: the request frame is the payload's bytes spliced into a fixed frame, and the reply
is not parsed. The worker writes result frames with sorted keys,
``{"function_id":…,"invocation_id":…,"result":…,"type":"invocationresult"}``, so the result's
bytes are a slice of the frame. A reply of any other shape (an error, or a worker that writes
frames differently) is parsed and its result re-encoded, and counted as such.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

from testengine import TestEngine
from testengine.wire import decode

_HEAD = b'{"function_id":"'
_ID = b'","invocation_id":"'
_RESULT = b'","result":'
_TAIL = b',"type":"invocationresult"}'


@dataclass(frozen=True)
class Reply:
    result: bytes | None  # the result's JSON bytes, or None for an error reply
    error: str = ""
    reparsed: bool = False


@dataclass
class Ledger:
    """Every benchmark invocation: sent, answered once, answered again, or still waiting."""

    sent: int = 0
    answered: int = 0
    doubled: int = 0
    reparsed: int = 0
    done: set[str] = field(default_factory=set)


def _split(message: bytes) -> tuple[str, bytes] | None:
    """``(invocation id, result bytes)`` of a sorted-key result frame, or None."""
    if not (message.startswith(_HEAD) and message.endswith(_TAIL)):
        return None
    id_at = message.find(_ID, len(_HEAD))
    if id_at < 0:
        return None
    start = id_at + len(_ID)
    end = message.find(b'"', start)
    if end < 0 or not message.startswith(_RESULT, end):
        return None
    return message[start:end].decode("ascii", "replace"), message[end + len(_RESULT):-len(_TAIL)]


class BenchEngine(TestEngine):
    __test__ = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ledger = Ledger()
        self._waiting: dict[str, asyncio.Future[Reply]] = {}
        self._ids = itertools.count(1)

    async def invoke_bytes(self, function_id: str, data: bytes, timeout: float) -> Reply:
        """Send ``data`` (a JSON request, already encoded) to ``function_id``'s owner; its reply.
        Raises ``TimeoutError`` when none came within ``timeout`` seconds."""
        target = self.functions[function_id]
        invocation_id = f"bench-{next(self._ids)}"
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._waiting[invocation_id] = future
        frame = b"".join((b'{"type":"invokefunction","invocation_id":"', invocation_id.encode(),
                          b'","function_id":"', function_id.encode(), b'","data":', data, b"}"))
        self.ledger.sent += 1
        try:
            async with target.send_lock:
                await target.ws.send(frame, text=True)
            return await asyncio.wait_for(future, timeout)
        finally:
            self._waiting.pop(invocation_id, None)

    def waiting(self) -> int:
        return len(self._waiting)

    def _settle(self, invocation_id: str, reply: Reply) -> None:
        future = self._waiting.get(invocation_id)
        if future is None or invocation_id in self.ledger.done:
            self.ledger.doubled += 1
            return
        self.ledger.done.add(invocation_id)
        self.ledger.answered += 1
        if not future.done():
            future.set_result(reply)

    def _ours(self, invocation_id: str) -> bool:
        return invocation_id in self._waiting or invocation_id in self.ledger.done

    async def _receive(self, conn: Any, message: bytes) -> None:
        split = _split(message)
        if split is not None:
            if self._ours(split[0]):
                self._settle(split[0], Reply(split[1]))
                return
        elif (self._waiting or self.ledger.done) and b'"invocationresult"' in message:
            try:
                frame = decode(message)
            except ValueError:
                frame = None
            if isinstance(frame, dict) and frame.get("type") == "invocationresult" \
                    and self._ours(str(frame.get("invocation_id"))):
                self._settle(str(frame["invocation_id"]), self._reparse(frame))
                return
        await super()._receive(conn, message)

    def _reparse(self, frame: dict[str, Any]) -> Reply:
        from context_manager.wire.codec import dumps_wire

        if "result" in frame:
            self.ledger.reparsed += 1
            return Reply(dumps_wire(frame["result"]), reparsed=True)
        error = frame.get("error") or {}
        return Reply(None, error=f"{error.get('code')}: {error.get('message')}"[:300])
