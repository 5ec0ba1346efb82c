"""Fixtures shared by the engine-facing test modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engine_harness import TestEngine


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def engine() -> Iterator[TestEngine]:
    """A running in-process test engine, stopped after the test."""
    engine = TestEngine().start()
    yield engine
    engine.stop()
