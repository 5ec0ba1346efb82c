"""Real processes sharing one lease_dir: one summarisation per key, and crash recovery by TTL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # racing interpreters and lease TTLs that must run out

# One `context::compact` call in its own interpreter. The summariser appends a line to a shared
# file for every call, so the test can count calls across processes.
WORKER = r"""
import asyncio, json, os, sys, time
from dataclasses import replace

from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.ports import SummarizeRequest
from context_manager.handlers.compact import handle
from context_manager.handlers.context import HandlerContext
from context_manager.adapters.fs_lease_store import FsLeaseStore
from context_manager.ports import SystemClock

lease_dir, calls_file, start_at, delay, ttl = sys.argv[1:6]


class CountingSummarizer:
    async def summarize(self, request: SummarizeRequest) -> str:
        with open(calls_file, "a") as calls:
            calls.write(f"{os.getpid()}\n")
        await asyncio.sleep(float(delay))
        return "## Goal\n- one summary"


def message(role, text, ts):
    if role == "user":
        return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "stop_reason": "end",
            "model": "test-model", "provider": "test", "timestamp": ts}


payload = {
    "messages": [message("user", "x" * 36000, 1), message("assistant", "r1", 2),
                 message("user", "q2", 3), message("assistant", "r2", 4),
                 message("user", "q3", 5), message("assistant", "r3", 6)],
    "model": {"id": "big", "limits": {"context_window": 200000, "max_output_tokens": 8000}},
}
ctx = HandlerContext(config=replace(DEFAULT_CONFIG, lease_ttl_secs=int(ttl)),
                     summarizer=CountingSummarizer(), lease_store=FsLeaseStore(lease_dir),
                     clock=SystemClock())
while time.time() < float(start_at):
    pass  # spin, so both processes leave the gate within microseconds of each other
print(json.dumps(asyncio.run(handle(payload, ctx))), flush=True)
"""


def spawn(lease_dir: Path, calls: Path, start_at: float, delay: float, ttl: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(lease_dir), str(calls), str(start_at), str(delay), str(ttl)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def finish(process: subprocess.Popen) -> str:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return json.loads(out)["status"]


def call_count(calls: Path) -> int:
    return len(calls.read_text().splitlines()) if calls.exists() else 0


@pytest.mark.parametrize("racers", [2, 4])
def test_racing_processes_make_exactly_one_summariser_call(tmp_path, racers):
    calls = tmp_path / "calls"
    start_at = time.time() + 3.0  # after every interpreter has imported the package
    processes = [spawn(tmp_path / "leases", calls, start_at, 4.0, 300) for _ in range(racers)]
    statuses = sorted(finish(p) for p in processes)
    assert statuses == ["busy"] * (racers - 1) + ["ok"]
    assert call_count(calls) == 1
    assert [p.name for p in (tmp_path / "leases" / "context_lease").iterdir()] == [".lock"]


def test_a_killed_holders_lease_expires_after_its_ttl(tmp_path):
    lease_dir, calls, ttl = tmp_path / "leases", tmp_path / "calls", 3
    holder = spawn(lease_dir, calls, 0, 600, ttl)  # hangs inside the summariser
    deadline = time.time() + 30
    while call_count(calls) == 0:
        assert time.time() < deadline and holder.poll() is None
        time.sleep(0.05)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=10)

    (claim_file,) = [p for p in (lease_dir / "context_lease").iterdir() if p.suffix == ".json"]
    claim = json.loads(claim_file.read_text())
    assert claim["nonce"].startswith(f"{holder.pid}-")

    # Within the TTL the dead holder's claim is honoured.
    assert finish(spawn(lease_dir, calls, 0, 0, ttl)) == "busy"
    assert call_count(calls) == 1

    # Once it is ttl old it is taken over, and the new holder cleans up after itself.
    while time.time() * 1000 < claim["ts"] + ttl * 1000 + 50:
        time.sleep(0.05)
    assert finish(spawn(lease_dir, calls, 0, 0, ttl)) == "ok"
    assert call_count(calls) == 2
    assert not claim_file.exists()
