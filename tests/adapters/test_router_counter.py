"""``RouterTokenCounter``: the request it sends, its cache, and the clean fallback paths."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anyio
import pytest

from context_manager.adapters.router_counter import FUNCTION, RouterTokenCounter
from context_manager.ports import InvokeError

MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}]


class Router:
    def __init__(self, reply: Any = None, error: str | None = None, delay_s: float = 0.0) -> None:
        self.reply, self.error, self.delay_s = reply, error, delay_s
        self.calls: list[tuple[str, dict[str, Any], int]] = []

    async def __call__(self, function_id: str, payload: dict[str, Any], timeout_ms: int) -> Any:
        self.calls.append((function_id, payload, timeout_ms))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.error is not None:
            raise InvokeError(self.error)
        return self.reply


def count(counter: RouterTokenCounter, **kw: Any) -> int | None:
    args = {"model_id": "m", "system_prompt": "sys", "tools": None, "messages": MESSAGES, **kw}
    return anyio.run(lambda: counter.count(**args))


def test_the_request_follows_the_contract_and_answers_are_cached():
    router = Router({"tokens": 42, "estimator": "tokenizer", "model": "m"})
    counter = RouterTokenCounter(router, logging.getLogger("t"))
    assert count(counter) == 42
    assert router.calls == [(FUNCTION, {"model": "m", "messages": MESSAGES, "system_prompt": "sys"}, 2000)]
    assert count(counter) == 42 and len(router.calls) == 1  # unchanged content: never re-counted
    assert count(counter, model_id="other") == 42 and len(router.calls) == 2
    assert counter.calls == 2


@pytest.mark.parametrize("router,reason", [
    (Router(error="remote error (function_not_found): router::count_tokens"), "function_not_found"),
    (Router(error="remote error (router/provider_error): boom"), "boom"),
    (Router({"tokens": -1}), "invalid value"),
    (Router({"nope": 1}), "missing field `tokens`"),
])
def test_failures_give_none_and_one_warning(router, reason, caplog):
    counter = RouterTokenCounter(router, logging.getLogger("t"))
    with caplog.at_level(logging.WARNING, logger="t"):
        assert count(counter) is None
    assert len(caplog.records) == 1
    assert caplog.records[0].getMessage().startswith("router::count_tokens unavailable for m, counting locally: ")
    assert reason in caplog.records[0].getMessage()


def test_a_slow_router_times_out(caplog):
    counter = RouterTokenCounter(Router({"tokens": 1}, delay_s=1.0), logging.getLogger("t"), timeout_ms=50)
    with caplog.at_level(logging.WARNING, logger="t"):
        assert count(counter) is None
    assert [r.getMessage() for r in caplog.records] == [
        "router::count_tokens unavailable for m, counting locally: timed out"]
