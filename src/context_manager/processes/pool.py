"""The parent side of ``--processes N``: starts the serving processes, hands each invocation
frame to one of them, relays their engine calls and their replies, replaces a process that dies.

The parent's event loop only moves bytes (frames in, replies out, engine calls relayed), so
pings, small calls, configuration reloads and channel traffic are never stuck behind a large
history being counted. A process that dies takes nothing with it: every call it held is
answered at once with an internal error, a new process takes its place (with the configuration
in force), and later calls go on. Stopping drains the calls in hand before the processes end.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import pickle
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
import orjson

from context_manager.core.settings import WorkerConfig
from context_manager.engine import answering, protocol
from context_manager.engine.client import RemoteError
from context_manager.engine.peek import Invocation, session_hint
from context_manager.processes import MAX_PROCESSES, pipe
from context_manager.processes.routing import Affinity, pick
from context_manager.wire import codec, trace

log = logging.getLogger("context_manager.worker")

# A process that dies this soon after it started is restarted after a growing pause.
QUICK_DEATH_SECONDS = 5.0
MAX_RESTART_PAUSE_SECONDS = 5.0
STOP_SECONDS = 5.0
# Calls handed to one process at a time: more wait in the parent, which holds their only copy,
# and are routed when a process has room, by the loads of that moment.
CALLS_PER_PROCESS = 4
# A frame this large takes long enough to serve that small calls must not queue behind it.
LARGE_FRAME_BYTES = 1024 * 1024
# A call waits at most this long for a live process before it is answered with an error.
NO_PROCESS_SECONDS = 30.0

EngineInvoke = Callable[..., Awaitable[Any]]


@dataclass(slots=True)
class _Call:
    invocation: Invocation
    size: int
    done: anyio.Event = field(default_factory=anyio.Event)
    reply: bytes | None = None


class _Process:
    """One serving process and the calls it holds."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.alive = False
        self.load = 0
        self.calls: dict[int, _Call] = {}
        self.proc: asyncio.subprocess.Process | None = None
        self.writer: pipe.PipeWriter | None = None
        self.large_in_hand = 0
        self.relays = 0  # engine calls made for it, still waiting for their outcome
        self.answers: asyncio.StreamReader | None = None

    @property
    def calls_in_hand(self) -> int:
        return len(self.calls)

    @property
    def has_room(self) -> bool:
        """Whether it may take another call: it works on at most :data:`CALLS_PER_PROCESS`
        at a time, not counting calls that wait on an engine call (a summary, say)."""
        return len(self.calls) - self.relays < CALLS_PER_PROCESS

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def send(self, kind: bytes, tag: int, body: bytes = b"") -> None:
        assert self.writer is not None
        self.writer.send(kind, tag, body)


def lost_call_reply(invocation: Invocation, why: str) -> bytes | None:
    """The reply to a call no serving process could answer."""
    return answering.failure_reply(invocation, protocol.INVOCATION_FAILED, f"internal error: {why}")


class ProcessPool:
    """``size`` serving processes behind one engine connection (``engine_invoke`` makes the
    engine calls they ask for: ``EngineClient.invoke``)."""

    def __init__(self, size: int, engine_url: str, engine_invoke: EngineInvoke) -> None:
        if not 1 <= size <= MAX_PROCESSES:
            raise ValueError(f"processes must be from 1 to {MAX_PROCESSES}, got {size}")
        self.size = size
        self._engine_url = engine_url
        self._engine_invoke = engine_invoke
        self._processes = [_Process(index) for index in range(size)]
        self._affinity = Affinity()
        self._last_large: int | None = None  # the process that took the latest large frame
        self._tags = itertools.count(1)
        self._config: bytes | None = None
        self._closing = False
        self._changed = anyio.Event()  # a process started or stopped
        self._waiting: deque[anyio.Event] = deque()  # calls waiting for room, first come first
        # Large calls may fill all processes but one (with one process, nothing is held back).
        self._large_slots = anyio.Semaphore(size - 1) if size > 1 else None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._calls_in_hand = 0

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> ProcessPool:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        for process in self._processes:
            self._task_group.start_soon(self._supervise, process)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        assert self._task_group is not None
        with anyio.CancelScope(shield=True):
            await self.stop()
        self._task_group.cancel_scope.cancel()
        return await self._task_group.__aexit__(kind, exc, tb)

    async def stop(self) -> None:
        """End every process: close its pipe (it finishes what it holds), kill it if it lingers."""
        self._closing = True
        running = [p.proc for p in self._processes if p.proc is not None and p.proc.returncode is None]
        for process in self._processes:
            if process.writer is not None:
                process.writer.close()
        with anyio.move_on_after(STOP_SECONDS):
            for proc in running:
                await proc.wait()
        for proc in running:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()

    async def drain(self, seconds: float) -> int:
        """Wait until no call is in hand, at most ``seconds``; the number still in hand."""
        with anyio.move_on_after(seconds):
            while self.calls_in_hand:
                await anyio.sleep(0.02)
        return self.calls_in_hand

    @property
    def calls_in_hand(self) -> int:
        """Calls forwarded and not yet answered, waiting for room or held by a process."""
        return self._calls_in_hand

    # ------------------------------------------------------------------ what every process gets

    def configure(self, config: WorkerConfig) -> None:
        """Serve with ``config`` in every process, and in every process started later."""
        self._config = pickle.dumps(config)
        self._broadcast(pipe.CONFIG, self._config)

    def flush_models(self) -> None:
        self._broadcast(pipe.FLUSH_MODELS)

    def _broadcast(self, kind: bytes, body: bytes = b"") -> None:
        for process in self._processes:
            if process.alive:
                process.send(kind, 0, body)

    # ------------------------------------------------------------------ calls

    async def forward(self, invocation: Invocation, frame: bytes) -> bytes | None:
        """Have a process answer ``frame``; the reply frame's bytes (None: no reply due).

        A large frame waits here while all but one process hold a large one: a process kept
        free of them answers the small calls, which would otherwise wait behind a history
        that takes a hundred times longer to count.
        """
        self._calls_in_hand += 1
        try:
            if len(frame) < LARGE_FRAME_BYTES or self._large_slots is None:
                return await self._forward(invocation, frame, large=False)
            async with self._large_slots:
                return await self._forward(invocation, frame, large=True)
        finally:
            self._calls_in_hand -= 1

    async def _forward(self, invocation: Invocation, frame: bytes, large: bool) -> bytes | None:
        hint = session_hint(frame)
        waited_for_life = 0.0
        while True:
            live = [process for process in self._processes if process.alive]
            last = self._affinity.last(hint)
            # Small and large calls keep out of each other's way: neither goes to a process
            # serving a large history while another process is free of one.
            candidates = [process for process in live if not process.large_in_hand] or live
            if large:
                # A new large history joins the others: they stay in as few processes as the
                # large calls need, and the rest keep only small sessions' caches.
                last = self._last_large if last is None else last
            chosen = pick(candidates, last, len(frame), needs_room=not large)
            if chosen is not None:
                break
            if live:
                # The call waits its turn here, holding its one copy of the frame: each place
                # a process frees wakes the first waiting call.
                await self._wait_for_room()
                continue
            # No process is running: wait a bounded time for a replacement.
            started = time.monotonic()
            with anyio.move_on_after(NO_PROCESS_SECONDS - waited_for_life):
                await self._changed.wait()
            waited_for_life += time.monotonic() - started
            if waited_for_life >= NO_PROCESS_SECONDS:
                return lost_call_reply(invocation, "no worker process is running")
        process = chosen
        assert isinstance(process, _Process)
        self._affinity.remember(hint, process.index)
        if large:
            self._last_large = process.index
        call = _Call(invocation, len(frame))
        tag = next(self._tags)
        process.calls[tag] = call
        process.load += call.size
        process.large_in_hand += large
        try:
            # A process that dies meanwhile has its calls answered by its supervisor.
            process.send(pipe.CALL, tag, frame)
            await call.done.wait()
        finally:
            process.calls.pop(tag, None)
            process.load -= call.size
            process.large_in_hand -= large
            self._make_room()
        return call.reply

    # ------------------------------------------------------------------ one process's life

    async def _supervise(self, process: _Process) -> None:
        quick_deaths = 0
        while not self._closing:
            started = time.monotonic()
            try:
                await self._start(process)
            except OSError as exc:
                log.error("could not start worker process %d: %s", process.index, exc)
            else:
                await self._serve_replies(process)
                status = await process.proc.wait() if process.proc is not None else None
                self._lost(process, status)
            if self._closing:
                return
            quick_deaths = quick_deaths + 1 if time.monotonic() - started < QUICK_DEATH_SECONDS else 0
            pause = min(MAX_RESTART_PAUSE_SECONDS, 0.05 * 2 ** quick_deaths) if quick_deaths else 0.0
            await anyio.sleep(pause)

    async def _start(self, process: _Process) -> None:
        # Two pipes: calls into the process's stdin, answers out of its stdout.
        calls_out, calls_in = os.pipe()
        answers_out, answers_in = os.pipe()
        try:
            pipe.widen(calls_in)
            pipe.widen(answers_in)
            process.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "context_manager.processes.child", self._engine_url,
                stdin=calls_out, stdout=answers_in)
        except BaseException:
            os.close(calls_in)
            os.close(answers_out)
            raise
        finally:
            os.close(calls_out)
            os.close(answers_in)
        process.writer = pipe.PipeWriter(calls_in)
        answers = process.answers = asyncio.StreamReader(limit=pipe.PIPE_BYTES)
        await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(answers), os.fdopen(answers_out, "rb", 0))
        if self._config is not None:
            process.send(pipe.CONFIG, 0, self._config)
        process.alive = True
        log.info("worker process %d started (pid=%d)", process.index, process.proc.pid)
        self._signal()

    async def _serve_replies(self, process: _Process) -> None:
        assert process.answers is not None
        async with anyio.create_task_group() as relays:
            while (message := await pipe.receive(process.answers)) is not None:
                kind, tag, body = message
                if kind == pipe.ANSWER:
                    call = process.calls.get(tag)
                    if call is not None and not call.done.is_set():
                        call.reply = body or None
                        call.done.set()
                elif kind == pipe.INVOKE:
                    relays.start_soon(self._relay, process, tag, body)
            process.alive = False  # no new call goes to it from here on
            relays.cancel_scope.cancel()
        if process.writer is not None:
            process.writer.close()

    def _lost(self, process: _Process, status: int | None) -> None:
        process.alive = False
        self._signal()
        why = _exit_text(status)
        if process.calls:
            log.error("worker process %d (pid=%s) %s holding %d calls; they are answered with an "
                      "error", process.index, process.pid, why, len(process.calls))
        elif not self._closing:
            log.warning("worker process %d (pid=%s) %s", process.index, process.pid, why)
        for call in process.calls.values():
            if not call.done.is_set():
                call.reply = lost_call_reply(call.invocation, f"the worker process serving this call {why}")
                call.done.set()

    def _signal(self) -> None:
        """A process started or stopped: every waiting call looks again."""
        self._changed.set()
        self._changed = anyio.Event()
        while self._waiting:
            self._waiting.popleft().set()

    def _make_room(self) -> None:
        """One place was freed: the first waiting call takes it."""
        if self._waiting:
            self._waiting.popleft().set()

    async def _wait_for_room(self) -> None:
        turn = anyio.Event()
        self._waiting.append(turn)
        try:
            await turn.wait()
        except BaseException:
            # A call that stops waiting (cancelled) must not take a wake-up with it.
            if turn.is_set():
                self._make_room()
            else:
                self._waiting.remove(turn)
            raise

    async def _relay(self, process: _Process, tag: int, body: bytes) -> None:
        """Make the engine call a process asked for and send it the outcome."""
        header_end = body.index(b"\n")
        header = orjson.loads(body[:header_end])
        frame = {"traceparent": header.get("traceparent"), "baggage": header.get("baggage")}
        context = trace.CURRENT_TRACE.set(trace.from_frame(frame))
        process.relays += 1
        self._make_room()  # the call it serves waits on the engine, not on a core
        try:
            result = await self._engine_invoke(
                header["function_id"], orjson.Fragment(body[header_end + 1:]),
                timeout_ms=header["timeout_ms"])
            outcome: dict[str, Any] = {"result": result}
        except RemoteError as exc:
            outcome = {"error": str(exc)}
        finally:
            trace.CURRENT_TRACE.reset(context)
            process.relays -= 1
        if process.alive:
            process.send(pipe.RESULT, tag, codec.dumps_wire(outcome))


def _exit_text(status: int | None) -> str:
    if status is None:
        return "stopped"
    if status < 0:
        return f"was killed by signal {-status}"
    return f"exited with status {status}"
