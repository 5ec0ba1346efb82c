"""``options.explain``: one entry per change a call made, for ``applied.actions``.

An entry is ``{"pass", "index", "function_id"?, "tokens_before", "tokens_after"}``; ``index`` is
the request index of the message changed (for ``compact``, of the first message summarised).
What each pair measures is what its pass adds to its reported total, so the entries add up to
those totals exactly:

* ``cap``: the message's estimate before and after; the drops sum to ``capped_tokens`` and the
  entries are one per rewritten message (a message may hold several capped results);
* ``prune``: the output's result tokens and its placeholder's (``tokens - saving``); the drops
  sum to prune's ``pruned_tokens`` (assemble: together with the emergency entries);
* ``emergency``: the host message's estimate before and after one reference replaced a result;
* ``compact``: the summarised head's tokens (``applied.tokens_before``) and the summary's own
  estimate;
* ``drop``: the message's estimate and 0; the entries count ``dropped_messages``.

Entries come in request order; changes to one message keep the order the passes ran in.
Built only when asked, from what the passes already return, so an unexplained call pays nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from context_manager.core.passes.cap import CapChange
from context_manager.core.passes.emergency import EmergencyChange
from context_manager.core.passes.prune import Candidate

Pass = Literal["cap", "prune", "emergency", "compact", "drop"]
Action = dict[str, Any]


def action(pass_name: Pass, index: int, function_id: str | None, before: int, after: int) -> Action:
    entry: Action = {"pass": pass_name, "index": index}
    if function_id is not None:
        entry["function_id"] = function_id
    entry["tokens_before"] = before
    entry["tokens_after"] = after
    return entry


class Explanation:
    """The actions of one call, gathered pass by pass; ``to_orig`` maps view to request index."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: list[Action] = []

    def cap(self, changes: Sequence[CapChange], to_orig: Sequence[int]) -> None:
        for index, before, after, function_id in changes:
            self._entries.append(action("cap", to_orig[index], function_id, before, after))

    def prune(self, replaced: Sequence[Candidate], to_orig: Sequence[int] | None = None) -> None:
        # Replacement order is newest first; the final sort restores request order.
        for candidate in replaced:
            location = candidate.location
            index = location if isinstance(location, int) else location[0]
            self._entries.append(action(
                "prune", to_orig[index] if to_orig is not None else index, candidate.function_id,
                candidate.tokens, candidate.tokens - candidate.saving,
            ))

    def emergency(self, changes: Sequence[EmergencyChange], to_orig: Sequence[int]) -> None:
        for index, function_id, before, after in changes:
            self._entries.append(action("emergency", to_orig[index], function_id, before, after))

    def compact(self, first_index: int, head_tokens: int, summary_tokens: int) -> None:
        self._entries.append(action("compact", first_index, None, head_tokens, summary_tokens))

    def drop(self, dropped: Sequence[tuple[int, int]]) -> None:
        """``dropped``: (request index, estimate) of every message dropped."""
        for index, size in dropped:
            self._entries.append(action("drop", index, None, size, 0))

    def actions(self) -> list[Action]:
        # A stable sort: a message's own entries stay in pass order.
        return sorted(self._entries, key=lambda entry: entry["index"])
