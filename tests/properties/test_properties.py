"""Generated-case properties of the four public functions (spec 02 §10 invariants and more).

Every property runs ``strategies.EXAMPLES`` (2,000 by default) fixed, derandomised cases.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
from hypothesis import event, given
from hypothesis import strategies as st

from context_manager.core.passes.prune import placeholder
from context_manager.wire.codec import Fragment, dumps, loads
from context_manager.wire.decode import decode_messages
from context_manager.wire.errors import CallError
from tests.reliability.strategies import (
    RELIABILITY,
    assemble_options,
    configs,
    histories,
    models,
    prune_options,
    sessions,
    short_text,
    system_prompts,
    tools,
)
from tests.reliability.support import (
    FakeSummarizer,
    MemoryLeaseStore,
    breakdown_total,
    call_ids,
    context,
    result_ids,
    run,
    timestamps,
)

# (property, outcome) -> executed cases, written to the reliability figures after the module under
# this suite's own key (tests/properties/conftest.py).
FIGURES_KEY = "properties"
OUTCOMES: Counter[tuple[str, str]] = Counter()


def note(prop: str, *outcomes: str) -> None:
    OUTCOMES[(prop, "cases")] += 1
    for outcome in outcomes:
        OUTCOMES[(prop, outcome)] += 1
        event(outcome)

OVERFLOW_PREFIX = "handler error: context/overflow: "
# Longest placeholder these histories can produce: 61 bytes of fixed text, a function id of at
# most 5 bytes and a token count of at most 5 digits (texts stay under 8,000 bytes).
LONGEST_PLACEHOLDER = 61 + 5 + 5


def assemble_payload(history: list[dict[str, Any]], model: dict[str, Any], options: Any,
                     prompt: str | None, tool_list: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"messages": history, "model": model}
    if options is not None:
        payload["options"] = options
    if prompt is not None:
        payload["system_prompt"] = prompt
    if tool_list is not None:
        payload["tools"] = tool_list
    return payload


def overhead_of(options: Any) -> int:
    return (options or {}).get("request_overhead_tokens") or 0


def check_success(prop: str, response: dict[str, Any], options: Any) -> None:
    applied = response["applied"]
    note(prop, "answered", *[name for name, done in (
        ("capped", applied["capped_parts"] > 0), ("pruned", applied["pruned"]),
        ("compacted", applied["compacted"])) if done])
    assert response["token_count"] <= response["usable"]
    assert response["token_count"] == breakdown_total(response, overhead_of(options))
    assert all(m["role"] != "custom" for m in response["messages"])


def check_failure(prop: str, exc: CallError) -> None:
    # Inline limits always resolve, so the only legitimate failure is an honest overflow.
    note(prop, "context/overflow")
    assert exc.code == "invocation_failed"
    assert exc.message.startswith(OVERFLOW_PREFIX), exc.message


@RELIABILITY
@given(histories(), models(), configs(), assemble_options(), system_prompts, tools)
def test_assemble_fits_keeps_order_and_reports_a_consistent_breakdown(
    history: list[dict[str, Any]], model: dict[str, Any], config: dict[str, Any],
    options: Any, prompt: str | None, tool_list: Any,
) -> None:
    """Without a summariser only cap, prune and emergency reduction run: they never add, drop
    or reorder a message, and custom messages never reach the model-facing list."""
    payload = assemble_payload(history, model, options, prompt, tool_list)
    try:
        response = run("context::assemble", payload, context(config))
    except CallError as exc:
        check_failure("assemble", exc)
        return
    check_success("assemble", response, options)
    expected = [m["timestamp"] for m in history if m["role"] != "custom"]
    assert timestamps(response["messages"]) == expected
    assert response["applied"]["compacted"] is False


@RELIABILITY
@given(st.one_of(histories(max_rounds=18), sessions()), models(), configs(), assemble_options(),
       st.one_of(st.just("Summary: the earlier work."), short_text), system_prompts)
def test_compaction_keeps_each_kept_result_with_its_call(
    history: list[dict[str, Any]], model: dict[str, Any], config: dict[str, Any],
    options: Any, summary: str, prompt: str | None,
) -> None:
    """With a summariser, the returned list is a suffix of the model-facing history and a kept
    function result never loses its call to the summarised head."""
    summarizer = FakeSummarizer(reply=lambda request: summary)
    ctx = context(config, summarizer=summarizer, lease_store=MemoryLeaseStore())
    payload = assemble_payload(history, model, options, prompt, None)
    try:
        response = run("context::assemble", payload, ctx)
    except CallError as exc:
        check_failure("compaction", exc)
        return
    check_success("compaction", response, options)
    view = [m["timestamp"] for m in history if m["role"] != "custom"]
    kept = timestamps(response["messages"])
    assert kept == view[len(view) - len(kept):]
    if response["applied"]["compacted"]:
        assert 0 < len(kept) < len(view)
        assert response["applied"]["tail_start_index"] == [
            i for i, m in enumerate(history) if m["timestamp"] == kept[0]][0]
    else:
        assert kept == view
    calls_made = call_ids(decode_messages(history))
    kept_calls = call_ids(response["messages"])
    for answered in result_ids(response["messages"]):
        if answered in calls_made:
            assert answered in kept_calls, answered


@RELIABILITY
@given(histories(), prune_options(min_output_chars=LONGEST_PLACEHOLDER))
def test_prune_is_idempotent_and_keeps_every_message(
    history: list[dict[str, Any]], options: dict[str, Any],
) -> None:
    ctx = context()
    first = run("context::prune", {"messages": history, "options": options}, ctx)
    assert timestamps(first["messages"]) == timestamps(history)
    assert [m["role"] for m in first["messages"]] == [m["role"] for m in history]
    longest = max((len(t.encode()) for t in _placeholder_texts(first["messages"])), default=0)
    assert longest <= options["max_output_chars"]
    note("prune", *(["pruned"] if first["pruned_parts"] else []))
    second = run("context::prune", {"messages": first["messages"], "options": options}, ctx)
    assert (second["pruned_parts"], second["pruned_tokens"]) == (0, 0)
    assert dumps(second["messages"]) == dumps(first["messages"])


def _placeholder_texts(messages: list[dict[str, Any]]) -> list[str]:
    texts = []
    for m in messages:
        contents = [m["content"]] if m["role"] == "function_result" else [
            b["content"] for b in m["content"] if b["type"] == "function_result"]
        for content in contents:
            if len(content) == 1 and content[0]["type"] == "text" and \
                    content[0]["text"].startswith("[output of "):
                texts.append(content[0]["text"])
    return texts


@RELIABILITY
@given(histories(customs=False, images=False), st.sampled_from(["m", "gpt-4o", "claude-x"]),
       st.sampled_from(["heuristic", "auto"]), system_prompts, tools)
def test_count_tokens_equals_assembles_initial_count(
    history: list[dict[str, Any]], model_id: str, estimator: str, prompt: str | None,
    tool_list: Any,
) -> None:
    if prompt is not None:
        prompt = prompt.rstrip()
    model = {"id": model_id, "limits": {"context_window": 10**9, "max_output_tokens": 0}}
    ctx = context({"estimator": estimator})
    counted = run("context::count-tokens",
                  assemble_payload(history, model, None, prompt, tool_list), ctx)
    assembled = run("context::assemble",
                    assemble_payload(history, model, None, prompt, tool_list), ctx)
    note("count-tokens", f"estimator {estimator}")
    assert counted["tokens"] == assembled["applied"]["initial_token_count"]
    assert counted["estimator"] == assembled["breakdown"]["estimator"]


def _plain(value: Any) -> Any:
    """Comparable form: fragments (free-form floats) become their bytes."""
    if isinstance(value, Fragment):
        return ("fragment", orjson.dumps(value))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@RELIABILITY
@given(histories(max_rounds=6))
def test_serializer_round_trips_decoded_messages(history: list[dict[str, Any]]) -> None:
    note("serializer")
    decoded = decode_messages(history)
    again = decode_messages(loads(dumps(decoded)))
    assert _plain(again) == _plain(decoded)
    assert [list(m) for m in again] == [list(m) for m in decoded]  # record key order too
    assert dumps(again) == dumps(decoded)


def test_the_longest_placeholder_bound_holds() -> None:
    assert len(placeholder("fs::w", 99999).encode()) == LONGEST_PLACEHOLDER
