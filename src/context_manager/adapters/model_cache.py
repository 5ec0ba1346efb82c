"""TTL cache in front of the model resolver (spec 01 §8.3).

Known budgets stay fresh for a minute, unknown models for five seconds, errors are never stored
(an absent router must not linger once it comes up). ``flush`` empties everything; it is bound to
``router::models::changed``.
"""

from __future__ import annotations

from dataclasses import dataclass

from context_manager.ports import Clock, ModelBudget, ModelResolver

HIT_TTL_MS = 60000
NEGATIVE_TTL_MS = 5000

CacheKey = tuple[str | None, str]


@dataclass(frozen=True, slots=True)
class _Entry:
    budget: ModelBudget | None
    stored_at_ms: int


class CachingModelResolver:
    """A ``ModelResolver`` decorator keyed by (provider as given, model id).

    An absent provider and ``""`` are different keys. Concurrent misses may both reach the
    router; the later answer simply replaces the earlier one.
    """

    def __init__(self, inner: ModelResolver, clock: Clock) -> None:
        self._inner = inner
        self._clock = clock
        self._entries: dict[CacheKey, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def flush(self) -> None:
        self._entries.clear()

    def _fresh(self, key: CacheKey) -> _Entry | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        ttl = HIT_TTL_MS if entry.budget is not None else NEGATIVE_TTL_MS
        # Inclusive bound; a clock that ran backwards gives a negative age, which reads as fresh.
        return entry if self._clock.now_ms() - entry.stored_at_ms <= ttl else None

    async def get_model_budget(self, provider: str | None, model_id: str) -> ModelBudget | None:
        key = (provider, model_id)
        entry = self._fresh(key)
        if entry is not None:
            return entry.budget
        # A ResolverError propagates and leaves any stale entry in place.
        budget = await self._inner.get_model_budget(provider, model_id)
        self._entries[key] = _Entry(budget, self._clock.now_ms())
        return budget
