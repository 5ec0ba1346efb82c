"""Every property test is slow: thousands of generated cases each. The suites that tally their
outcomes write them to the reliability figures, each under its own key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.support import record_outcomes

HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="module", autouse=True)
def figures(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a suite that tallies its outcomes (``OUTCOMES``), record them in the reliability
    figures under the suite's own key (``FIGURES_KEY``); a suite without a key records nothing."""
    yield
    key = getattr(request.module, "FIGURES_KEY", None)
    if key is not None:
        record_outcomes(key, request.module.OUTCOMES)
