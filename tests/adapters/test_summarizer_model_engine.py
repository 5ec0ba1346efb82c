"""``summarizer_model`` and ``compaction_instructions`` through the in-process test engine: every
summariser call of a compaction goes to the summariser's model over `router::chat`, chunked by
that model's window, each prompt carries the standing instructions, and the cost is reported
(from the router's usage) and counted in the OpenTelemetry metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from context_manager.core.compaction.prompts import INSTRUCTIONS_CLOSE, INSTRUCTIONS_OPEN
from context_manager.core.compaction.summarize import request_tokens
from context_manager.core.counting.estimate import HEURISTIC
from testengine import TestEngine
from testengine.fake_router import FakeRouter
from tests.adapters.test_telemetry import Recorded, _compacting_request, _invoke_with_trace, booted

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

STANDING = "Keep every file path."
USAGE = {"input": 2000, "output": 40, "cache_read": 100, "cache_write": 0}


def budget(model_id: str, window: int, output: int) -> dict[str, Any]:
    return {"model": {"id": model_id, "provider": "fake", "context_window": window, "max_output_tokens": output},
            "effective_max_output_tokens": output}


@pytest.fixture(autouse=True)
def compose_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("III_COMPOSE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def router() -> FakeRouter:
    # The session's model m (usable 9800) and the summariser's, cheap (usable 3000 - 300 - 300 = 2400).
    return FakeRouter(summary="SUMMARY", chat_usage=USAGE,
                      budgets={"m": budget("m", 12000, 1000), "cheap": budget("cheap", 3000, 300)})


@pytest.fixture
def engine(router: FakeRouter) -> Any:
    engine = TestEngine(router=router).start()
    router.engine_url = engine.url
    yield engine
    engine.stop()


async def test_every_summariser_call_goes_to_the_summariser_model(engine: TestEngine, router: FakeRouter) -> None:
    recorded = Recorded()
    with anyio.fail_after(30):
        async with booted(engine, recorded) as worker:
            engine.configuration.store_unchecked("context-manager", {
                "summarizer_model": {"id": "cheap", "provider": "fake"},
                "compaction_instructions": STANDING})
            await worker.reload()
            reply = await _invoke_with_trace(engine, _compacting_request())
    applied = reply["result"]["applied"]
    assert applied["compacted"] is True and applied["summary"] == "SUMMARY"
    chats = router.chat_calls
    assert len(chats) == 2
    assert {(chat["model"], chat["provider"]) for chat in chats} == {("cheap", "fake")}
    # Chunked by cheap's window: every request fits 2400 tokens; one at the session's 9800 would
    # have taken the whole head.
    sizes = [request_tokens(HEURISTIC, chat["system_prompt"], chat["messages"][0]["content"][0]["text"])
             for chat in chats]
    assert max(sizes) <= 2400 < sum(sizes)
    assert all(f"{INSTRUCTIONS_OPEN}{STANDING}{INSTRUCTIONS_CLOSE}" in chat["system_prompt"] for chat in chats)
    assert applied["summarizer"] == {"model": "cheap", "calls": 2, "input_tokens": 2 * 2100, "output_tokens": 2 * 40}

    points = recorded.points()
    assert [(labels, p.value) for labels, p in points["context_manager.summarizer.calls"]] == [
        ({"model": "cheap"}, 2)]
    assert sorted((labels["direction"], p.value) for labels, p in points["context_manager.summarizer.tokens"]) == [
        ("input", 4200), ("output", 80)]


async def test_without_the_keys_the_session_model_summarises_unreported(engine: TestEngine, router: FakeRouter) -> None:
    recorded = Recorded()
    with anyio.fail_after(30):
        async with booted(engine, recorded):
            reply = await _invoke_with_trace(engine, _compacting_request())
    applied = reply["result"]["applied"]
    assert applied["compacted"] is True and "summarizer" not in applied
    assert [chat["model"] for chat in router.chat_calls] == ["m"]
    assert INSTRUCTIONS_OPEN not in router.chat_calls[0]["system_prompt"]
    assert "context_manager.summarizer.calls" not in recorded.points()
