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
* ``drop``: the message's estimate and 0 (the first one of a drop that left a ``working_set``
  note: the note's estimate); the entries count ``dropped_messages``;
* ``retention``: one entry per rewrite the policy accepted (a message may take several: each
  cut call or result, its prose, its reasoning, its images), with ``code``, the warning it is
  charged to, and ``function_id`` for a ``truncated`` one: the message's estimate before and
  after that rewrite. Per warning (``code``, and ``function_id`` or ``role``), the drops floored
  at 0 sum to its ``tokens_freed`` and, for ``truncated`` and ``text_truncated``, the entries
  number its ``count``; ``media_dropped`` has no ``tokens_freed``: its entries' drops are the
  tokens its placeholders freed, in no total.

With a calibration (``count_calibration: usage``, ``estimator: router``) the totals are in
provider units, and so are the entries (``calibrated``): each total's calibrated amount is
shared over its entries' drops by largest remainders, so they still sum to it exactly; the
retention entries stay in estimator units, as its warnings do.

Entries come in request order; changes to one message keep the order the passes ran in.
Built only when asked, from what the passes already return, so an unexplained call pays nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from context_manager.core.counting.calibration import Calibration
from context_manager.core.passes.cap import CapChange
from context_manager.core.passes.emergency import EmergencyChange
from context_manager.core.passes.prune import Candidate
from context_manager.core.passes.retention import RetentionChange

Pass = Literal["retention", "cap", "prune", "emergency", "compact", "drop"]
Action = dict[str, Any]


def action(pass_name: Pass, index: int, function_id: str | None, before: int, after: int,
           code: str | None = None) -> Action:
    entry: Action = {"pass": pass_name, "index": index}
    if code is not None:
        entry["code"] = code
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

    def retention(self, changes: Sequence[RetentionChange], to_orig: Sequence[int]) -> None:
        for index, code, function_id, before, after in changes:
            self._entries.append(action("retention", to_orig[index], function_id, before, after, code))

    def calibrate(self, calibration: Calibration) -> None:
        """Entries into provider units, each total's calibrated amount shared over its drops."""
        for passes in (("cap",), ("prune", "emergency")):
            group = [entry for entry in self._entries if entry["pass"] in passes]
            drops = calibration.apportion_amount([e["tokens_before"] - e["tokens_after"] for e in group])
            for entry, drop in zip(group, drops):
                entry["tokens_after"] = calibration.amount(entry["tokens_after"])
                entry["tokens_before"] = entry["tokens_after"] + drop
        for entry in self._entries:
            if entry["pass"] in ("compact", "drop"):
                entry["tokens_before"] = calibration.amount(entry["tokens_before"])
                entry["tokens_after"] = calibration.amount(entry["tokens_after"])

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

    def drop(self, dropped: Sequence[tuple[int, int]], note: int = 0) -> None:
        """``dropped``: (request index, estimate) of every message dropped; ``note``: the size of
        the ``working_set`` note that stands where the first of them was."""
        for k, (index, size) in enumerate(dropped):
            self._entries.append(action("drop", index, None, size, note if k == 0 else 0))

    def actions(self) -> list[Action]:
        # A stable sort: a message's own entries stay in pass order.
        return sorted(self._entries, key=lambda entry: entry["index"])
