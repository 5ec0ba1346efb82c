"""The worker modes the replayed suites run (``bench.replay``, ``bench.recall``, ``bench.counting``):
a name, whether a summariser is bound, the worker configuration, and how the caller drives the
round trip (``bench.kit.loop.round_trip``). Budgets are context windows with
:data:`MAX_OUTPUT_TOKENS` output tokens unless a suite says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_OUTPUT_TOKENS = 4000
BUDGETS = {"16k": 16_000, "32k": 32_000, "64k": 64_000, "128k": 128_000}
DEFAULT_BUDGETS = ("32k", "64k", "128k")


@dataclass(frozen=True)
class Mode:
    name: str
    summarizer: bool
    config: dict[str, Any]
    persist: bool = True  # does the harness keep the round trip (summary and tail start)?
    tail_only: bool = False  # after a compaction, only the tail (no anchor re-sent), lease_key set


MODES = (
    Mode("summariser", True, {}),
    Mode("none", False, {}),
    Mode("none+drop_oldest", False, {"overflow_fallback": "drop_oldest"}),
    Mode("original", True, {"user_less_compaction": False}),
    # Task retention: anchor, retention check, extractive fallback.
    Mode("summariser+anchor", True, {"anchor_messages": 1}),
    Mode("summariser+check", True, {"summary_check": "append"}),
    Mode("summariser+anchor+check", True, {"anchor_messages": 1, "summary_check": "append"}),
    Mode("none+extractive", False, {"summarizer_fallback": "extractive"}),
    Mode("none+extractive+anchor", False, {"summarizer_fallback": "extractive", "anchor_messages": 1}),
    Mode("none+drop_oldest+anchor", False, {"overflow_fallback": "drop_oldest", "anchor_messages": 1}),
    # The agent harness's round trip: the tail alone after a compaction.
    Mode("harness", True, {}, tail_only=True),
    Mode("harness+anchor", True, {"anchor_messages": 1}, tail_only=True),
    Mode("harness+check", True, {"summary_check": "append"}, tail_only=True),
    Mode("harness+anchor+check", True, {"anchor_messages": 1, "summary_check": "append"},
         tail_only=True),
    Mode("harness-none+extractive+anchor", False,
         {"summarizer_fallback": "extractive", "anchor_messages": 1}, tail_only=True),
    Mode("harness+anchor+message", True, {"anchor_messages": 1, "summary_placement": "message"},
         tail_only=True),
    # Cache-aware reduction: harnesses that do not persist the round trip, stable steps, reuse.
    Mode("summariser-nopersist", True, {}, persist=False),
    Mode("summariser-nopersist+reuse", True, {"summary_reuse": True}, persist=False),
    Mode("summariser-nopersist+reuse+reduce", True, {"summary_reuse": True, "reduce_to": 0.6},
         persist=False),
    Mode("summariser+reduce", True, {"reduce_to": 0.6}),
    Mode("summariser+reuse+reduce", True, {"summary_reuse": True, "reduce_to": 0.6}),
    Mode("none+drop_oldest+reduce", False, {"overflow_fallback": "drop_oldest", "reduce_to": 0.6}),
    Mode("summariser+message", True, {"summary_placement": "message"}),
    Mode("summariser+eager", True, {"eager_compaction_at": 0.8}),
    Mode("summariser+eager+reduce", True, {"eager_compaction_at": 0.8, "reduce_to": 0.6}),
    Mode("summariser+all", True, {"summary_reuse": True, "reduce_to": 0.6,
                                  "summary_placement": "message", "eager_compaction_at": 0.8}),
    Mode("summariser-nopersist+all", True, {"summary_reuse": True, "reduce_to": 0.6,
                                            "summary_placement": "message",
                                            "eager_compaction_at": 0.8}, persist=False),
)
MODES_BY_NAME = {mode.name: mode for mode in MODES}
