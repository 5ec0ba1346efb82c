"""One in-process call, bytes in -> bytes out, exactly as the `call` command runs it.

``call_bytes`` mirrors ``cli.run_call`` without the subprocess: parse the request bytes with the
worker's reader, build the call context, run the handler the way the command does, and write
the response with sorted keys. ``call_parsed`` is the like-for-like variant used against the
peer: the payload is already parsed and the answer is left as a dict. ``WorkerTurn`` is what the
long-lived worker does with an engine frame (the agent loop of W5 only pays off there: the
command is one process per call, and library calls keep no state between calls).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anyio
import orjson

from context_manager import api
from context_manager.api import build_context, call_async
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.engine import protocol
from context_manager.handlers.context import HandlerContext
from context_manager.wire.codec import dumps_wire, loads

Summarizer = Callable[[str, str, Any], str]


def _anyio_run(function_id: str, payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    return anyio.run(call_async, function_id, payload, ctx)


# The command's way of driving a handler: the core's own runner once it has one.
run_handler: Callable[[str, Any, HandlerContext], dict[str, Any]] = getattr(api, "run_handler", _anyio_run)


def bench_config(**values: Any) -> WorkerConfig:
    """The configuration of the timed calls: the defaults, with the keys of ``BENCH_CONFIG`` (a
    JSON object, e.g. ``{"count_calibration": "usage"}``) and then ``values`` over them."""
    from context_manager.config.parse import parse_config_value

    extra = os.environ.get("BENCH_CONFIG")
    base = parse_config_value(orjson.loads(extra)) if extra else DEFAULT_CONFIG
    return replace(base, **values) if values else base


def make_config(**values: Any) -> WorkerConfig:
    return bench_config(**values)


def call_bytes(function_id: str, request: bytes, config: WorkerConfig = DEFAULT_CONFIG,
               summarizer: Summarizer | None = None) -> bytes:
    ctx = build_context(config, summarizer)
    payload = loads(request)
    result = run_handler(function_id, payload, ctx)
    return dumps_wire(result) + b"\n"


def call_parsed(function_id: str, payload: Any, config: WorkerConfig = DEFAULT_CONFIG,
                summarizer: Summarizer | None = None) -> dict[str, Any]:
    ctx = build_context(config, summarizer)
    return run_handler(function_id, payload, ctx)


class WorkerTurn:
    """One invocation as the worker serves it, without the socket: the engine's frame bytes are
    parsed with the worker's frame reader and answered by the worker's own functions through the
    engine client (``EngineClient.answer``), which returns the reply frame's bytes."""

    def __init__(self) -> None:
        from context_manager.engine.client import EngineClient
        from context_manager.engine.history_reader import frame_reader
        from context_manager.worker import ConfigurationSource, Worker

        self.client = EngineClient("ws://127.0.0.1:9", {}, reader=frame_reader())
        self.worker = Worker(self.client, ConfigurationSource(self.client, "context-manager"))
        self.loop = asyncio.new_event_loop()
        self.loop.run_until_complete(self.worker.register_functions())
        self.worker.services.config = bench_config()

    def summarize_with(self, summarizer: Summarizer) -> None:
        """The worker's summariser from now on (the engine's router is not there)."""
        from context_manager.adapters.callable_summarizer import CallableSummarizer

        self.worker.services.summarizer = CallableSummarizer(summarizer)

    def settle_jobs(self) -> int:
        """Run the background jobs the last call started (``compact_ahead_at``) to their end, then
        give the worker a fresh job runner, which remembers no settled job: the next call past
        the share starts its job again. Answers how many jobs there were."""
        from context_manager.adapters.job_runners import LoopJobRunner

        runner = self.worker.services.ahead_runner
        started = runner.running
        while runner.running:
            self.loop.run_until_complete(asyncio.sleep(0.001))
        self.worker.services.ahead_runner = LoopJobRunner()
        return started

    def publish(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Publish a policy version through the worker's own function (``context::policy::publish``)."""
        return self.loop.run_until_complete(call_async("context::policy::publish", payload,
                                                       self.worker.services.context()))

    @staticmethod
    def frame(function_id: str, request: bytes, invocation: int) -> bytes:
        """The engine's ``invokefunction`` frame around a request (built before any timing)."""
        head = orjson.dumps({"type": "invokefunction", "invocation_id": f"{invocation:036d}",
                             "function_id": function_id})
        return head[:-1] + b',"data":' + request + b"}"

    def __call__(self, frame: bytes) -> bytes:
        reply = self.loop.run_until_complete(self.client.answer(protocol.decode(frame, self.client.reader)))
        assert reply is not None
        return reply
