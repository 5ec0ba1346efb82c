"""``options.preview_only`` over generated cases: after an ordinary call has left whatever it
keeps (a remembered compaction, ledger records, leases), a preview of the same history for
another model answers byte for byte as that request with ``allow_compaction: false`` does, calls
no summariser, takes no lease and leaves the session store and the ledger exactly as they were
(``core.preview``).

Runs a quarter of ``strategies.EXAMPLES`` (500 by default) fixed, derandomised cases: each makes
three calls.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.core.counting.calibration import SentLedger
from context_manager.wire.codec import dumps_wire
from context_manager.wire.errors import CallError
from tests.reliability.strategies import EXAMPLES, RELIABILITY, assemble_options, configs, histories, models, sessions
from tests.reliability.support import FakeSummarizer, MemoryLeaseStore, context, run


def outcome(payload: dict[str, Any], ctx: Any) -> str:
    try:
        return dumps_wire(run("context::assemble", payload, ctx)).decode()
    except CallError as exc:
        return f"error: {exc.code}: {exc.message}"


def with_options(payload: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {**payload, "options": {**(payload.get("options") or {}), **options}}


@settings(RELIABILITY, max_examples=max(1, EXAMPLES // 4))
@given(st.one_of(histories(max_rounds=18), sessions()), models(), models(), configs(), assemble_options(),
       st.integers(0, 2), st.sampled_from(["error", "drop_oldest"]), st.sampled_from(["none", "extractive"]))
def test_a_preview_answers_as_allow_compaction_false_and_leaves_nothing(
    history: list[dict[str, Any]], model: dict[str, Any], other: dict[str, Any], config: dict[str, Any],
    options: Any, anchor: int, fallback: str, summarizer_fallback: str,
) -> None:
    config = {**config, "summary_reuse": True, "count_calibration": "usage", "summary_check": "append",
              "anchor_messages": anchor, "overflow_fallback": fallback,
              "summarizer_fallback": summarizer_fallback}
    store, ledger = MemorySessionStore(), SentLedger()
    summarizer, leases = FakeSummarizer(), MemoryLeaseStore()
    ctx = context(config, summarizer=summarizer, lease_store=leases, session_store=store, sent_ledger=ledger)
    payload: dict[str, Any] = {"messages": history, "model": model}
    if options is not None:
        payload["options"] = options
    warm = outcome(payload, ctx)  # what an ordinary call keeps
    event("the ordinary call compacted" if '"compacted":true' in warm else "no compaction before")

    def kept() -> tuple[Any, ...]:
        return (list(store._records.keys()), list(store._records.values()), list(ledger._entries.items()),
                summarizer.calls, dict(leases.records))

    before = kept()
    switched = {**payload, "model": other}
    preview = outcome(with_options(switched, preview_only=True), ctx)
    assert kept() == before
    assert preview == outcome(with_options(switched, allow_compaction=False), ctx)
    event("preview answered" if not preview.startswith("error") else "preview failed as the control")
