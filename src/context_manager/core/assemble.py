"""`context::assemble`: fit a history into the target model's usable input budget.

Pass order (each pass keeps the per-message size memo exact, so the running total always equals
a from-scratch count of what would be returned):

1. resolve the model and compute ``usable``;
2. build the model-facing view (custom messages removed, request indices remembered) and set its
   pinned anchor aside (``core.anchor``; ``anchor_messages``, none by default): every later pass
   works on the rest only, and the anchor is returned first, verbatim;
3. media normalization of the view;
4. render the system prompt (base + optional previous-summary section), count everything:
   ``initial_token_count``;
4a. with a ``retention`` policy only, the retention pass (``core.passes.retention``), whose
   warnings are reported as ``applied.warnings``;
5. per-result cap (unless the effective ``max_result_tokens`` is 0);
6. normal prune (unless ``allow_prune`` is false);
7. compaction, when over budget (or past ``eager_compaction_at`` of it, then with a smaller tail
   and only when that pays, ``core.compaction.inline``) and ``allow_compaction`` is not false
   (see ``compaction_step``); with ``summary_placement: message`` the summary
   becomes a message after the anchor instead of a system prompt section;
8. emergency reduction, when still over budget;
9. with ``overflow_fallback: drop_oldest`` only, dropping the oldest turns/rounds (``core.drop_oldest``);
   with ``working_set: true`` the dropped messages leave a note of their working set in their
   place (``core.compaction.working_set.dropped_note``), reported as ``applied.working_set_note_tokens``;
10. ``context/overflow`` when still over budget, else the response (with ``report_prefix``, its
    cache-break report, ``core.prefix``).

Below ``reduce_to`` 1, steps 7–9 cut on the content-defined grid of ``core.passes.steps``. With
``summary_reuse``, :func:`assemble` first rewrites a request that extends its history's
remembered compaction into that round trip (``core.compaction.recall``). With
``options.preview_only`` it runs the call as with ``allow_compaction: false`` over deps that keep
no state (``core.preview``): the answer of that request, and nothing left behind.

With ``compact_ahead_at`` (``core.compaction.ahead``) step 7 never calls the summariser: it uses
the session's summary computed ahead of time, else the no-wait path; and once the answer is
final (step 10), a context past that share of the budget that did not compact starts the next
such summary off the call (``deps.ahead_runner``, which a preview withholds).

Calibrated counts
-----------------
With ``count_calibration: usage`` (an anchor in the request's ``usage``) or ``estimator: router``
(the router's count of the request), a ``core.counting.calibration.Calibration`` converts
estimates into provider units. The passes keep working on estimates: the budget they compare
with is the largest estimate whose calibrated count fits ``usable`` (and prune's thresholds are
converted likewise); the response reports calibrated numbers, apportioned so that they add up to
``token_count``. Under ``router``, a context that changed is counted once more (two router calls
at most) and, if that count no longer fits, reduced again by emergency and ``drop_oldest``.

A usage anchor only ever helps (the router's count is the provider's own and is not second-
guessed): a pinned anchor that fits ``usable`` but not the calibrated budget runs the call
uncalibrated; the summariser's input budget is never below ``usable``; and a calibrated run that
ends over its budget is answered uncalibrated when its context fits ``usable``, else by a second
run without the anchor (``core.assembly.run``), whose overflow reports the calibrated count.

Where the steps live
--------------------
``core.assembly``: ``prepare`` (steps 1-4), ``plan`` (the passes of steps 4a-9 this call runs,
one module each under ``core.assembly.passes``), ``finish`` (step 10, the router's second count,
the ledger, explain). The calibrated budget, its guard and the uncalibrated re-run decision are
``core.counting.calibrated_budget.CalibratedBudget``; compaction's hand-over is documented in
``core.assembly.passes.compaction``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from context_manager.core.assembly.passes.compaction import compaction_step
from context_manager.core.assembly.request import AssembleDeps, AssembleOptions, AssembleRequest
from context_manager.core.assembly.run import run
from context_manager.core.compaction.recall import recall, remember, with_round_trip
from context_manager.core.preview import read_only
from context_manager.core.reuse import CallReuse

__all__ = ["AssembleDeps", "AssembleOptions", "AssembleRequest", "assemble", "compaction_step"]


async def assemble(request: AssembleRequest, deps: AssembleDeps, reuse: CallReuse) -> dict[str, Any]:
    """Run the whole pipeline; returns the response record (keys in record order).

    ``reuse`` is what the request was decoded with (``core.intake``): the passes measure and
    rewrite through the same memo and as-is estimates. With ``summary_reuse`` and no
    ``previous_summary`` from the caller, a request that extends its history's remembered
    compaction runs as that round trip (``core.compaction.recall``). With ``options.preview_only``
    the call runs as with ``allow_compaction: false`` over read-only deps (``core.preview``):
    this is the one place a preview is told apart.
    """
    if request.options.preview_only:
        request = replace(request, options=replace(request.options, allow_compaction=False))
        deps = read_only(deps)
    store = deps.session_store
    options = request.options
    if not deps.config.summary_reuse or store is None or options.previous_summary is not None:
        return await run(request, deps, reuse)
    anchor_requested = (
        options.anchor_messages if options.anchor_messages is not None else deps.config.anchor_messages
    )
    session = await recall(request.messages, options.lease_key, anchor_requested, store)
    effective = request if session.reused is None else with_round_trip(request, session)
    response = await run(effective, deps, reuse)
    applied = response["applied"]
    await remember(request.messages, session, applied, store)
    if session.reused is not None:
        applied["summary_reused"] = True
        applied["reused_from_index"] = session.reused.head_len
    return response
