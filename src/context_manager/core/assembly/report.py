"""What an assemble call reports: one typed report per pass, gathered into :class:`AssembleReport`,
whose :meth:`AssembleReport.to_wire` is the response's ``applied`` record.

A pass that made no change returns no report; its members then take their defaults (``pruned``
false, ``capped_parts`` 0, ...). Amounts are kept in estimator units and converted once, by
``to_wire``, when the call ends calibrated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from context_manager.core.carried_anchor import with_anchor
from context_manager.core.compaction.inline import InlineCompaction
from context_manager.core.counting.calibrated_budget import CalibratedCount
from context_manager.wire.messages import Message

Warning_ = dict[str, Any]


@dataclass(frozen=True, slots=True)
class AnchorReport:
    """``anchor_tokens``: the pinned anchor's size (reported whenever an anchor is asked for)."""

    tokens: int


@dataclass(frozen=True, slots=True)
class RetentionReport:
    """The retention policy's warnings (``applied.warnings``, first)."""

    warnings: list[Warning_]


@dataclass(frozen=True, slots=True)
class CapReport:
    """``capped_parts`` and ``capped_tokens``."""

    parts: int
    tokens: int


@dataclass(frozen=True, slots=True)
class PruneReport:
    """``pruned`` and ``pruned_tokens`` (emergency reduction adds its own to both)."""

    pruned: bool
    tokens: int


@dataclass(frozen=True, slots=True)
class CompactionReport:
    """``compacted`` and the summary's members: the outcome, its tail mapped to a request index."""

    outcome: InlineCompaction
    tail_start_index: int


@dataclass(frozen=True, slots=True)
class EmergencyReport(PruneReport):
    """Emergency work, reported with prune's: ``pruned`` is OR-ed and its freed total added."""


@dataclass(frozen=True, slots=True)
class DropReport:
    """``dropped_messages``, ``dropped_ranges`` (the last drop's), ``working_set_note_tokens``
    (every note's), and with a retention policy one warning per dropped range."""

    dropped_messages: int
    dropped_ranges: list[list[int]]
    note_tokens: int | None
    warnings: list[Warning_]


PassReport = AnchorReport | RetentionReport | CapReport | PruneReport | CompactionReport | EmergencyReport | DropReport


def _same(tokens: int) -> int:
    return tokens


@dataclass(slots=True)
class AssembleReport:
    """The ``applied`` record of one call: the pass reports in the order they were made, and what
    ``finish`` adds (the calibration the call ends with, explain's actions, the prefix report)."""

    initial_token_count: int
    passes: list[PassReport] = field(default_factory=list)
    count: CalibratedCount = field(default_factory=CalibratedCount)
    # The pinned anchor a summary carries to the next request (``core.carried_anchor``).
    anchor: list[Message] = field(default_factory=list)
    actions: list[dict[str, Any]] | None = None
    prefix: dict[str, Any] | None = None

    def add(self, report: PassReport | None) -> None:
        if report is not None:
            self.passes.append(report)

    def compacted(self) -> bool:
        """Did a pass compact (``applied.compacted``)?"""
        return any(type(report) is CompactionReport for report in self.passes)

    def to_wire(self) -> dict[str, Any]:
        amount = _same if self.count.calibration is None else self.count.amount
        pruned, pruned_tokens, capped_parts, capped_tokens = False, 0, 0, 0
        anchor: AnchorReport | None = None
        compaction: CompactionReport | None = None
        drop: DropReport | None = None
        note_tokens: int | None = None
        warnings: list[Warning_] = []
        for report in self.passes:
            if type(report) is PruneReport:
                pruned, pruned_tokens = report.pruned, report.tokens
            elif type(report) is EmergencyReport:
                pruned = pruned or report.pruned
                pruned_tokens += report.tokens
            elif type(report) is CapReport:
                capped_parts, capped_tokens = report.parts, report.tokens
            elif type(report) is AnchorReport:
                anchor = report
            elif type(report) is CompactionReport:
                compaction = report
            elif type(report) is DropReport:
                drop = report
                if report.note_tokens is not None:
                    note_tokens = (note_tokens or 0) + report.note_tokens
                warnings.extend(report.warnings)
            elif type(report) is RetentionReport:
                warnings.extend(report.warnings)
        applied: dict[str, Any] = {
            "initial_token_count": self.initial_token_count,
            "pruned": pruned,
            "pruned_tokens": amount(pruned_tokens),
            "capped_parts": capped_parts,
            "capped_tokens": amount(capped_tokens),
            "compacted": compaction is not None,
        }
        if anchor is not None:
            applied["anchor_tokens"] = amount(anchor.tokens)
        if compaction is not None:
            # The next request may start at the tail: the summary carries the anchor to it.
            outcome = compaction.outcome
            applied["summary"] = with_anchor(outcome.summary, self.anchor)
            applied["tail_start_index"] = compaction.tail_start_index
            applied["tokens_before"] = amount(outcome.tokens_before)
            applied["summarized_head_tokens"] = amount(outcome.tokens_before)
            if outcome.summary_kind is not None:
                applied["summary_kind"] = outcome.summary_kind
            if outcome.retained_items is not None:
                applied["retained_items"] = outcome.retained_items
            if outcome.summarizer is not None:  # summarizer_model: what the summariser calls cost
                applied["summarizer"] = outcome.summarizer
        if drop is not None:
            applied["dropped_messages"] = drop.dropped_messages
            applied["dropped_ranges"] = drop.dropped_ranges
            if note_tokens is not None:
                applied["working_set_note_tokens"] = note_tokens
        if warnings:
            applied["warnings"] = warnings
        if self.actions is not None:
            applied["actions"] = self.actions
        if self.prefix is not None:
            applied.update(self.prefix)
        return applied
