"""The model-budget cache (spec 01 §8.3) and its timeline W26."""

from __future__ import annotations

import asyncio

import pytest

from context_manager.adapters.model_cache import HIT_TTL_MS, NEGATIVE_TTL_MS, CachingModelResolver
from context_manager.ports import ManualClock, ModelBudget, ResolverError, RouterModel

KNOWN = ModelBudget(RouterModel(id="m", context_window=100000, max_output_tokens=8000), 8000)


class CountingResolver:
    def __init__(self, answer=KNOWN, error: str | None = None) -> None:
        self.answer = answer
        self.error = error
        self.calls: list[tuple[str | None, str]] = []

    async def get_model_budget(self, provider, model_id):
        self.calls.append((provider, model_id))
        if self.error is not None:
            raise ResolverError(self.error)
        return self.answer


def ask(cache, provider="p", model_id="m"):
    return asyncio.run(cache.get_model_budget(provider, model_id))


def harness(**kwargs):
    inner = CountingResolver(**kwargs)
    clock = ManualClock()
    return inner, clock, CachingModelResolver(inner, clock)


def test_ttl_constants():
    assert (HIT_TTL_MS, NEGATIVE_TTL_MS) == (60000, 5000)


def test_w26_known_budget_timeline():
    inner, clock, cache = harness()
    assert ask(cache) is KNOWN  # t=0 miss
    clock.now = 60000
    assert ask(cache) is KNOWN  # inclusive edge: hit
    assert len(inner.calls) == 1
    clock.now = 60001
    assert ask(cache) is KNOWN  # stale: router again
    assert len(inner.calls) == 2


def test_w26_unknown_model_timeline():
    inner, clock, cache = harness(answer=None)
    assert ask(cache) is None
    clock.now = 5000
    assert ask(cache) is None
    assert len(inner.calls) == 1
    clock.now = 5001
    assert ask(cache) is None
    assert len(inner.calls) == 2


def test_w26_errors_are_never_cached():
    inner, _clock, cache = harness(error="router unreachable")
    for _ in range(3):
        with pytest.raises(ResolverError, match="router unreachable"):
            ask(cache)
    assert len(inner.calls) == 3
    assert len(cache) == 0


def test_w26_keys_are_provider_and_id():
    inner, _clock, cache = harness()
    ask(cache, "p", "m")
    ask(cache, "q", "m")
    ask(cache, None, "m")
    ask(cache, "", "m")
    ask(cache, "p", "m")
    ask(cache, None, "m")
    assert inner.calls == [("p", "m"), ("q", "m"), (None, "m"), ("", "m")]


def test_w26_flush_forces_a_new_query():
    inner, _clock, cache = harness()
    ask(cache, "p", "m")
    ask(cache, "q", "m")
    cache.flush()
    assert len(cache) == 0
    ask(cache, "p", "m")
    assert len(inner.calls) == 3


def test_error_keeps_a_stale_entry():
    inner, clock, cache = harness()
    ask(cache)
    clock.now = 70000
    inner.error = "down"
    with pytest.raises(ResolverError):
        ask(cache)
    assert len(cache) == 1
    # The router recovers: the stale entry is replaced with a fresh timestamp.
    inner.error = None
    clock.now = 80000
    ask(cache)
    clock.now = 140000
    ask(cache)
    assert len(inner.calls) == 3


def test_stored_at_is_read_after_the_router_answers():
    clock = ManualClock()

    class SlowResolver:
        async def get_model_budget(self, provider, model_id):
            clock.advance(1000)  # the call itself takes a second
            return KNOWN

    cache = CachingModelResolver(SlowResolver(), clock)
    ask(cache)  # stored at 1000
    clock.now = 61000
    calls_before = clock.now
    assert ask(cache) is KNOWN
    assert clock.now == calls_before  # served from the cache, no router call


def test_clock_running_backwards_reads_as_fresh():
    inner, clock, cache = harness()
    clock.now = 100000
    ask(cache)
    clock.now = 0
    ask(cache)
    assert len(inner.calls) == 1


def test_known_to_unknown_transition_uses_the_new_ttl():
    inner, clock, cache = harness()
    ask(cache)
    clock.now = 60001
    inner.answer = None
    assert ask(cache) is None
    clock.now = 65001
    assert ask(cache) is None
    assert len(inner.calls) == 2
    clock.now = 65002
    ask(cache)
    assert len(inner.calls) == 3
