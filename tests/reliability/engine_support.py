"""A worker subprocess attached to the in-process test engine, and what the reliability tests
read from it: raw invocations, resident memory, health."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testengine import FakeRouter, TestEngine, WorkerProcess

PUBLIC = {"context::assemble", "context::compact", "context::prune", "context::count-tokens"}
SEVEN = PUBLIC | {"context::on-models-changed", "context::on-config-change",
                  "context-manager::ui-content"}
# Registered after those seven.
POLICY = {"context::policy::publish", "context::policy::list", "context::policy::activate",
          "context::policy::withdraw", "context::policy::resolve", "context::policy::scopes"}
HELLO = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}],
         "model": {"id": "m1", "limits": {"context_window": 1000, "max_output_tokens": 100}}}


# glibc raises its mmap threshold after freeing a large block, so later 50 MB strings land on
# the heap and their pages linger after being freed. A fixed threshold keeps every large block
# mapped and returned at once: resident memory then measures what is still referenced.
FIXED_MMAP_THRESHOLD = {"MALLOC_MMAP_THRESHOLD_": "131072"}


def routed_budgets() -> dict[str, Any]:
    return {"routed-model": {
        "model": {"id": "routed-model", "provider": "fake", "context_window": 2000,
                  "max_output_tokens": 200},
        "effective_max_output_tokens": 200}}


def _wait_for_start(engine: TestEngine, process: WorkerProcess, timeout: float) -> None:
    """Until the worker serves all its functions; its stderr as soon as it exits instead."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            engine.wait_for_functions(SEVEN | POLICY, timeout=0.5)
            return
        except TimeoutError:
            if process.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(process.stderr) from None


@contextmanager
def worker_on_engine(tmp_path: Path, *, router: FakeRouter | None = None,
                     env: dict[str, str] | None = None, args: tuple[str, ...] = (),
                     wait: bool = True) -> Iterator[tuple[TestEngine, WorkerProcess]]:
    engine = TestEngine(router=router or FakeRouter(budgets=routed_budgets())).start()
    process = WorkerProcess(engine.url, *args, env={"III_COMPOSE_DIR": str(tmp_path), "LOG_LEVEL": "warn",
                                             **(env or {})}, cwd=tmp_path)
    try:
        if wait:
            _wait_for_start(engine, process, timeout=30)
        yield engine, process
    finally:
        process.kill()
        engine.stop()


def invoke_raw(engine: TestEngine, function_id: str, body: str, timeout: float = 60) -> dict[str, Any]:
    """Send ``body`` as the `data` of an invocation, byte for byte; the reply body."""
    invocation_id = str(uuid.uuid4())
    frame = ('{"type":"invokefunction","invocation_id":' + json.dumps(invocation_id)
             + ',"function_id":' + json.dumps(function_id) + ',"data":' + body + "}")
    return engine.call_raw(function_id, frame, invocation_id, timeout)


def send_frame(engine: TestEngine, function_id: str, text: str) -> None:
    """A frame the worker must survive (no reply is expected)."""
    engine.send_to(function_id, text)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("VmRSS not found")


def tree_rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` plus every descendant (a worker running child processes)."""
    total, order = rss_kib(pid), [pid]
    while order:
        member = order.pop()
        try:
            children = [int(c) for task in Path(f"/proc/{member}/task").iterdir()
                        for c in (task / "children").read_text().split()]
            total += sum(rss_kib(child) for child in children)
        except (OSError, RuntimeError):  # a child that has just exited holds no memory
            continue
        order.extend(children)
    return total


def healthy(engine: TestEngine) -> bool:
    return engine.call("context::count-tokens", HELLO, timeout=10)["tokens"] == 17


