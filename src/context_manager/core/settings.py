"""The worker configuration record: every key, its type and its default (spec 04 §2.1)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from context_manager.core.retention_policy import RetentionPolicy

# The accepted values of the enumerated keys; config parsing and the schema list them from here.
OverflowFallback = Literal["error", "drop_oldest"]
EstimatorName = Literal["heuristic", "auto", "router"]
SummaryCheck = Literal["off", "append"]
SummarizerFallback = Literal["none", "extractive"]
SummaryPlacement = Literal["system_prompt", "message"]
CountCalibration = Literal["off", "usage"]
LeaseStoreName = Literal["file", "state"]
SessionStoreName = Literal["memory", "state"]
ProfileName = Literal["faithful", "recommended"]

# What each profile implies for the keys a configuration leaves out; an explicit value always
# wins. "faithful" implies nothing: the original's behaviour. "recommended" is the combination
# the league table (BENCHMARKS.md, "The recommended profile") measured best, with a summariser
# and without one. Values are written as the configuration's JSON.
PROFILE_KEYS: dict[str, dict[str, Any]] = {
    "faithful": {},
    "recommended": {
        "summary_check": "append",
        "summarizer_fallback": "extractive",
        "working_set": True,
        "overflow_fallback": "drop_oldest",
        "summary_reuse": True,
        "eager_compaction_at": 0.8,
    },
}


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    reserved_tokens_cap: int = 20000
    reserved_pct: int = 10
    tail_turns: int = 2
    protect_recent_tokens: int = 40000
    decay_user_turns: int = 0
    protected_user_turns: int = 2
    min_free_tokens: int = 20000
    max_output_chars: int = 2000
    max_result_tokens: int = 20000
    lease_ttl_secs: int = 300
    allow_fallback_limits: bool = True
    summarizer_timeout_ms: int = 320000
    lease_dir: str = "data/context-manager"
    # Documented additions to the 1.1.6 record; their defaults keep the original's behaviour
    # except `user_less_compaction` (see README "Behaviour beyond 1.1.6").
    overflow_fallback: OverflowFallback = "error"
    estimator: EstimatorName = "heuristic"
    user_less_compaction: bool = True
    # Task retention (README "Behaviour beyond 1.1.6"); the defaults leave every answer unchanged.
    anchor_messages: int = 0
    summary_check: SummaryCheck = "off"
    summarizer_fallback: SummarizerFallback = "none"
    working_set: bool = False
    # Cache-aware reduction (README "Cache-aware reduction"); the defaults leave every answer
    # unchanged. ``reduce_to`` is a fraction of ``usable`` in (0, 1].
    report_prefix: bool = False
    reduce_to: float = 1.0
    summary_reuse: bool = False
    summary_placement: SummaryPlacement = "system_prompt"
    # A fraction of ``usable`` in (0, 1], or None (compact only when over budget).
    eager_compaction_at: float | None = None
    # The retention policy (README "Retention policy"); absent (None) runs no retention pass.
    retention: RetentionPolicy | None = None
    # Counts anchored on the provider's `usage` (README "Count calibration"); "off" keeps 1.1.6 counts.
    count_calibration: CountCalibration = "off"
    # Where leases and remembered compactions live (README "Several processes or hosts"): the
    # defaults keep them in files and in process memory; "state" shares them through the engine.
    lease_store: LeaseStoreName = "file"
    session_store: SessionStoreName = "memory"
    # How long a remembered compaction in the state store is reused, in seconds (positive).
    session_ttl_secs: int = 3600
    # A named set of defaults for the keys above (PROFILE_KEYS); "faithful" changes none.
    profile: ProfileName = "faithful"

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["retention"] = self.retention.to_json() if self.retention is not None else None
        return out

    @classmethod
    def key_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


DEFAULT_CONFIG = WorkerConfig()
