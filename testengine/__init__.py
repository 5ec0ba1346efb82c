"""An in-process iii engine, a fake llm-router and worker-process helpers for end-to-end tests."""

from .configuration import ConfigurationStore
from .engine import CallFailed, TestEngine
from .fake_router import FakeRouter, assistant, stream_for
from .process import WorkerProcess
from .waiting import eventually

__all__ = [
    "CallFailed",
    "ConfigurationStore",
    "FakeRouter",
    "TestEngine",
    "WorkerProcess",
    "assistant",
    "eventually",
    "stream_for",
]
