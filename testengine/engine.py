"""An in-process iii engine for tests, speaking the real worker and channel protocols.

It runs on its own thread and event loop, so blocking SDK clients and worker subprocesses can
talk to it while the test thread waits. Covered: worker registration and metadata, function
routing with `_caller_worker_id`, `function_not_found`, `invocation_stopped` on a target's
disconnect, reattach, trigger types and bindings (parked until a provider exists), the built-in
`configuration` worker with change triggers, the `state::*` functions (switchable off, and
failable through a hook), `engine::channels::create` and the channel sockets, plus an optional
fake llm-router.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from .configuration import ConfigurationError, ConfigurationStore, binding_matches
from .fake_router import MODELS_CHANGED, FakeRouter, RouterCallError
from .state import StateStore
from .wire import decode, encode

MAX_SIZE = 64 * 1024 * 1024
BUILTIN_TRIGGER_TYPES = ("configuration",)
_END = object()
_STOPPED = object()
T = TypeVar("T")


class CallFailed(Exception):
    """An engine-side call answered with an error body."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(eq=False)
class Conn:
    ws: ServerConnection
    worker_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    token: str = field(default_factory=lambda: str(uuid.uuid4()))
    metadata: dict[str, Any] = field(default_factory=dict)
    alive: bool = True
    send_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def send(self, frame: dict[str, Any]) -> None:
        async with self.send_lock:
            try:
                await self.ws.send(encode(frame), text=True)
            except ConnectionClosed:
                pass


@dataclass
class Binding:
    id: str
    trigger_type: str
    function_id: str
    config: Any
    owner: Conn | None


@dataclass
class Pending:
    caller: Conn | None
    target: Conn | None
    function_id: str
    future: asyncio.Future[dict[str, Any]] | None = None


@dataclass
class Chan:
    key: str
    queue: asyncio.Queue[Any]
    writer_taken: bool = False
    reader_taken: bool = False


def _recorded(frame: dict[str, Any]) -> dict[str, Any]:
    """A frame as :attr:`TestEngine.received` keeps it: an invocation result without its value,
    so long runs (benchmarks, load) do not keep every response alive; callers get values from
    :meth:`TestEngine.call`."""
    if frame["type"] == "invocationresult" and "result" in frame:
        return {k: v for k, v in frame.items() if k != "result"}
    return frame


class TestEngine:
    __test__ = False  # not a pytest class

    def __init__(self, port: int = 0, *, router: FakeRouter | None = None, state: bool = True) -> None:
        self.port = port
        self.router = router
        self.configuration_enabled = True
        self.configuration = ConfigurationStore()
        # `state::*`: off answers function_not_found (no state worker loaded). The hook sees each
        # call first; a body it returns (an error, an odd result) is the answer instead.
        self.state_enabled = state
        self.state = StateStore()
        self.state_hook: Callable[[str, Any], dict[str, Any] | None] | None = None
        self.state_delay_s = 0.0
        # Every frame received from a worker, as (worker name or id, frame), for assertions;
        # results are recorded without their value (see `_recorded`).
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.calls: list[tuple[str, Any]] = []
        # Results that answered no pending invocation: a reply sent twice, or to nobody.
        self.stray_results: list[dict[str, Any]] = []
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._reset_state()

    def _reset_state(self) -> None:
        self.conns: dict[str, Conn] = {}
        self.functions: dict[str, Conn] = {}
        self.trigger_types: dict[str, Conn] = {}
        self.bindings: dict[str, Binding] = {}
        self.pending: dict[str, Pending] = {}
        self.channels: dict[str, Chan] = {}
        self._server: Server | None = None
        self._stop: asyncio.Event | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self) -> TestEngine:
        self._ready.clear()
        self._thread = threading.Thread(target=self._thread_main, name="test-engine", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("test engine did not start")
        if self.router is not None:
            self.router.engine_url = self.url
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)
            if self._thread.is_alive():
                # A handler that never returns holds the server's close; say so, not a slow test.
                raise RuntimeError("test engine did not stop within 10 s")
        self._thread = None
        self._loop = None

    def restart(self, down_for: float = 0.0) -> None:
        """Drop every connection and forget every registration; configuration entries stay."""
        self.stop()
        if down_for:
            # Bound but not listening, the port refuses connections as a stopped engine does and
            # stays ours: an engine started meanwhile elsewhere (another xdist worker) cannot take it.
            with socket.socket() as placeholder:
                placeholder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                placeholder.bind(("127.0.0.1", self.port))
                threading.Event().wait(down_for)
        self._reset_state()
        self.start()

    def _thread_main(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with serve(
            self._handle,
            "127.0.0.1",
            self.port,
            max_size=MAX_SIZE,
            process_request=self._check_upgrade,
            ping_interval=None,
        ) as server:
            self._server = server
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            await self._stop.wait()
            server.close()
            for conn in list(self.conns.values()):
                await conn.ws.close()
            await server.wait_closed()

    def run(self, make: Callable[[], Coroutine[Any, Any, Any]], timeout: float = 30) -> Any:
        """Run a coroutine on the engine loop from another thread and return its result."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(make(), self._loop).result(timeout)

    # ------------------------------------------------------------------ test helpers

    def call(self, function_id: str, data: Any, timeout: float = 10, *, via: str | None = None) -> Any:
        """Invoke a worker function from the engine itself; raises :class:`CallFailed`.

        ``via`` sends the call to the owner of that function id instead of ``function_id``'s
        owner, to reach a worker with an id it does not serve.
        """
        reply = self.run(lambda: self._engine_call(function_id, data, via), timeout)
        if "error" in reply:
            raise CallFailed(reply["error"].get("code"), reply["error"].get("message"))
        return reply.get("result")

    async def call_async(self, function_id: str, data: Any) -> Any:
        """:meth:`call` for a coroutine already running on the engine loop (see :meth:`run`):
        no thread hop on the way in or out; raises :class:`CallFailed`."""
        reply = await self._engine_call(function_id, data)
        if "error" in reply:
            raise CallFailed(reply["error"].get("code"), reply["error"].get("message"))
        return reply.get("result")

    def call_raw(self, via: str, text: str, invocation_id: str, timeout: float = 10) -> dict[str, Any]:
        """Send a hand-written frame to the owner of ``via`` and wait for the reply body."""

        async def go() -> dict[str, Any]:
            target = self.functions[via]
            future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self.pending[invocation_id] = Pending(None, target, via, future)
            async with target.send_lock:
                await target.ws.send(text)
            return await future

        return self.run(go, timeout)

    def send_to(self, via: str, frame: dict[str, Any] | str) -> None:
        async def go() -> None:
            target = self.functions[via]
            if isinstance(frame, str):
                async with target.send_lock:
                    await target.ws.send(frame)
            else:
                await target.send(frame)

        self.run(go)

    def function_ids(self) -> set[str]:
        return set(self.functions)

    def wait_for_functions(self, ids: set[str], timeout: float = 10) -> None:
        deadline = threading.Event()
        for _ in range(int(timeout / 0.02)):
            if ids <= set(self.functions):
                return
            deadline.wait(0.02)
        raise TimeoutError(f"functions {sorted(ids - set(self.functions))} never registered")

    def workers(self) -> list[dict[str, Any]]:
        return [dict(c.metadata, worker_id=c.worker_id) for c in self.conns.values()]

    def set_configuration(self, config_id: str, value: Any, *, validate: bool = True) -> Any:
        async def go() -> Any:
            if validate:
                result, event = self.configuration.set({"id": config_id, "value": value})
            else:
                result, event = self.configuration.store_unchecked(config_id, value)
            self._fire_configuration(event)
            return result

        return self.run(go)

    def fire_models_changed(self, payload: Any) -> list[Any]:
        """Call every function bound to `router::models::changed`, as the router does."""

        async def go() -> list[Any]:
            replies = []
            for binding in list(self.bindings.values()):
                if binding.trigger_type == MODELS_CHANGED:
                    replies.append(await self._engine_call(binding.function_id, payload))
            return replies

        return self.run(go)

    def bindings_of(self, trigger_type: str) -> list[Binding]:
        return [b for b in self.bindings.values() if b.trigger_type == trigger_type]

    # ------------------------------------------------------------------ sockets

    def _check_upgrade(self, connection: ServerConnection, request: Any) -> Any:
        parts = urlsplit(request.path)
        if parts.path in ("/", "/otel", ""):
            return None
        if not parts.path.startswith("/ws/channels/"):
            return connection.respond(HTTPStatus.NOT_FOUND, "Not found\n")
        query = parse_qs(parts.query)
        key = query.get("key", [None])[0]
        direction = query.get("dir", [None])[0]
        if key is None or direction not in ("read", "write"):
            return connection.respond(HTTPStatus.BAD_REQUEST, "Bad request\n")
        chan = self.channels.get(parts.path.removeprefix("/ws/channels/"))
        if chan is None or chan.key != key:
            return connection.respond(HTTPStatus.NOT_FOUND, "Channel not found\n")
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        parts = urlsplit(ws.request.path)
        if parts.path == "/otel":
            async for _ in ws:
                pass
            return
        if parts.path.startswith("/ws/channels/"):
            direction = parse_qs(parts.query)["dir"][0]
            chan = self.channels[parts.path.removeprefix("/ws/channels/")]
            if direction == "write":
                await self._channel_writer(ws, chan)
            else:
                await self._channel_reader(ws, chan)
            return
        await self._worker(ws)

    async def _channel_writer(self, ws: ServerConnection, chan: Chan) -> None:
        if chan.writer_taken:
            await ws.close()
            return
        chan.writer_taken = True
        try:
            async for message in ws:
                if await self._unless_stopped(chan.queue.put(message)) is _STOPPED:
                    return
        except ConnectionClosed:
            pass
        finally:
            await self._unless_stopped(chan.queue.put(_END))

    async def _channel_reader(self, ws: ServerConnection, chan: Chan) -> None:
        if chan.reader_taken:
            await ws.close()
            return
        chan.reader_taken = True
        while True:
            item = await self._unless_stopped(chan.queue.get())
            if item is _STOPPED:
                return
            if item is _END:
                await ws.close()
                return
            try:
                await ws.send(item)
            except ConnectionClosed:
                return

    async def _unless_stopped(self, operation: Awaitable[T]) -> T | object:
        """``operation``'s result, or ``_STOPPED`` once the engine stops first.

        A channel end parked on its queue is not reading its socket, so closing the server does
        not wake it, and the server's close waits for every handler: without this, a channel
        nobody writes (an absent or failing router) held :meth:`stop` for its whole join timeout.
        """
        assert self._stop is not None
        pending = asyncio.ensure_future(operation)
        stopping = asyncio.ensure_future(self._stop.wait())
        try:
            done, _ = await asyncio.wait((pending, stopping), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            pending.cancel()  # a no-op once it has finished
        return pending.result() if pending in done else _STOPPED

    async def _worker(self, ws: ServerConnection) -> None:
        conn = Conn(ws)
        self.conns[conn.worker_id] = conn
        await conn.send(
            {"type": "workerregistered", "worker_id": conn.worker_id, "reattach_token": conn.token}
        )
        try:
            while True:
                await self._receive(conn, await ws.recv(decode=False))  # bytes: no str copy
        except ConnectionClosed:
            pass
        finally:
            await self._cleanup(conn)

    # ------------------------------------------------------------------ frames

    async def _receive(self, conn: Conn, message: bytes) -> None:
        # One frame per call: the loop holds no reference to it, so a large reply is freed by
        # whoever holds it last, not while the next frame is being read.
        try:
            frame = decode(message)
        except ValueError:  # UnicodeDecodeError included
            return
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            return
        self.received.append((conn.metadata.get("name", conn.worker_id), _recorded(frame)))
        await self._frame(conn, frame)

    async def _frame(self, conn: Conn, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        if kind == "registerfunction" and isinstance(frame.get("id"), str):
            owner = self.functions.get(frame["id"])
            if owner is not None and owner is not conn and owner.alive:
                await conn.send(
                    {
                        "type": "registrationrejected",
                        "code": "FUNCTION_NAMESPACE_CONFLICT",
                        "namespace": "default",
                        "function_id": frame["id"],
                        "owner_worker_id": owner.worker_id,
                    }
                )
            else:
                self.functions[frame["id"]] = conn
        elif kind == "unregisterfunction":
            if self.functions.get(frame.get("id")) is conn:
                del self.functions[frame["id"]]
        elif kind == "registertriggertype" and isinstance(frame.get("id"), str):
            self.trigger_types[frame["id"]] = conn
            for binding in self.bindings.values():
                if binding.trigger_type == frame["id"]:
                    await conn.send(self._binding_frame(binding))
        elif kind == "registertrigger":
            await self._register_trigger(conn, frame)
        elif kind == "unregistertrigger":
            binding = self.bindings.pop(str(frame.get("id")), None)
            provider = self.trigger_types.get(binding.trigger_type) if binding else None
            if binding and provider is not None:
                await provider.send(
                    {"type": "unregistertrigger", "id": binding.id, "trigger_type": binding.trigger_type}
                )
        elif kind == "invokefunction":
            asyncio.get_running_loop().create_task(self._invoke(conn, frame))
        elif kind == "invocationresult":
            self._result(frame)
        elif kind == "ping":
            await conn.send({"type": "pong"})
        elif kind == "reattach":
            old = self.conns.get(str(frame.get("previous_worker_id")))
            if old is not None and old is not conn and old.token == frame.get("reattach_token"):
                await self._cleanup(old)
                await old.ws.close()

    async def _register_trigger(self, conn: Conn, frame: dict[str, Any]) -> None:
        if not all(isinstance(frame.get(k), str) for k in ("id", "trigger_type", "function_id")):
            return
        if "config" not in frame:
            return
        binding = Binding(frame["id"], frame["trigger_type"], frame["function_id"], frame["config"], conn)
        self.bindings[binding.id] = binding
        provider = self.trigger_types.get(binding.trigger_type)
        if provider is not None:
            await provider.send(self._binding_frame(binding))

    @staticmethod
    def _binding_frame(binding: Binding) -> dict[str, Any]:
        return {
            "type": "registertrigger",
            "id": binding.id,
            "trigger_type": binding.trigger_type,
            "function_id": binding.function_id,
            "config": binding.config,
        }

    async def _invoke(self, caller: Conn, frame: dict[str, Any]) -> None:
        function_id = frame.get("function_id")
        if not isinstance(function_id, str) or "data" not in frame:
            return
        invocation_id = frame.get("invocation_id")
        action = frame.get("action")
        reply_wanted = isinstance(invocation_id, str) and not (
            isinstance(action, dict) and action.get("type") == "void"
        )
        data = frame["data"]
        namespace = frame.get("namespace")
        self.calls.append((function_id, data))

        async def answer(body: dict[str, Any]) -> None:
            if reply_wanted:
                await caller.send(
                    {"type": "invocationresult", "invocation_id": invocation_id, "function_id": function_id, **body}
                )

        if namespace not in (None, "default"):
            await answer(self._not_found(function_id, namespace))
            return
        builtin = await self._builtin(caller, function_id, data, reply_wanted)
        if builtin is not None:
            await answer(builtin)
            return
        target = self.functions.get(function_id)
        if target is None:
            await answer(self._not_found(function_id, "default"))
            return
        forward_id = invocation_id if isinstance(invocation_id, str) else str(uuid.uuid4())
        self.pending[forward_id] = Pending(caller if reply_wanted else None, target, function_id)
        if isinstance(data, dict):
            data = {**data, "_caller_worker_id": caller.worker_id}
        out = {"type": "invokefunction", "invocation_id": forward_id, "function_id": function_id, "data": data}
        for extra in ("metadata", "traceparent", "baggage"):
            if extra in frame:
                out[extra] = frame[extra]
        await target.send(out)

    @staticmethod
    def _not_found(function_id: str, namespace: str) -> dict[str, Any]:
        return {
            "error": {
                "code": "function_not_found",
                "message": f"Function {function_id} not found in namespace {namespace}.",
            }
        }

    def _result(self, frame: dict[str, Any]) -> None:
        pending = self.pending.pop(str(frame.get("invocation_id")), None)
        if pending is None:
            self.stray_results.append(frame)
            return
        if not isinstance(frame.get("function_id"), str):
            return
        error = frame.get("error")
        if error is not None and not (
            isinstance(error, dict) and isinstance(error.get("code"), str) and isinstance(error.get("message"), str)
        ):
            return  # the real engine drops such frames
        body: dict[str, Any] = {}
        if "result" in frame:
            body["result"] = frame["result"]
        if error is not None:
            body["error"] = error
        if pending.future is not None and not pending.future.done():
            pending.future.set_result(body)
        if pending.caller is not None:
            asyncio.get_running_loop().create_task(
                pending.caller.send(
                    {"type": "invocationresult", "invocation_id": frame["invocation_id"], "function_id": pending.function_id, **body}
                )
            )

    async def _engine_call(self, function_id: str, data: Any, via: str | None = None) -> dict[str, Any]:
        """A call the engine originates (trigger fire, test helper): no `_caller_worker_id`."""
        target = self.functions.get(via or function_id)
        if target is None:
            return self._not_found(function_id, "default")
        invocation_id = str(uuid.uuid4())
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[invocation_id] = Pending(None, target, function_id, future)
        await target.send(
            {"type": "invokefunction", "invocation_id": invocation_id, "function_id": function_id, "data": data}
        )
        return await future

    # ------------------------------------------------------------------ built-in functions

    async def _builtin(
        self, caller: Conn, function_id: str, data: Any, reply_wanted: bool
    ) -> dict[str, Any] | None:
        if function_id == "engine::workers::register":
            if isinstance(data, dict):
                caller.metadata = {k: v for k, v in data.items() if k != "_caller_worker_id"}
            return {"result": {"success": True}}
        if function_id == "engine::channels::create":
            return {"result": self._create_channel(data)}
        if function_id.startswith("configuration::") and self.configuration_enabled:
            return self._configuration(function_id, data)
        if function_id.startswith("state::") and self.state_enabled:
            return await self._state(function_id, data)
        if self.router is not None and function_id in self.router.functions:
            if function_id in self.functions:
                return None  # a connected worker serving the id wins
            try:
                return {"result": await self.router.call(function_id, data)}
            except RouterCallError as exc:
                return {"error": {"code": exc.code, "message": exc.message}}
        return None

    def _create_channel(self, data: Any) -> dict[str, Any]:
        size = data.get("buffer_size") if isinstance(data, dict) else None
        capacity = 64 if size is None else max(1, min(int(size), 1024))
        channel_id, key = str(uuid.uuid4()), str(uuid.uuid4())
        self.channels[channel_id] = Chan(key, asyncio.Queue(capacity))
        return {
            "writer": {"channel_id": channel_id, "access_key": key, "direction": "write"},
            "reader": {"channel_id": channel_id, "access_key": key, "direction": "read"},
        }

    def _configuration(self, function_id: str, data: Any) -> dict[str, Any]:
        store = self.configuration
        try:
            if function_id == "configuration::register":
                result, event = store.register(data)
                self._fire_configuration(event)
            elif function_id == "configuration::set":
                result, event = store.set(data)
                self._fire_configuration(event)
            elif function_id == "configuration::get":
                result = store.get(data)
            elif function_id == "configuration::list":
                result = store.list()
            else:
                return self._not_found(function_id, "default")
        except ConfigurationError as exc:
            return {"error": {"code": exc.code, "message": exc.message}}
        return {"result": result}

    async def _state(self, function_id: str, data: Any) -> dict[str, Any]:
        if self.state_delay_s:
            await asyncio.sleep(self.state_delay_s)  # before the call: the call itself stays atomic
        if self.state_hook is not None:
            body = self.state_hook(function_id, data)
            if body is not None:
                return body
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k != "_caller_worker_id"}
        return self.state.call(function_id, data)

    def _fire_configuration(self, event: dict[str, Any]) -> None:
        loop = asyncio.get_running_loop()
        for binding in list(self.bindings.values()):
            if binding.trigger_type == "configuration" and binding_matches(binding.config, event):
                loop.create_task(self._engine_call(binding.function_id, event))

    # ------------------------------------------------------------------ disconnect

    async def _cleanup(self, conn: Conn) -> None:
        if not conn.alive:
            return
        conn.alive = False
        self.conns.pop(conn.worker_id, None)
        for invocation_id, pending in list(self.pending.items()):
            if pending.target is conn:
                del self.pending[invocation_id]
                body = {"error": {"code": "invocation_stopped", "message": "Invocation stopped"}}
                if pending.future is not None and not pending.future.done():
                    pending.future.set_result(body)
                if pending.caller is not None:
                    await pending.caller.send(
                        {"type": "invocationresult", "invocation_id": invocation_id, "function_id": pending.function_id, **body}
                    )
            elif pending.caller is conn:
                pending.caller = None
        for function_id, owner in list(self.functions.items()):
            if owner is conn:
                del self.functions[function_id]
        for binding_id, binding in list(self.bindings.items()):
            if binding.owner is conn:
                del self.bindings[binding_id]
                provider = self.trigger_types.get(binding.trigger_type)
                if provider is not None and provider is not conn:
                    await provider.send(
                        {"type": "unregistertrigger", "id": binding_id, "trigger_type": binding.trigger_type}
                    )
        for type_id, provider in list(self.trigger_types.items()):
            if provider is conn:
                del self.trigger_types[type_id]
