"""Fixtures shared by the engine-facing test modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testengine import TestEngine


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def engine() -> Iterator[TestEngine]:
    """A running in-process test engine, stopped after the test."""
    engine = TestEngine().start()
    yield engine
    engine.stop()


@pytest.fixture(scope="session")
def _compose_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("compose"))


@pytest.fixture(autouse=True)
def _lease_files_outside_the_tree(_compose_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative ``lease_dir`` (the default ``data/context-manager`` included) resolves against
    ``III_COMPOSE_DIR`` when it is set: point it at a temporary folder so no test writes lease
    files into the working tree. Tests of the resolution rules set or delete it themselves."""
    monkeypatch.setenv("III_COMPOSE_DIR", _compose_dir)
