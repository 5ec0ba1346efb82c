"""Compaction ahead of time (``compact_ahead_at``): the summariser runs off the call that needs it.

Two hooks in ``context::assemble``, both inert while ``compact_ahead_at`` is null:

* :func:`due` then :func:`after_call`, once a call's answer is final (``core.assembly.finish``):
  when the context it returns exceeds ``compact_ahead_at`` of the budget the passes aimed for
  (under ``max_history_tokens``, the ceiling's), the call did not compact and, with
  ``eager_compaction_at``, its early compaction would be due, a background job is handed to
  the process's ``JobRunner`` (``deps.ahead_runner``; a preview has none). Nothing the call
  returns depends on it, and nothing is awaited.
* :func:`compact_without_waiting`, in place of the inline compaction of a call that must
  compact (``core.assembly.passes.compaction.compaction_step``): the ready summary when the
  session has one whose head this history still extends, else the no-wait path (``try_compact``
  without a summariser: the extractive summary with ``summarizer_fallback: extractive``,
  otherwise no compaction, as without a summariser). The summariser is never called on the
  call's own path.

The job (:func:`run_job`) selects the head the compaction that will use it should summarise
(:func:`ahead_tail_budget`; the same selection and ``produce_summary`` as inline compaction, the
summariser only, no extractive fallback; the summariser's requests go where inline compaction's go: to
``summarizer_model`` when set, each within that model's budget, else within the request's
``chunk_budget``, with ``compaction_instructions`` in every prompt), under the compaction lease
of the call's session, and puts the result in the session store under :data:`RECORD_PREFIX` +
the session key, so ``summary_reuse``'s record of the same session is never overwritten. The
record's ``head_len`` is the request index the tail starts at, ``anchor_len`` the request index
of the first message after the pinned anchor, and ``head_digest`` covers the previous summary
the job built on and the request's first ``head_len`` messages: a later call uses the summary
only when it sends that same previous summary (or none) and a history that starts with exactly
those messages.

The session key is ``options.lease_key`` when given, else the default lease key's digest over
the request's first message (``recall.session_key``); the job's lease is taken on that key, so
one job runs per session across every process sharing the lease store. A job that does not
finish (cancelled, timed out, its process gone) writes nothing; its claim lapses with the
lease TTL.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, replace
from math import floor
from typing import Protocol

from context_manager.core.budget import EAGER_TAIL_MIN, eager_tail_budget, preserve_recent
from context_manager.core.compaction import lease
from context_manager.core.compaction.inline import (
    CompactionRequest,
    InlineCompaction,
    InlineCompactionDeps,
    early_compaction_due,
    head_before_tail,
    try_compact,
)
from context_manager.core.compaction.produce import EXTRACTIVE, LLM, produce_summary
from context_manager.core.compaction.recall import session_key
from context_manager.core.compaction.summarizer_model import cost_report, summarizer_target
from context_manager.core.memo import MessageMemo, remembered
from context_manager.core.settings import WorkerConfig
from context_manager.ports import (
    Clock,
    JobRunner,
    LeaseStore,
    ModelResolver,
    RememberedCompaction,
    SessionStore,
    SummarizeError,
    Summarizer,
)
from context_manager.wire import errors
from context_manager.wire.messages import Message

# Session-store keys of the summaries computed ahead of time (``summary_reuse`` uses the bare key).
RECORD_PREFIX = "ahead:"


class AheadDeps(Protocol):
    """The call context (``handlers.context.HandlerContext`` fits)."""

    config: WorkerConfig
    summarizer: Summarizer | None
    lease_store: LeaseStore | None
    session_store: SessionStore | None
    clock: Clock
    log: logging.Logger
    # ``summarizer_model`` is resolved through it, as inline compaction resolves it.
    resolver: ModelResolver | None
    ahead_runner: JobRunner | None


def record_key(session: str) -> str:
    return RECORD_PREFIX + session


def head_digest(head: list[Message], previous_summary: str | None) -> str:
    """The content key of a summarised head: the previous summary it builds on, then the head."""
    digest = hashlib.sha256()
    if previous_summary is None:
        digest.update(b"\x00")
    else:
        digest.update(b"\x01")
        digest.update(hashlib.sha256(previous_summary.encode("utf-8", "surrogatepass")).digest())
    digest.update(bytes.fromhex(lease.default_lease_key(head)))
    return digest.hexdigest()


def job_timeout_s(config: WorkerConfig) -> float:
    """A job never outlives its lease; without a TTL it gets one summariser timeout."""
    if config.lease_ttl_secs > 0:
        return float(config.lease_ttl_secs)
    return config.summarizer_timeout_ms / 1000


# --- hook 1: the call's answer is final ---------------------------------------------------------

def due(config: WorkerConfig, total: int, budget: int, compacted: bool) -> bool:
    """Should a call whose returned context holds ``total`` tokens (in the units of ``budget``)
    start the session's job? Past ``compact_ahead_at`` of the budget, and it did not compact."""
    share = config.compact_ahead_at
    return share is not None and not compacted and total > floor(share * budget)


def after_call(request: CompactionRequest, deps: AheadDeps, memo: MessageMemo | None = None,
               early_due: bool | None = None) -> bool:
    """Hand the session's job to the process's runner (when :func:`due`); never waits.

    ``request`` describes the context as returned (``core.assembly.passes.compaction.
    compaction_request`` of the final state); ``memo``, the call's, keeps the session key on the
    first message's entry, so the calls that follow do not hash it again. ``early_due``: the
    compaction pass's :func:`early_verdict` on this same context, when it has one (``None``:
    asked here). ``True`` when a job was started.
    """
    runner, store = deps.ahead_runner, deps.session_store
    if runner is None or store is None or deps.summarizer is None:
        return False
    if early_due is None and request.config.eager_compaction_at is not None:
        early_due = early_compaction_due(request)
    if early_due is False:
        # Started at the call inline compaction would compact early, the job's summary is
        # used a call or two later, with little more tail than inline's; started sooner, the
        # tail grows by all that came since and the next compaction comes sooner.
        return False
    job = AheadJob(request, _session_key(request, memo), deps.summarizer,
                   deps.lease_store, store, deps.clock, deps.log, deps.resolver)
    return runner.start(job_key(job.session, request.previous_summary), job.run, job_timeout_s(request.config))


def _session_key(request: CompactionRequest, memo: MessageMemo | None) -> str:
    messages = request.request_messages
    if request.lease_key is not None or not messages:
        return session_key(messages, request.lease_key)
    return remembered(memo, messages[0], _SESSION_KEY, lambda: session_key(messages, None))


_SESSION_KEY = ("compact_ahead_at", "session key")


def job_key(session: str, previous_summary: str | None) -> str:
    """The runner's key of a job: the session and the previous summary it builds on, so a job
    that settled one stretch of history (its summary is ready) is not started again for it,
    while the next stretch (a new previous summary) gets its own."""
    if previous_summary is None:
        return session
    return session + ":" + hashlib.sha256(previous_summary.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# --- hook 2: a call that must compact -----------------------------------------------------------

@dataclass(slots=True)
class _NoWait:
    """The deps of the no-wait path: no summariser, and no lease (nothing slow is guarded)."""

    log: logging.Logger
    clock: Clock
    summarizer: Summarizer | None = None
    lease_store: LeaseStore | None = None
    resolver: ModelResolver | None = None


def early_verdict(request: CompactionRequest) -> bool | None:
    """Would inline compaction compact this call early now? ``None`` for a call over budget.

    The compaction pass asks once and keeps the answer on the call, so a call it leaves as it
    was does not run the two tail selections again in :func:`after_call`."""
    if request.early_headroom is None:
        return None
    return early_compaction_due(request)


async def compact_without_waiting(request: CompactionRequest, deps: InlineCompactionDeps,
                                  store: SessionStore | None,
                                  early_due: bool | None) -> InlineCompaction | None:
    """The ready summary of the session when this history still extends its head, else the
    no-wait path; never calls the summariser.

    An early compaction (``eager_compaction_at``: the context still fits) uses a ready summary
    when inline compaction would compact early now (``early_compaction_due``), so a summary
    ready sooner does not bring the rewrite forward; without one it does not compact: only a
    call over budget must reduce, and an early extractive summary would stand in for the
    summary the job is making. ``early_due`` is :func:`early_verdict` of ``request``.
    """
    if request.early_headroom is not None and not early_due:
        return None
    if store is not None:
        ready = await ready_compaction(request, store)
        if ready is not None:
            deps.log.debug("compaction: a summary computed ahead of time is used")
            return ready
    if request.early_headroom is not None:
        return None
    return await try_compact(_no_wait_request(request), _NoWait(deps.log, deps.clock))


def _no_wait_request(request: CompactionRequest) -> CompactionRequest:
    """The no-wait compaction over budget keeps the tail the job plans (:func:`ahead_tail_budget`):
    with ``eager_compaction_at`` the eager one, else (nothing is free over budget) the full-window one.

    It stands in for the compaction whose summary is not ready yet (the summariser is slower than
    the agent's steps since the job started): keeping the full-window tail under
    ``eager_compaction_at``, the context after it would hold some 5,000 tokens more than inline
    compaction's, on every call until the next compaction, and that compaction would come
    sooner. Measured on the real sessions at 32k with a 120 s summariser
    (docs/benchmarks/latency.md): billed 1.08x the inline profile's with the full tail, 1.01x
    with the eager one, for 3 points of recall.
    """
    return replace(request, tail_budget=ahead_tail_budget(request))


async def ready_compaction(request: CompactionRequest, store: SessionStore) -> InlineCompaction | None:
    """The session's ready summary as this call's compaction, or ``None`` when there is none or
    this request does not start with exactly the head (and previous summary) it summarised."""
    record = await store.get(record_key(session_key(request.request_messages, request.lease_key)))
    if record is None or not request.view or request.view_to_orig[0] != record.anchor_len:
        return None
    messages = request.request_messages
    if len(messages) <= record.head_len:
        return None
    try:
        tail_view = request.view_to_orig.index(record.head_len)
    except ValueError:
        return None  # the tail started at a message this view does not hold
    if tail_view == 0 or tail_view >= len(request.view):
        return None
    if head_digest(messages[:record.head_len], request.previous_summary) != record.head_digest:
        return None
    config = request.config
    kind = LLM if config.summarizer_fallback == EXTRACTIVE else None
    retained = record.retained_items if config.summary_check == "append" else None
    return InlineCompaction(record.summary, tail_view, tail_view, sum(request.sizes[:tail_view]),
                            kind, retained)


# --- the job --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AheadJob:
    """One session's summary computed ahead of time, over the context a call returned."""

    request: CompactionRequest
    session: str
    summarizer: Summarizer
    lease_store: LeaseStore | None
    store: SessionStore
    clock: Clock
    log: logging.Logger
    resolver: ModelResolver | None = None

    async def run(self) -> bool:
        return await run_job(self)


def _planned(request: CompactionRequest) -> tuple[int, int, str] | None:
    """(view head length, request index of the tail, head digest) of the job, or ``None``."""
    head_len = head_before_tail(request, ahead_tail_budget(request))
    if head_len == 0 or head_len >= len(request.view):
        return None
    tail = request.view_to_orig[head_len]
    return head_len, tail, head_digest(request.request_messages[:tail], request.previous_summary)


def ahead_tail_budget(request: CompactionRequest) -> int:
    """The tail the job keeps, so that the compaction using it keeps what inline compaction would.

    With ``eager_compaction_at`` a job starts only at a call whose early compaction would be due
    (:func:`after_call`) and is used by the next early call: it keeps the eager tail, as that
    compaction would. Without it the summary is used once the context is over budget, when the
    tokens still free now (``usable - total``) have joined the tail: the job keeps the
    full-window tail less those, so the next compaction comes no sooner than inline's.
    """
    usable = request.usable
    eager_at = request.config.eager_compaction_at
    if eager_at is not None:
        return eager_tail_budget(usable, eager_at)
    headroom = request.early_headroom or 0  # the context as returned fits
    return max(preserve_recent(usable, None) - headroom, EAGER_TAIL_MIN)


def _still_ready(record: RememberedCompaction | None, request: CompactionRequest) -> bool:
    """Does the session already hold a summary this history extends (nothing to do)?"""
    if record is None or record.anchor_len != request.view_to_orig[0]:
        return False
    messages = request.request_messages
    return (len(messages) > record.head_len
            and head_digest(messages[:record.head_len], request.previous_summary) == record.head_digest)


def _log_ready(job: AheadJob, tail: int, cost: dict[str, object] | None) -> None:
    """The job's summariser cost goes to the log: no call's answer reports it (the call that
    uses the summary made no summariser call)."""
    if cost is None:  # the session's own model: its tally is the router's, per request
        job.log.info("summary ahead of time ready for %s (tail from message %d)", job.session, tail)
        return
    job.log.info("summary ahead of time ready for %s (tail from message %d): %d summariser calls on %s, "
                 "%d input and %d output tokens", job.session, tail, cost["calls"], cost["model"],
                 cost["input_tokens"], cost["output_tokens"])


async def run_job(job: AheadJob) -> bool:
    """Summarise the planned head under the session's lease and keep the result (or nothing).

    ``True`` when the session then holds a ready summary this history extends (made now or
    before): the job has settled this stretch of history. ``False`` when it may still be worth
    a later job: nothing to summarise yet, the lease held elsewhere, the summariser failed."""
    request = job.request
    planned = _planned(request)
    if planned is None:
        return False
    head_len, tail, digest = planned
    key = record_key(job.session)
    if _still_ready(await job.store.get(key), request):
        return True
    nonce: str | None = None
    if job.lease_store is not None:
        nonce = await lease.acquire(job.lease_store, job.clock, job.session,
                                    lease.ttl_ms(request.config.lease_ttl_secs))
        if nonce is None:
            job.log.debug("summary ahead of time skipped: lease %s is held", job.session)
            return False
    try:
        if _still_ready(await job.store.get(key), request):
            return True  # another process finished one while this job waited for the lease
        try:
            # Where inline compaction's summariser calls go (``summarizer_model``), resolved
            # inside the job: a model that cannot be resolved costs the job, never a call.
            target = await summarizer_target(request.model, request.config, job.resolver, job.log)
        except errors.HandlerError as exc:
            job.log.warning("summary ahead of time not made: %s", exc)
            return False
        try:
            produced = await produce_summary(
                job.summarizer,
                request.model,
                request.view[:head_len],
                request.usable if request.summarizer_budget is None else request.summarizer_budget,
                previous_summary=request.previous_summary,
                instructions=None,
                estimator=request.estimator,
                # The summariser's summary or none: the no-wait path makes extractive ones itself.
                config=replace(request.config, summarizer_fallback="none"),
                log=job.log,
                chunk_budget=request.chunk_budget,
                target=target,
                conversation=request.conversation,
            )
        except SummarizeError as exc:
            job.log.warning("summary ahead of time not made: %s", exc)
            return False
        await job.store.put(key, RememberedCompaction(
            summary=produced.text, head_len=tail, head_digest=digest,
            anchor_len=request.view_to_orig[0], retained_items=produced.retained_items))
        _log_ready(job, tail, cost_report(target))
        return True
    finally:
        if job.lease_store is not None and nonce is not None:
            await lease.release(job.lease_store, job.session, nonce)

