"""A serving process of ``--processes N``: answers the invocation frames its parent hands over.

It decodes, counts, prunes and compacts exactly as the single-process worker does (the same
handlers, through the same answering code), and makes its engine calls (model budgets, the
summariser, token counts, state) through the parent, which owns the one engine connection.
Summary channels are read over their own sockets, as the single process reads them.

Its protocol streams are the pipes it was started with on descriptors 0 and 1; those are moved
aside at start, so anything else printing to stdout lands on stderr and cannot corrupt them.
SIGINT is ignored: the parent decides when to stop, drains and then closes the pipe, and the
end of the pipe is the signal to finish the calls in hand and exit.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import pickle
import signal
import sys
from typing import Any

import anyio
import orjson

from context_manager.adapters.log_format import configure_logging
from context_manager.adapters.otel_telemetry import telemetry_from_environment
from context_manager.engine import answering, protocol
from context_manager.engine.client import RemoteError
from context_manager.engine.history_reader import frame_reader
from context_manager.ports import InvokeError
from context_manager.processes import pipe
from context_manager.schemas import PUBLIC_FUNCTION_IDS
from context_manager.services import Services
from context_manager.wire import codec, trace

log = logging.getLogger("context_manager.worker")

# How long past a call's own timeout to wait for the parent's answer (it always answers).
INVOKE_GRACE_SECONDS = 5.0


class ParentLink:
    """The ``Invoke`` port over the parent's engine connection."""

    def __init__(self, writer: pipe.PipeWriter) -> None:
        self._writer = writer
        self._tags = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[bytes]] = {}

    async def invoke(self, function_id: str, payload: Any, timeout_ms: int) -> Any:
        tag = next(self._tags)
        outcome: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._waiting[tag] = outcome
        context = trace.CURRENT_TRACE.get()
        header = {"function_id": function_id, "timeout_ms": timeout_ms}
        if context is not None:
            header["traceparent"] = context.traceparent
            if context.baggage is not None:
                header["baggage"] = context.baggage
        try:
            self._writer.send(pipe.INVOKE, tag, orjson.dumps(header) + b"\n" + codec.dumps_wire(payload))
            with anyio.move_on_after(max(timeout_ms, 0) / 1000.0 + INVOKE_GRACE_SECONDS):
                body = await outcome
                reply = codec.loads(body)
                if "error" in reply:
                    raise InvokeError(reply["error"])
                return reply.get("result")
        finally:
            self._waiting.pop(tag, None)
        # Worded as the engine client words its own timeout (``invoke_callable``).
        timeout = RemoteError(protocol.TIMEOUT, f"invocation timed out after {timeout_ms}ms")
        raise InvokeError(str(timeout))

    def resolve(self, tag: int, body: bytes) -> None:
        outcome = self._waiting.get(tag)
        if outcome is not None and not outcome.done():
            outcome.set_result(body)

    def fail_all(self) -> None:
        """The parent is gone: calls waiting on it fail now instead of at their timeouts."""
        gone = codec.dumps_wire({"error": str(RemoteError(protocol.SHUTDOWN, "the worker is stopping"))})
        for tag in list(self._waiting):
            self.resolve(tag, gone)


class Server:
    """Reads the parent's messages and answers its calls until the pipe ends."""

    def __init__(self, reader: asyncio.StreamReader, writer: pipe.PipeWriter, engine_url: str) -> None:
        self._reader = reader
        self._writer = writer
        self.link = ParentLink(writer)
        self.services = Services(self.link.invoke, engine_url, telemetry_from_environment())
        self._served = {function_id: self.services.served(function_id) for function_id in PUBLIC_FUNCTION_IDS}
        self._frames = frame_reader()

    async def run(self) -> None:
        async with anyio.create_task_group() as calls:
            while (message := await pipe.receive(self._reader)) is not None:
                kind, tag, body = message
                if kind == pipe.CALL:
                    calls.start_soon(self._answer, tag, body)
                elif kind == pipe.RESULT:
                    self.link.resolve(tag, body)
                elif kind == pipe.CONFIG:
                    self.services.readopt(pickle.loads(body))
                elif kind == pipe.FLUSH_MODELS:
                    self.services.model_cache.flush()
            self.link.fail_all()
        await self.services.aclose()
        with anyio.move_on_after(INVOKE_GRACE_SECONDS):
            await self._writer.drained()  # the last answers reach the parent before the exit
        self.services.telemetry.shutdown()

    async def _answer(self, tag: int, frame: bytes) -> None:
        reply = await answering.answer_message(self._served.get, frame, self._frames, log)
        # When the parent is gone the answer is dropped: it answers the calls it lost itself.
        self._writer.send(pipe.ANSWER, tag, reply or b"")


async def _open_pipes() -> tuple[asyncio.StreamReader, pipe.PipeWriter]:
    into, out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=pipe.PIPE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(into, "rb", 0))
    return reader, pipe.PipeWriter(out)


async def _main(engine_url: str) -> None:
    reader, writer = await _open_pipes()
    await Server(reader, writer, engine_url).run()


def main(argv: list[str] | None = None) -> int:
    """``python -m context_manager.processes.child <engine url>``, started by the worker."""
    args = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    configure_logging()
    anyio.run(_main, args[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
