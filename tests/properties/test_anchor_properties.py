"""No pass ever changes an anchor message: generated histories through context::assemble.

Every case pins 1 to 4 leading messages (by configuration or per call) and runs the whole
pipeline, with or without a summariser, the extractive fallback, the retention check and the
drop-oldest fallback. A successful answer starts with exactly the pinned messages, their call
results included; a failure is an honest ``context/overflow``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager.config.parse import parse_config_value
from context_manager.core.anchor import anchor_length
from context_manager.core.counting.estimate import estimator_for_model
from context_manager.wire.codec import dumps
from context_manager.wire.decode import decode_messages
from context_manager.wire.errors import CallError
from tests.reliability.strategies import (
    EXAMPLES,
    RELIABILITY,
    agent_runs,
    configs,
    histories,
    models,
    sessions,
    short_text,
)
from tests.reliability.support import FakeSummarizer, MemoryLeaseStore, breakdown_total, context, run

pytestmark = pytest.mark.slow

OVERFLOW_PREFIX = "handler error: context/overflow: "
# A previous summary whose retained details the check carries into the next one.
CARRYING = "Summary: so far.\n\n## Retained details\n- Fix src/app.py\n  and its tests\n- /tmp/build.log"

retention = st.fixed_dictionaries({
    "summary_check": st.sampled_from(["off", "append"]),
    "summarizer_fallback": st.sampled_from(["none", "extractive"]),
    "working_set": st.booleans(),
    "overflow_fallback": st.sampled_from(["error", "drop_oldest"]),
})


@RELIABILITY
@given(st.one_of(histories(max_rounds=18), sessions()), models(), configs(), retention,
       st.integers(1, 4), st.booleans(), st.sampled_from([None, "Summary: so far.", "", CARRYING]),
       st.one_of(st.none(), short_text))
def test_no_pass_changes_an_anchor_message(
    history: list[dict[str, Any]], model: dict[str, Any], config: dict[str, Any],
    extra: dict[str, Any], anchor: int, per_call: bool, reply: str | None,
    previous_summary: str | None,
) -> None:
    options: dict[str, Any] = {}
    config = {**config, **extra}
    if per_call:
        options["anchor_messages"] = anchor
    else:
        config["anchor_messages"] = anchor
    if previous_summary is not None:
        options["previous_summary"] = previous_summary
    summarizer = None if reply is None else FakeSummarizer(reply=lambda request: reply)
    ctx = context(config, summarizer=summarizer, lease_store=MemoryLeaseStore())
    payload: dict[str, Any] = {"messages": history, "model": model, "options": options}
    try:
        response = run("context::assemble", payload, ctx)
    except CallError as exc:
        assert exc.message.startswith(OVERFLOW_PREFIX), exc.message
        return
    view = [m for m in decode_messages(history) if m["role"] != "custom"]
    pinned = anchor_length(view, anchor)
    returned = response["messages"]
    assert [dumps(m) for m in returned[:pinned]] == [dumps(m) for m in view[:pinned]]
    estimator = estimator_for_model(model["id"], parse_config_value(config), ctx.tokenizers)
    assert response["applied"]["anchor_tokens"] == sum(estimator.message(m) for m in view[:pinned])
    assert response["token_count"] <= response["usable"]
    assert response["token_count"] == breakdown_total(response, 0)
    if response["applied"]["compacted"]:
        assert response["applied"]["tail_start_index"] > (
            [i for i, m in enumerate(history) if m["role"] != "custom"][pinned - 1] if pinned else -1)



# --- a caller that sends back only the tail, or the anchor and the tail --------------------------

carrying = st.fixed_dictionaries({
    "summary_check": st.sampled_from(["off", "append"]),
    "summarizer_fallback": st.sampled_from(["none", "extractive"]),
    "overflow_fallback": st.sampled_from(["error", "drop_oldest"]),
    "summary_placement": st.sampled_from(["system_prompt", "message"]),
})


# Windows where a run of rounds compacts again and again (mostly 2,500 to 9,000 tokens).
run_models = st.builds(
    lambda window, output, model_id: {"id": model_id, "limits": {
        "context_window": window, "max_output_tokens": output}},
    st.one_of(st.integers(1500, 2500), st.integers(2500, 9000), st.integers(2500, 9000)),
    st.integers(0, 600), st.sampled_from(["m", "gpt-4o"]))


# A tenth of the usual cases (200 by default): each runs a whole harness loop of up to a dozen
# assemble calls, so the full count would cost minutes of CI.
@settings(RELIABILITY, max_examples=max(1, EXAMPLES // 10))
@given(st.one_of(agent_runs(), agent_runs(), sessions()), run_models, configs(), carrying,
       st.integers(1, 3), st.booleans(), st.booleans())
def test_the_anchor_survives_every_round_trip_once(
    history: list[dict[str, Any]], model: dict[str, Any], config: dict[str, Any],
    extra: dict[str, Any], anchor: int, resend: bool, summarizer_on: bool,
) -> None:
    """A harness loop: one call before each assistant message after the anchor; after a
    compaction the caller keeps the summary and its messages from ``tail_start_index`` on,
    re-sending the anchor's request messages first (``resend``) or not. Every answer starts with
    the anchor of the whole history, verbatim, and holds each of its messages exactly once."""
    config = {**config, **extra, "anchor_messages": anchor}
    summarizer = FakeSummarizer(reply=lambda request: "Summary: so far.") if summarizer_on else None
    ctx = context(config, summarizer=summarizer, lease_store=MemoryLeaseStore())
    facing = [i for i, m in enumerate(history) if m["role"] != "custom"]
    view = decode_messages([history[i] for i in facing])
    pinned = anchor_length(view, anchor)
    if pinned == 0:
        return
    expected = [dumps(m) for m in view[:pinned]]
    anchor_end = facing[pinned - 1] + 1  # the request messages holding the anchor
    held_from, summary, lead = anchor_end, None, history[:anchor_end]
    for index in range(anchor_end, len(history)):
        if history[index]["role"] != "assistant":
            continue
        sent = lead + history[held_from:index]
        options = {} if summary is None else {"previous_summary": summary}
        try:
            response = run("context::assemble", {"messages": sent, "model": model,
                                                 "options": options}, ctx)
        except CallError as exc:
            assert exc.message.startswith(OVERFLOW_PREFIX), exc.message
            continue
        returned = [dumps(m) for m in response["messages"]]
        assert returned[:pinned] == expected
        assert all(returned.count(m) == 1 for m in expected)
        assert response["token_count"] <= response["usable"]
        assert "context-manager:anchor" not in response["system_prompt"]
        applied = response["applied"]
        if applied["compacted"]:
            assert applied["tail_start_index"] >= len(lead)
            held_from += applied["tail_start_index"] - len(lead)
            summary = applied["summary"]
            lead = history[:anchor_end] if resend else []
