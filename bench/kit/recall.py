"""Long-range future-entity recall at one call, and its sum over a replay.

Definitions (the entity patterns and texts are in :mod:`bench.kit.entities`):

* A call is made before recorded message ``index`` (an assistant message). It is a *pressure
  call* when the raw history — the system prompt and every recorded message before ``index``,
  as a harness that never reduces sends it — does not fit: replayed so (``RAW_MODE``: no
  summariser, the round trip not persisted), the worker's answer reports an
  ``applied.initial_token_count`` (the request counted before any reduction) above its
  ``usable``, or the call fails with ``context/overflow``. The pressure calls are the same for
  every mode, so are the needs. In a measured mode, a pressure call that fails with
  ``context/overflow`` returns no context: it keeps nothing.
* Its *future entities*: the entities the recorded messages
  ``index .. index + HORIZON - 1`` mention (:data:`HORIZON` = 10 messages of any role).
* Its *long-range needs*: the future entities that are in the ``full_text`` of a recorded
  message before ``index - WINDOW`` (:data:`WINDOW` = 20), in none of the ``WINDOW`` messages
  just before ``index``, and not in the recording's system prompt (every context carries it).
* *Kept*: the needs that are in the returned context's ``context_text``.

Recall = kept / needs, summed over the pressure calls (not averaged per call).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.kit.entities import context_text, full_text, mentions, normalize_text
from bench.kit.loop import Call, round_trip
from bench.kit.modes import BUDGETS, MAX_OUTPUT_TOKENS, Mode
from bench.kit.sessions import Session

HORIZON = 10
WINDOW = 20


@dataclass(frozen=True)
class CallRecall:
    needs: tuple[str, ...]  # long-range needs, sorted
    kept: tuple[str, ...]  # those the returned context holds, sorted

    @property
    def missing(self) -> tuple[str, ...]:
        kept = set(self.kept)
        return tuple(e for e in self.needs if e not in kept)


class SessionIndex:
    """One recording's texts, normalised once, so that every call's needs are cheap to find."""

    def __init__(self, system_prompt: str | None, messages: Sequence[dict[str, Any]],
                 horizon: int = HORIZON, window: int = WINDOW) -> None:
        self.messages = messages
        self.horizon = horizon
        self.window = window
        self.system = normalize_text(system_prompt or "")
        texts = [normalize_text(full_text(m)) for m in messages]
        # Message i's normalised text starts at starts[i] of one "\n"-joined haystack (no entity
        # holds a newline, so no match spans two messages).
        self.starts: list[int] = []
        position = 0
        for text in texts:
            self.starts.append(position)
            position += len(text) + 1
        self.starts.append(position)
        self.haystack = "\n".join(texts) + "\n"
        self._mentions: dict[int, frozenset[str]] = {}

    def mentions(self, index: int) -> frozenset[str]:
        """The entities recorded message ``index`` mentions."""
        if index not in self._mentions:
            self._mentions[index] = frozenset(mentions(self.messages[index]))
        return self._mentions[index]

    def future_entities(self, index: int) -> set[str]:
        """Entities the ``horizon`` recorded messages from ``index`` on mention."""
        found: set[str] = set()
        for i in range(index, min(index + self.horizon, len(self.messages))):
            found |= self.mentions(i)
        return found

    def needs(self, index: int) -> list[str]:
        """The long-range needs of a call made before recorded message ``index``, sorted."""
        recent = max(0, index - self.window)
        early_end, recent_end = self.starts[recent], self.starts[index]
        return sorted(entity for entity in self.future_entities(index)
                      if self.haystack.find(entity, 0, early_end) >= 0
                      and self.haystack.find(entity, early_end, recent_end) < 0
                      and entity not in self.system)

    def first_seen(self, entity: str) -> int | None:
        """The first recorded message holding ``entity`` (a diagnostic)."""
        at = self.haystack.find(entity)
        return None if at < 0 else bisect_right(self.starts, at) - 1


def future_entities(messages: Sequence[dict[str, Any]], at: int, horizon: int = HORIZON) -> set[str]:
    """The entities the ``horizon`` recorded messages from ``at`` on mention (one-off use; a
    :class:`SessionIndex` serves many calls of one recording)."""
    return SessionIndex(None, messages, horizon).future_entities(at)


def long_range_needs(system_prompt: str | None, messages: Sequence[dict[str, Any]], at: int,
                     horizon: int = HORIZON, window: int = WINDOW) -> list[str]:
    """The long-range needs of a call made before recorded message ``at`` (one-off use)."""
    return SessionIndex(system_prompt, messages, horizon, window).needs(at)


def recall_at_call(index: SessionIndex, at: int, returned_system_prompt: str | None,
                   returned_messages: Sequence[dict[str, Any]] | None) -> CallRecall:
    """Needs and kept needs of the call before recorded message ``at``; ``None`` messages: the
    call returned nothing (an overflow)."""
    needs = index.needs(at)
    if returned_messages is None:
        return CallRecall(tuple(needs), ())
    returned = normalize_text(context_text(returned_system_prompt, returned_messages))
    return CallRecall(tuple(needs), tuple(e for e in needs if e in returned))


@dataclass
class Recall:
    """Recall summed over the pressure calls of one or more replays."""

    pressure_calls: int = 0
    needs: int = 0
    kept: int = 0
    missing: Counter[str] = field(default_factory=Counter)

    def add(self, call: CallRecall) -> None:
        self.pressure_calls += 1
        self.needs += len(call.needs)
        self.kept += len(call.kept)
        self.missing.update(call.missing)

    def merge(self, other: Recall) -> None:
        self.pressure_calls += other.pressure_calls
        self.needs += other.needs
        self.kept += other.kept
        self.missing.update(other.missing)

    @property
    def share(self) -> float | None:
        return self.kept / self.needs if self.needs else None


RAW_MODE = Mode("raw", False, {}, persist=False)


def is_pressure(response: dict[str, Any] | None) -> bool:
    """Did the history sent exceed ``usable`` (an overflow counts)?"""
    if response is None:
        return True
    return int(response["applied"]["initial_token_count"]) > int(response["usable"])


def pressure_calls(session: Session, budget: str, max_output_tokens: int = MAX_OUTPUT_TOKENS,
                   model_id: str = "replay-model", max_history_tokens: int | None = None) -> frozenset[int]:
    """The recorded indexes before which the raw history exceeds ``usable`` (see above); with
    ``max_history_tokens``, the history budget ``min(usable, max_history_tokens)``."""
    raw = RAW_MODE if max_history_tokens is None else Mode(
        "raw", False, {"max_history_tokens": max_history_tokens}, persist=False)
    found: list[int] = []

    def observe(_session: Session, call: Call) -> None:
        if is_pressure(call.response):
            found.append(call.index)

    round_trip(session, raw, BUDGETS[budget], model_id=model_id, max_output_tokens=max_output_tokens,
               observer=observe)
    return frozenset(found)


class RecallObserver:
    """A replay observer (``bench.kit.loop.Observer``): adds the recall of every call made
    before an index of ``pressure[session.name]``."""

    def __init__(self, pressure: Mapping[str, Collection[int]], horizon: int = HORIZON,
                 window: int = WINDOW) -> None:
        self.pressure = pressure
        self.horizon = horizon
        self.window = window
        self.recall = Recall()
        self._indexes: dict[int, SessionIndex] = {}

    def index_for(self, system_prompt: str | None, messages: Sequence[dict[str, Any]]) -> SessionIndex:
        key = id(messages)
        found = self._indexes.get(key)
        if found is None or found.messages is not messages:
            found = SessionIndex(system_prompt, messages, self.horizon, self.window)
            self._indexes = {key: found}  # one session at a time: keep only the latest
        return found

    def __call__(self, session: Session, call: Call) -> None:
        if call.index not in self.pressure.get(session.name, ()):
            return
        index = self.index_for(session.system_prompt, session.messages)
        response = call.response
        if response is None:
            self.recall.add(recall_at_call(index, call.index, None, None))
        else:
            self.recall.add(recall_at_call(index, call.index, response["system_prompt"],
                                           response["messages"]))
