"""WebSocket client of the iii engine: registrations, invocations both ways, reconnects.

The client keeps every registration in memory and replays it on each new connection, because the
engine forgets a worker's functions and bindings when its socket drops. Calls made while the socket
is down are queued and sent after the replay; they are never failed by a disconnect, only by their
own timeout (the behaviour of the official SDKs).
"""

from __future__ import annotations

import logging
import os
import platform
import random
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from context_manager.engine import answering, protocol
from context_manager.engine.peek import Invocation, peek_invocation
from context_manager.ports import Invoke, InvokeError
from context_manager.wire import trace
from context_manager.wire.errors import Error, error_envelope

Handler = answering.Handler
# Takes an invocation frame undecoded and returns the reply frame's bytes (None: no reply due).
Forward = Callable[[Invocation, bytes], Awaitable[bytes | None]]

DEFAULT_TIMEOUT_MS = 30_000
OUTBOX_LIMIT = 1000


class RemoteError(Error):
    """A call answered with an error body, timed out, or was cut short by shutdown."""

    def __init__(self, code: str, message: str, function_id: str = "") -> None:
        super().__init__(f"remote error ({code}): {message}")
        self.code = code
        self.message = message
        self.function_id = function_id


class RegistrationRejected(Error):
    """The engine refused this worker's name; the client stops for good."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Reconnect delays: ``min(initial * multiplier**attempt, max) ± jitter``."""

    initial_ms: int = 250
    multiplier: float = 2.0
    max_ms: int = 5_000
    jitter: float = 0.2

    def delay_seconds(self, attempt: int) -> float:
        base = min(self.initial_ms * self.multiplier**attempt, self.max_ms)
        spread = base * self.jitter
        return max(0.0, base + random.uniform(-spread, spread)) / 1000.0


@dataclass(slots=True)
class _Function:
    handler: Handler | None
    frame: dict[str, Any]
    forward: Forward | None = None


@dataclass(slots=True)
class _Pending:
    function_id: str
    done: anyio.Event = field(default_factory=anyio.Event)
    frame: dict[str, Any] | None = None


def worker_metadata(name: str, version: str) -> dict[str, Any]:
    """The `engine::workers::register` payload describing this process."""
    return {
        "runtime": "python",
        "version": version,
        "name": name,
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "pid": os.getpid(),
    }


class EngineClient:
    def __init__(
        self,
        url: str,
        metadata: dict[str, Any],
        *,
        backoff: Backoff = Backoff(),
        log: logging.Logger | None = None,
        reader: protocol.FrameReader | None = None,
    ) -> None:
        self.url = url
        self.reader = reader  # parses inbound frames; the plain codec when None
        self.metadata = metadata
        self.backoff = backoff
        self.log = log or logging.getLogger("context_manager.engine")
        self.worker_id: str | None = None
        self._reattach_token: str | None = None
        self._previous: tuple[str, str] | None = None
        self._functions: dict[str, _Function] = {}
        self._forwarding = False  # some function takes its frames undecoded
        self._triggers: dict[str, dict[str, Any]] = {}
        self._pending: dict[str, _Pending] = {}
        self._outbox: deque[bytes] = deque(maxlen=OUTBOX_LIMIT)
        self._ws: ClientConnection | None = None
        self._send_lock = anyio.Lock()
        self._connected = anyio.Event()
        self._closed = anyio.Event()
        self._closing = False
        self._failure: BaseException | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self.connections = 0

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        """Connect, serve and reconnect until :meth:`close`; raises if the engine rejects us."""
        try:
            async with anyio.create_task_group() as task_group:
                self._task_group = task_group
                await self._connection_loop()
                task_group.cancel_scope.cancel()
        finally:
            self._task_group = None
            self._fail_pending(protocol.SHUTDOWN, "client shut down")
        if self._failure is not None:
            raise self._failure

    async def close(self) -> None:
        """Stop reconnecting, close the socket and fail calls still waiting."""
        self._closing = True
        self._closed.set()
        ws = self._ws
        if ws is not None:
            await ws.close()
        self._fail_pending(protocol.SHUTDOWN, "client shut down")

    async def wait_connected(self) -> None:
        await self._connected.wait()

    @property
    def is_connected(self) -> bool:
        return self._ws is not None and self._connected.is_set()

    async def _connection_loop(self) -> None:
        attempt = 0
        while not self._closing:
            try:
                async with connect(
                    self.url,
                    max_size=protocol.MAX_MESSAGE_BYTES,
                    open_timeout=10,
                    ping_interval=20,
                    ping_timeout=20,
                    compression=None,
                ) as ws:
                    attempt = 0
                    await self._on_open(ws)
                    await self._read_loop(ws)
            except RegistrationRejected as exc:
                self._failure = exc
                self._closing = True
            except (OSError, TimeoutError, InvalidHandshake, InvalidURI, ConnectionClosed) as exc:
                self.log.debug("engine connection failed: %s", exc)
            finally:
                self._on_lost()
            if self._closing:
                return
            delay = self.backoff.delay_seconds(attempt)
            attempt += 1
            self.log.info("reconnecting to the engine in %.2fs", delay)
            with anyio.move_on_after(delay):
                await self._closed.wait()

    async def _on_open(self, ws: ClientConnection) -> None:
        # Replay under the send lock so a registration made meanwhile is either part of the
        # replay or sent after it, never lost.
        async with self._send_lock:
            self.connections += 1
            if self._previous is not None:
                await ws.send(protocol.encode_bytes(protocol.reattach(*self._previous)), text=True)
            for function in list(self._functions.values()):
                await ws.send(protocol.encode_bytes(function.frame), text=True)
            for trigger in list(self._triggers.values()):
                await ws.send(protocol.encode_bytes(trigger), text=True)
            while self._outbox:
                await ws.send(self._outbox.popleft(), text=True)
            register = protocol.invoke(protocol.WORKERS_REGISTER, self.metadata, void=True)
            await ws.send(protocol.encode_bytes(register), text=True)
            self._ws = ws
            self._connected.set()
        self.log.info("connected to the engine at %s", self.url)

    def _on_lost(self) -> None:
        if self._ws is not None and not self._closing:
            self.log.warning("engine connection lost")
        self._ws = None
        if self._connected.is_set():
            self._connected = anyio.Event()
        if self.worker_id is not None and self._reattach_token is not None:
            self._previous = (self.worker_id, self._reattach_token)

    # ------------------------------------------------------------------ registrations

    async def register_function(
        self,
        function_id: str,
        handler: Handler | None,
        *,
        description: str | None = None,
        request_format: Any = None,
        response_format: Any = None,
        metadata: Any = None,
        forward: Forward | None = None,
    ) -> None:
        """Serve ``function_id`` with ``handler``, or, with ``forward``, hand its invocation
        frames over undecoded (``forward`` returns the reply's bytes)."""
        if (handler is None) == (forward is None):
            raise ValueError("a function has either a handler or a forward")
        frame = protocol.register_function(
            function_id, description, request_format, response_format, metadata
        )
        async with self._send_lock:
            self._functions[function_id] = _Function(handler, frame, forward)
            self._forwarding = self._forwarding or forward is not None
            await self._send_if_connected(frame)

    async def register_trigger(self, trigger_type: str, function_id: str, config: Any) -> str:
        trigger_id = str(uuid.uuid4())
        frame = protocol.register_trigger(trigger_id, trigger_type, function_id, config)
        async with self._send_lock:
            self._triggers[trigger_id] = frame
            await self._send_if_connected(frame)
        return trigger_id

    @property
    def function_ids(self) -> list[str]:
        return list(self._functions)

    # ------------------------------------------------------------------ outbound calls

    async def invoke(
        self,
        function_id: str,
        payload: Any,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        namespace: str | None = None,
    ) -> Any:
        """Call a function anywhere on the bus and wait for its result.

        Raises :class:`RemoteError` with the callee's code and message, ``TIMEOUT`` after
        ``timeout_ms``, or ``SHUTDOWN`` when the client closes first.
        """
        if self._closing:
            raise RemoteError(protocol.SHUTDOWN, "client shut down", function_id)
        invocation_id = str(uuid.uuid4())
        pending = _Pending(function_id)
        self._pending[invocation_id] = pending
        frame = protocol.invoke(function_id, payload, invocation_id, namespace)
        context = trace.CURRENT_TRACE.get()
        if context is not None:
            # The engine stitches this call into the trace of the invocation making it.
            frame["traceparent"] = context.traceparent
            if context.baggage is not None:
                frame["baggage"] = context.baggage
        try:
            await self._send(frame)
            with anyio.move_on_after(max(timeout_ms, 0) / 1000.0):
                await pending.done.wait()
        finally:
            self._pending.pop(invocation_id, None)
        reply = pending.frame
        if reply is None:
            raise RemoteError(
                protocol.TIMEOUT, f"invocation timed out after {timeout_ms}ms", function_id
            )
        error = protocol.error_body(reply)
        if error is not None:
            raise RemoteError(error[0], error[1], function_id)
        return reply.get("result")

    async def _send(self, frame: dict[str, Any] | bytes) -> None:
        text = frame if isinstance(frame, bytes) else protocol.encode_bytes(frame)
        async with self._send_lock:
            if not await self._send_if_connected(text):
                self._outbox.append(text)

    async def _send_if_connected(self, frame: dict[str, Any] | bytes) -> bool:
        ws = self._ws
        if ws is None:
            return False
        text = frame if isinstance(frame, bytes) else protocol.encode_bytes(frame)
        try:
            await ws.send(text, text=True)
        except ConnectionClosed:
            return False
        return True

    def _fail_pending(self, code: str, message: str) -> None:
        for pending in list(self._pending.values()):
            if not pending.done.is_set():
                pending.frame = protocol.error_result("", pending.function_id, code, message)
                pending.done.set()

    # ------------------------------------------------------------------ inbound frames

    async def _read_loop(self, ws: ClientConnection) -> None:
        try:
            while True:
                # Raw bytes: the codec parses UTF-8 itself, so decoding to str first is a copy.
                await self._receive(await ws.recv(decode=False))
        except ConnectionClosed:
            pass

    async def _receive(self, message: bytes) -> None:
        # One frame per call, so the loop keeps no reference to it: a large invocation is freed
        # when its reply has gone out, not while the next frame is being read.
        if self._forwarding and self._forwarded(message):
            return
        try:
            frame = protocol.decode(message, self.reader)
        except protocol.PayloadError as exc:
            await self._refuse_payload(exc)
            return
        except protocol.FrameError as exc:
            self.log.warning("ignoring an engine frame: %s", exc)
            return
        try:
            await self._dispatch(frame)
        except RegistrationRejected:
            raise
        except Exception:  # one odd frame must not take the connection down
            self.log.exception("failed to handle a %s frame", frame["type"])

    def _forwarded(self, message: bytes) -> bool:
        call = peek_invocation(message)
        if call is None:
            return False
        function = self._functions.get(call.function_id)
        if function is None or function.forward is None:
            return False
        assert self._task_group is not None
        self._task_group.start_soon(self._serve_forwarded, function.forward, call, message)
        return True

    async def _dispatch(self, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        if kind == protocol.INVOKE_FUNCTION:
            assert self._task_group is not None
            self._task_group.start_soon(self._serve, frame)
        elif kind == protocol.INVOCATION_RESULT:
            pending = self._pending.get(str(frame.get("invocation_id")))
            if pending is not None and not pending.done.is_set():
                pending.frame = frame
                pending.done.set()
        elif kind == protocol.WORKER_REGISTERED:
            self.worker_id = frame.get("worker_id")
            self._reattach_token = frame.get("reattach_token")
        elif kind == protocol.PING:
            await self._send({"type": protocol.PONG})
        elif kind == protocol.REGISTRATION_REJECTED:
            if frame.get("code") == "WORKER_NAMESPACE_CONFLICT":
                self.log.error("the engine rejected worker name %r", frame.get("worker_name"))
                raise RegistrationRejected(f"worker name conflict: {frame.get('worker_name')}")
            self.log.warning(
                "the engine refused function %s (%s)", frame.get("function_id"), frame.get("code")
            )
        elif kind == protocol.TRIGGER_REGISTRATION_RESULT:
            if frame.get("error") is not None:
                self.log.warning(
                    "trigger binding %s for %s failed: %s",
                    frame.get("trigger_type"),
                    frame.get("function_id"),
                    frame.get("error"),
                )

    async def _refuse_payload(self, exc: protocol.PayloadError) -> None:
        reply = answering.refusal(exc, self.log)
        if reply is not None:
            await self._send(reply)

    async def _serve(self, frame: dict[str, Any]) -> None:
        reply = await self.answer(frame)
        if reply is not None:
            await self._send(reply)

    async def _serve_forwarded(self, forward: Forward, call: Invocation, message: bytes) -> None:
        try:
            reply = await forward(call, message)
        except Exception as exc:  # the call still gets its one reply
            self.log.exception("forwarding %s failed", call.function_id)
            reply = answering.failure_reply(call, *error_envelope(exc))
        if reply is not None:
            await self._send(reply)

    def _handler_for(self, function_id: str) -> Handler | None:
        function = self._functions.get(function_id)
        return None if function is None else function.handler

    async def answer(self, frame: dict[str, Any]) -> bytes | None:
        """The reply frame to one ``invokefunction`` (None when no reply is due)."""
        return await answering.answer(self._handler_for, frame, self.log)


def invoke_callable(client: EngineClient) -> Invoke:
    """The adapters' call seam over this client: failures raise ``InvokeError`` whose text
    carries both the error code and message (``remote error (<code>): <message>``)."""

    async def invoke(function_id: str, payload: Any, timeout_ms: int) -> Any:
        try:
            return await client.invoke(function_id, payload, timeout_ms=timeout_ms)
        except RemoteError as exc:
            raise InvokeError(str(exc)) from None

    return invoke
