"""One summary of a head, as every compaction path accepts it.

The summariser's reply (``summarize.summarize_head``); with ``summarizer_fallback: extractive`` an
extractive summary instead when there is no summariser or it fails, times out or answers blank;
then, with ``summary_check: append``, the retention check; then, with ``working_set: true``, the
``## Working set`` section (``working_set``), after the ``## Current plan`` of ``plan_functions``
(``plan``): the summariser and the check see the previous summary
without it, and the extractive summary leaves the section the tokens it takes (up to its share)
of the summary budget, measured against the extractive summary made with the whole budget. With
these options at their defaults this is exactly ``summarize_head``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from context_manager.core.budget import summary_budget
from context_manager.core.compaction.conversation import ConversationContext
from context_manager.core.compaction.extractive import extractive_summary
from context_manager.core.compaction.instructions import combined
from context_manager.core.compaction.retention_check import check_summary
from context_manager.core.compaction.summarize import summarize_head
from context_manager.core.compaction.summarizer_model import SummarizerTarget
from context_manager.core.compaction.working_set import (
    section_budget,
    with_working_set,
    without_working_set,
    working_set,
)
from context_manager.core.settings import WorkerConfig
from context_manager.ports import Estimator, SummarizeError, Summarizer, SummarizerUnavailable
from context_manager.wire.decode import ModelInput

LLM = "llm"
EXTRACTIVE = "extractive"


@dataclass(frozen=True, slots=True)
class ProducedSummary:
    """The accepted summary; ``kind`` and ``retained_items`` are ``None`` when not reported."""

    text: str
    kind: str | None
    retained_items: int | None


async def produce_summary(
    summarizer: Summarizer | None,
    model: ModelInput,
    head: Sequence[dict[str, Any]],
    input_budget: int,
    *,
    previous_summary: str | None,
    instructions: str | None,
    estimator: Estimator,
    config: WorkerConfig,
    log: logging.Logger,
    chunk_budget: int | None = None,
    target: SummarizerTarget | None = None,
    conversation: ConversationContext | None = None,
) -> ProducedSummary:
    """Raises :class:`SummarizeError` only without the extractive fallback; every count is taken
    with ``estimator`` (the calling function's). ``input_budget`` sizes the summary and, unless
    ``chunk_budget`` is given, each summariser request. ``target`` (``summarizer_model``) names
    the model the requests go to, their budget and the tally of their cost. The configuration's
    ``compaction_instructions`` come before ``instructions``. ``conversation``: the context the
    head came from (``summarizer_request: conversation``), used only when the summariser is the
    session's model, whose prompt cache holds it."""
    instructions = combined(config.compaction_instructions, instructions)
    if target is not None:
        if (target.model.id, target.model.provider) != (model.id, model.provider):
            conversation = None
        model = target.model
        chunk_budget = target.chunk_budget if target.chunk_budget is not None else chunk_budget
    extractive_on = config.summarizer_fallback == EXTRACTIVE
    kind = LLM
    carried = previous_summary
    budget = summary_budget(input_budget)
    if config.working_set:
        previous_summary = without_working_set(previous_summary)
    try:
        if summarizer is None:
            raise SummarizerUnavailable("no summariser is configured")
        text = await summarize_head(
            summarizer, model, head, input_budget if chunk_budget is None else chunk_budget,
            previous_summary=previous_summary, instructions=instructions, estimator=estimator,
            config=config, log=log, tally=target.tally if target is not None else None,
            conversation=conversation,
        )
    except SummarizeError as exc:
        if not extractive_on:
            raise
        log.warning("summariser gave no summary (%s); using an extractive summary", exc)
        text = extractive_summary(head, previous_summary, budget, estimator)
        if config.working_set:
            # The section takes what it needs of its share; the extractive summary the rest.
            section = working_set(head, carried, text, section_budget(budget), estimator,
                                  config.plan_functions)
            if section:
                text = extractive_summary(head, previous_summary,
                                          budget - estimator.text(section), estimator)
        kind = EXTRACTIVE
    retained: int | None = None
    if config.summary_check == "append":
        text, retained = check_summary(
            text, head, previous_summary, budget, estimator)
    if config.working_set:
        text = with_working_set(text, head, carried, section_budget(budget), estimator,
                                config.plan_functions)
    return ProducedSummary(text, kind if extractive_on else None, retained)
