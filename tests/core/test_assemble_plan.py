"""The structure of ``context::assemble``: the plan a configuration implies, the calibrated budget,
the reports' wire form and the working context's invariants."""

from __future__ import annotations

from dataclasses import replace

from shorthand import A, U

from context_manager.core.assembly.context import WorkingContext
from context_manager.core.assembly.passes.fit import fitting
from context_manager.core.assembly.plan import pass_names, plan
from context_manager.core.assembly.report import (
    AnchorReport,
    AssembleReport,
    CapReport,
    CompactionReport,
    DropReport,
    EmergencyReport,
    PruneReport,
    RetentionReport,
)
from context_manager.core.assembly.request import AssembleOptions
from context_manager.core.compaction.inline import InlineCompaction
from context_manager.core.counting.calibrated_budget import (
    CalibratedBudget,
    CalibratedCount,
    OverBudget,
    routed_calibration,
)
from context_manager.core.counting.calibration import Calibration
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.retention_policy import RetentionPolicy
from context_manager.core.settings import WorkerConfig

DEFAULT = WorkerConfig()
# 1.5 provider tokens per estimated token, anchored at 1000 estimated tokens.
CALIBRATION = Calibration(3, 1500, 1000)


# --- the plan ------------------------------------------------------------------------------------


def test_the_default_plan():
    assert pass_names(DEFAULT, AssembleOptions(), 0) == ["cap", "prune", "compaction", "emergency"]


def test_every_pass_in_plan_order():
    config = replace(DEFAULT, retention=RetentionPolicy(), overflow_fallback="drop_oldest")
    assert pass_names(config, AssembleOptions(), 2) == [
        "carried_anchor", "retention", "cap", "prune", "compaction", "emergency", "drop_oldest"]


def test_options_take_passes_out():
    options = AssembleOptions(max_result_tokens=0, allow_prune=False, allow_compaction=False)
    assert pass_names(DEFAULT, options, 0) == ["emergency"]
    assert pass_names(replace(DEFAULT, max_result_tokens=0), AssembleOptions(), 0) == [
        "prune", "compaction", "emergency"]
    # The call's own cap threshold wins over the configuration's.
    assert pass_names(replace(DEFAULT, max_result_tokens=0), AssembleOptions(max_result_tokens=5), 0) == [
        "cap", "prune", "compaction", "emergency"]


def test_the_fitting_passes_are_run_again_after_a_recount():
    config = replace(DEFAULT, overflow_fallback="drop_oldest")
    assert [step.name for step in fitting(plan(config, AssembleOptions(), 0))] == ["emergency", "drop_oldest"]


# --- the calibrated budget -----------------------------------------------------------------------


def test_an_uncalibrated_budget_is_the_usable_budget():
    budget = CalibratedBudget.of(10_000, 100)
    assert (budget.limit, budget.guarded, budget.routed, budget.calibration) == (10_000, False, False, None)
    assert budget.reported(1234) == 1234
    assert budget.summarizer_budget() is None
    assert budget.for_anchor(10_000) is budget
    assert budget.for_anchor(10_001) is None
    assert budget.over_budget(10_001) is OverBudget.OVERFLOW


def test_a_usage_anchor_budget_exact_values():
    budget = CalibratedBudget.of(10_000, 100, CALIBRATION)
    # unscale(9900) = 1000 + (9900 - 1500) * 1000 // 1500 = 6600, plus the unscaled overhead.
    assert budget.limit == 6700
    assert budget.guarded and not budget.routed
    assert budget.reported(6700) == 10_000
    assert budget.reported(6701) == 10_002
    assert budget.amount(101) == 152
    assert budget.summarizer_budget() == 10_000
    assert budget.for_anchor(6700) is budget
    assert budget.for_anchor(8000) == CalibratedBudget.of(10_000, 100)
    assert budget.for_anchor(10_001) is None
    assert budget.over_budget(9000) is OverBudget.ANSWER_UNCALIBRATED
    assert budget.over_budget(10_001) is OverBudget.RERUN_UNCALIBRATED


def test_the_routers_count_is_not_guarded():
    routed = routed_calibration(1500, 1000)
    assert routed == Calibration(-1, 1500, 1000)
    budget = CalibratedBudget.of(10_000, 100, routed, routed=True)
    assert (budget.limit, budget.guarded, budget.routed) == (6700, False, True)
    assert budget.for_anchor(8000) is None
    assert budget.over_budget(9000) is OverBudget.OVERFLOW
    recounted = budget.recalibrated(Calibration(-1, 2000, 1000))
    assert (recounted.limit, recounted.guarded, recounted.routed) == (5050, False, True)
    assert routed_calibration(None, 1000) is None
    assert routed_calibration(0, 1000) is None
    assert routed_calibration(1500, 0) is None


def test_a_calibrated_count_apportions_its_parts():
    count = CalibratedCount(CALIBRATION)
    # scale(100) = 1500 + ceil(-900 * 1.5) = 150, shared 1 : 2 : 3 : 4.
    assert count.parts(10, 20, {"user": 30, "assistant": 40}) == (15, 30, {"user": 45, "assistant": 60})
    assert count.total(100) == 150
    assert count.by_part([("b", "x" * 40), ("a", "y" * 4)], HEURISTIC) == {"b": 15, "a": 2}
    record: dict[str, object] = {}
    count.describe(record, HEURISTIC)
    assert record == {"estimator": "heuristic", "calibration": {
        "anchor_index": 3, "provider_tokens": 1500, "ratio": 1.5, "growth_ratio": 1.5}}
    routed: dict[str, object] = {}
    CalibratedCount(CALIBRATION, routed=True).describe(routed, HEURISTIC)
    assert routed == {"estimator": "router"}
    plain = CalibratedCount()
    assert plain.parts(1, 2, {"user": 3}) == (1, 2, {"user": 3})
    assert plain.total(7) == 7


# --- the report ----------------------------------------------------------------------------------


def test_an_empty_report_on_the_wire():
    assert AssembleReport(500).to_wire() == {
        "initial_token_count": 500, "pruned": False, "pruned_tokens": 0,
        "capped_parts": 0, "capped_tokens": 0, "compacted": False}


def test_a_full_report_on_the_wire_in_record_order():
    retained = {"code": "truncated", "index": 1}
    dropped = {"code": "history_dropped", "dropped": 2, "start": 1, "end": 3}
    report = AssembleReport(9000, [
        AnchorReport(40),
        RetentionReport([retained]),
        CapReport(2, 300),
        PruneReport(False, 50),
        CompactionReport(InlineCompaction("S", 5, 5, 700, "structured", 3), 4),
        EmergencyReport(True, 25),
        DropReport(2, [[1, 3]], 12, [dropped]),
        EmergencyReport(False, 5),
        DropReport(1, [[3, 4]], None, []),
    ], actions=[{"pass": "cap"}], prefix={"cache_break_index": 1, "system_prompt_changed": True})
    wire = report.to_wire()
    assert wire == {
        "initial_token_count": 9000, "pruned": True, "pruned_tokens": 80,
        "capped_parts": 2, "capped_tokens": 300, "compacted": True, "anchor_tokens": 40,
        "summary": "S", "tail_start_index": 4, "tokens_before": 700, "summarized_head_tokens": 700,
        "summary_kind": "structured", "retained_items": 3,
        "dropped_messages": 1, "dropped_ranges": [[3, 4]], "working_set_note_tokens": 12,
        "warnings": [retained, dropped], "actions": [{"pass": "cap"}],
        "cache_break_index": 1, "system_prompt_changed": True,
    }
    assert list(wire) == [
        "initial_token_count", "pruned", "pruned_tokens", "capped_parts", "capped_tokens", "compacted",
        "anchor_tokens", "summary", "tail_start_index", "tokens_before", "summarized_head_tokens",
        "summary_kind", "retained_items", "dropped_messages", "dropped_ranges", "working_set_note_tokens",
        "warnings", "actions", "cache_break_index", "system_prompt_changed",
    ]


def test_a_calibrated_report_converts_its_amounts():
    report = AssembleReport(1200, [AnchorReport(10), CapReport(1, 101), PruneReport(True, 20),
                                   EmergencyReport(False, 1), CompactionReport(InlineCompaction("S", 2, 2, 100), 2)],
                            count=CalibratedCount(CALIBRATION))
    wire = report.to_wire()
    assert wire == {
        "initial_token_count": 1200, "pruned": True, "pruned_tokens": 32,
        "capped_parts": 1, "capped_tokens": 152, "compacted": True, "anchor_tokens": 15,
        "summary": "S", "tail_start_index": 2, "tokens_before": 150, "summarized_head_tokens": 150,
    }


def test_a_summary_carries_the_anchor():
    anchor = [U("pinned", 1)]
    report = AssembleReport(0, [CompactionReport(InlineCompaction("S", 1, 1, 10), 1)], anchor=anchor)
    summary = report.to_wire()["summary"]
    assert summary.startswith("S") and summary != "S" and "pinned" in summary


# --- the working context -------------------------------------------------------------------------


def _context() -> WorkingContext:
    view = [U("a", 1), A("b", 2), U("c", 3)]
    return WorkingContext(view=view, sizes=[5, 6, 7], view_to_orig=[0, 2, 3], system_prompt="",
                          prompt_tokens=1, tools_tokens=2, overhead_tokens=3, original=view)


def test_the_working_context_counts_what_it_would_return():
    state = _context()
    assert state.total() == 24 and state.fixed_tokens() == 6
    assert state.unchanged(None, None)
    state.rewrite([U("a", 1), A("B", 2), U("c", 3)], [5, 1, 7])
    assert state.total() == 19 and state.view_to_orig == [0, 2, 3]
    assert not state.unchanged(None, None)


def test_positions_that_move_drop_the_function_id_resolution():
    state = _context()
    state.function_ids()
    assert state._function_ids is not None
    state.rewrite(list(state.view), list(state.sizes))
    assert state._function_ids is not None
    state.drop(state.view[1:], state.sizes[1:], state.view_to_orig[1:])
    assert state._function_ids is None and state.total() == 19
    state.function_ids()
    state.summarize_head(1, "S", "Base.", "system_prompt", HEURISTIC)
    assert state._function_ids is None
    assert state.view_to_orig == [3] and state.sizes == [7]
    assert state.system_prompt.startswith("Base.") and state.prompt_tokens == HEURISTIC.text(state.system_prompt)
