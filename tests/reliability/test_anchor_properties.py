"""No pass ever changes an anchor message: generated histories through context::assemble.

Every case pins 1 to 4 leading messages (by configuration or per call) and runs the whole
pipeline, with or without a summariser, the extractive fallback, the retention check and the
drop-oldest fallback. A successful answer starts with exactly the pinned messages, their call
results included; a failure is an honest ``context/overflow``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_manager.config.parse import parse_config_value
from context_manager.core.anchor import anchor_length
from context_manager.core.counting.estimate import estimator_for_model
from context_manager.wire.codec import dumps
from context_manager.wire.decode import decode_messages
from context_manager.wire.errors import CallError

from .strategies import RELIABILITY, configs, histories, models, sessions, short_text
from .support import FakeSummarizer, MemoryLeaseStore, breakdown_total, context, run

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

