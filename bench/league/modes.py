"""The worker's own modes in the league: one line each (name, summariser or not, configuration).

Every mode is replayed as a harness that keeps the compaction round trip (``persist``), through
``context::assemble`` with the configuration given (the other keys at their defaults). With
``summariser`` the deterministic replay summariser answers; without, the worker has none.
"""

from __future__ import annotations

from bench.kit.modes import Mode

CHECK = {"summary_check": "append"}
EXTRACTIVE = {"summarizer_fallback": "extractive"}
REDUCE = {"reduce_to": 0.6}
DROP = {"overflow_fallback": "drop_oldest"}
RECOMMENDED = {"profile": "recommended"}

WORKER_MODES: tuple[Mode, ...] = (
    Mode("worker: defaults", True, {}),
    Mode("worker: no summariser", False, {}),
    Mode("worker: drop_oldest", False, DROP),
    Mode("worker: extractive", False, EXTRACTIVE),
    Mode("worker: extractive+check", False, {**EXTRACTIVE, **CHECK}),
    Mode("worker: extractive+check+reduce", False, {**EXTRACTIVE, **CHECK, **REDUCE}),
    Mode("worker: extractive+check+drop+reduce", False, {**EXTRACTIVE, **CHECK, **DROP, **REDUCE}),
    Mode("worker: extractive+check+reduce+eager", False, {**EXTRACTIVE, **CHECK, **REDUCE,
                                                          "eager_compaction_at": 0.8}),
    Mode("worker: check", True, CHECK),
    Mode("worker: anchor", True, {"anchor_messages": 1}),
    Mode("worker: check+extractive", True, {**CHECK, **EXTRACTIVE}),
    Mode("worker: check+reduce", True, {**CHECK, **REDUCE}),
    Mode("worker: check+eager", True, {**CHECK, "eager_compaction_at": 0.8}),
    Mode("worker: check+extractive+reduce", True, {**CHECK, **EXTRACTIVE, **REDUCE}),
    Mode("worker: check+extractive+drop+reduce", True, {**CHECK, **EXTRACTIVE, **DROP, **REDUCE}),
    Mode("worker: check+reduce+reuse", True, {**CHECK, **REDUCE, "summary_reuse": True}),
    Mode("worker: check+message+eager", True, {**CHECK, "summary_placement": "message",
                                               "eager_compaction_at": 0.8}),
    Mode("worker: check+extractive+all", True, {**CHECK, **EXTRACTIVE, **REDUCE, "summary_reuse": True,
                                                "summary_placement": "message", "eager_compaction_at": 0.8}),
    Mode("worker: recommended", True, RECOMMENDED),
    Mode("worker: recommended without summariser", False, RECOMMENDED),
    # The recommended profile less one member each: why each is in it (BENCHMARKS.md).
    Mode("worker: recommended less check", True, {**RECOMMENDED, "summary_check": "off"}),
    Mode("worker: recommended less working set", True, {**RECOMMENDED, "working_set": False}),
    Mode("worker: recommended plus reduce_to 0.6", True, {**RECOMMENDED, "reduce_to": 0.6}),
    Mode("worker: recommended less eager", True, {**RECOMMENDED, "eager_compaction_at": None}),
    Mode("worker: recommended less conversation", True, {**RECOMMENDED, "summarizer_request": "rendered"}),
    Mode("worker: recommended without summariser less extractive", False,
         {**RECOMMENDED, "summarizer_fallback": "none"}),
    Mode("worker: recommended without summariser less drop_oldest", False,
         {**RECOMMENDED, "overflow_fallback": "error"}),
    Mode("worker: recommended+anchor", True, {**RECOMMENDED, "anchor_messages": 1}),
    # The history budget: a ceiling below the window (it decides at 128k only; recall over the
    # calls whose history exceeds it, bench.league.recall).
    Mode("worker: recommended+history 32000", True, {**RECOMMENDED, "max_history_tokens": 32000}),
    Mode("worker: recommended+history 32000 without summariser", False,
         {**RECOMMENDED, "max_history_tokens": 32000}),
)
WORKER_MODES_BY_NAME = {mode.name: mode for mode in WORKER_MODES}
