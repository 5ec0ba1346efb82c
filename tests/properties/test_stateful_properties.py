"""Generated-case properties of context::assemble with the opt-in keys that keep state or rewrite
history switched on: the anchor, the retention policy, summary reuse, usage calibration, the
fallbacks, summary placement, cache-aware and eager reduction, and the lease and session stores
(``state`` ones over the engine's state functions, in process).

Each case is a short conversation of one session: the history, then the same history with one
more user turn, both under the session's ``lease_key``, so what the first call remembers (a
summary, the ledger of what was sent, a lease) is there for the second. Every answer must fit,
keep every kept function result with its call, and lose no message outside the ranges it
reports as reduced (the summarised head, the dropped ranges); the whole conversation, replayed
against fresh stores, must answer byte for byte the same.

Cases run: an eighth of ``strategies.EXAMPLES`` (each makes four calls).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import event, given, settings
from hypothesis import strategies as st

from context_manager.core.anchor import anchor_length
from context_manager.wire.codec import dumps, dumps_wire
from context_manager.wire.decode import decode_messages
from context_manager.wire.errors import CallError
from testengine import CallFailed, FakeRouter
from tests.reliability.engine_support import routed_budgets, worker_on_engine
from tests.reliability.strategies import (
    EXAMPLES,
    RELIABILITY,
    RETENTION_POLICIES,
    histories,
    models,
    opt_in_configs,
    sessions,
    short_text,
)
from tests.reliability.support import (
    FakeSummarizer,
    breakdown_total,
    call_ids,
    result_ids,
    run,
    stateful_context,
)

OVERFLOW_PREFIX = "handler error: context/overflow: "
SUMMARY_HEADING = "# Conversation summary"

# (property, outcome) -> count, written to the reliability figures after the module under this
# suite's own key (tests/properties/conftest.py).
FIGURES_KEY = "properties-stateful"
OUTCOMES: Counter[tuple[str, str]] = Counter()
IN_PROCESS, TWO_PROCESSES = "opt-in", "opt-in, two processes"


def note(prop: str, *outcomes: str) -> None:
    for outcome in outcomes:
        OUTCOMES[(prop, outcome)] += 1
        event(outcome)


def is_summary_message(message: dict[str, Any]) -> bool:
    """The leading user message ``summary_placement: message`` puts the summary in."""
    content = message["content"]
    return (message["role"] == "user" and len(content) == 1 and content[0]["type"] == "text"
            and content[0]["text"].startswith(SUMMARY_HEADING))


def reduced_indices(history: list[dict[str, Any]], applied: dict[str, Any], pinned: int) -> set[int]:
    """Request indices the answer reports as reduced: the remembered head a reused summary stands
    for, the summarised head and the dropped ranges, all after the pinned anchor.

    An answer that reused a remembered summary is the round trip's (README, summary reuse): its
    indices count the anchor, then the request's messages from ``reused_from_index`` on.
    """
    facing = [i for i, m in enumerate(history) if m["role"] != "custom"]
    first = facing[pinned] if pinned < len(facing) else len(history)
    anchor_end = facing[pinned - 1] + 1 if pinned else 0
    reused = applied["reused_from_index"] if applied.get("summary_reused") else None

    def in_request(index: int) -> int:
        return index if reused is None or index < anchor_end else index - anchor_end + reused

    gone: set[int] = set()
    if reused is not None:
        gone.update(range(first, reused))
    if applied["compacted"]:
        gone.update(range(first, in_request(applied["tail_start_index"])))
    for start, end in applied.get("dropped_ranges", []):
        gone.update(range(in_request(start), in_request(end)))
    return gone


def check_answer(prop: str, history: list[dict[str, Any]], response: dict[str, Any],
                 config: dict[str, Any]) -> None:
    applied = response["applied"]
    note(prop, "answered", *[name for name, done in (
        ("compacted", applied["compacted"]), ("summary reused", applied.get("summary_reused", False)),
        ("dropped", bool(applied.get("dropped_ranges"))), ("anchored", applied.get("anchor_tokens", 0) > 0),
        ("truncated", any(w.get("code") == "truncated" for w in applied.get("warnings", [])))) if done])
    assert response["token_count"] <= response["usable"]
    assert response["token_count"] == breakdown_total(response, 0)
    returned = response["messages"]
    assert all(m["role"] != "custom" for m in returned)
    # Nothing outside the reduced ranges is lost, and nothing is reordered.
    decoded = decode_messages(history)
    pinned = anchor_length([m for m in decoded if m["role"] != "custom"], config["anchor_messages"])
    gone = reduced_indices(history, applied, pinned)
    expected = [(m["role"], m["timestamp"]) for i, m in enumerate(history)
                if m["role"] != "custom" and i not in gone]
    kept = [(m["role"], m["timestamp"]) for m in returned if not is_summary_message(m)]
    assert kept == expected
    # No kept function result is separated from its call.
    calls_made = call_ids(decoded)
    kept_calls = call_ids(returned)
    for answered in result_ids(returned):
        if answered in calls_made:
            assert answered in kept_calls, answered


def conversation(history: list[dict[str, Any]], next_turn: str, model: dict[str, Any],
                 config: dict[str, Any], reply: str) -> list[tuple[list[dict[str, Any]], Any]]:
    """The two calls of the session against fresh stores: (history, answer or error text)."""
    ctx = stateful_context(config, FakeSummarizer(reply=lambda request: reply))
    later = [*history, {"role": "user", "content": [{"type": "text", "text": next_turn}],
                        "timestamp": 1000 + len(history)}]
    outcomes: list[tuple[list[dict[str, Any]], Any]] = []
    for messages in (history, later):
        payload = {"messages": messages, "model": model, "options": {"lease_key": "session-1"}}
        try:
            outcomes.append((messages, run("context::assemble", payload, ctx)))
        except CallError as exc:
            outcomes.append((messages, exc))
    return outcomes


@settings(RELIABILITY, max_examples=max(1, EXAMPLES // 8))
@given(st.one_of(histories(max_rounds=18), sessions()), models(), opt_in_configs(), short_text,
       st.sampled_from(["Summary: the earlier work.", "Summary: so far.\n\n## Retained details\n- src/app.py"]))
def test_opt_in_keys_fit_keep_calls_with_results_lose_nothing_unreported_and_replay_alike(
    history: list[dict[str, Any]], model: dict[str, Any], config: dict[str, Any], next_turn: str,
    reply: str,
) -> None:
    OUTCOMES[(IN_PROCESS, "cases")] += 1
    first = conversation(history, next_turn, model, config, reply)
    for messages, outcome in first:
        if isinstance(outcome, CallError):
            note(IN_PROCESS, "context/overflow")
            assert outcome.code == "invocation_failed"
            assert outcome.message.startswith(OVERFLOW_PREFIX), outcome.message
        else:
            check_answer(IN_PROCESS, messages, outcome, config)
    again = conversation(history, next_turn, model, config, reply)
    assert [_bytes(o) for _, o in again] == [_bytes(o) for _, o in first]


def _bytes(outcome: Any) -> bytes:
    if isinstance(outcome, CallError):
        return f"{outcome.code}: {outcome.message}".encode()
    return dumps(outcome)


# ---------------------------------------------------------------- the same through a worker with two serving processes

# Every opt-in key on at once, in the worker's seed file and in process alike.
ALL_ON = {
    "anchor_messages": 1, "retention": RETENTION_POLICIES[1], "summary_reuse": True,
    "count_calibration": "usage", "summary_check": "append", "summarizer_fallback": "extractive",
    "overflow_fallback": "drop_oldest", "summary_placement": "message", "reduce_to": 0.7,
    "lease_store": "state", "session_store": "state",
}
ENGINE_EXAMPLES = max(1, EXAMPLES // 50)


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tmp_path = tmp_path_factory.mktemp("two-processes")
    seed = tmp_path / "seed.yaml"
    seed.write_text(yaml.safe_dump(ALL_ON))
    router = FakeRouter(budgets=routed_budgets(), summary=ROUTER_SUMMARY)
    with worker_on_engine(tmp_path, router=router, args=("--config", str(seed), "--processes", "2")) as (
            engine, process):
        yield engine


ROUTER_SUMMARY = "Summary: the earlier work."
SESSIONS = itertools.count()  # a new session for every case the worker sees, replays included


@settings(RELIABILITY, max_examples=ENGINE_EXAMPLES)
@given(sessions(), models(), short_text)
def test_two_serving_processes_answer_each_conversation_as_one_process_does(
    two_processes: Any, history: list[dict[str, Any]], model: dict[str, Any], next_turn: str,
) -> None:
    """Each generated conversation through a worker with `--processes 2` and every opt-in key on
    answers exactly as the same conversation in process against fresh stores. Each case is a
    session of its own (its key, its first message and timestamps no other case has), as real
    sessions are: what a serving process remembers (the summaries, the ledger of what it sent)
    is found by content, so generated cases sharing messages would find each other's."""
    engine = two_processes
    OUTCOMES[(TWO_PROCESSES, "cases")] += 1
    tag = next(SESSIONS)
    opening = {"role": "user", "content": [{"type": "text", "text": f"task {tag}"}], "timestamp": 999}
    history = [{**m, "timestamp": m["timestamp"] + tag * 10**6} for m in [opening, *history]]
    ctx = stateful_context(ALL_ON, FakeSummarizer(reply=lambda request: ROUTER_SUMMARY))
    later = [*history, {"role": "user", "content": [{"type": "text", "text": next_turn}],
                        "timestamp": history[-1]["timestamp"] + 1}]
    for messages in (history, later):
        payload = {"messages": messages, "model": model, "options": {"lease_key": f"session-{tag}"}}
        try:
            expected: Any = orjson.loads(dumps_wire(run("context::assemble", payload, ctx)))
        except CallError as exc:
            expected = (exc.code, exc.message)
        try:
            answer: Any = engine.call("context::assemble", payload, timeout=60)
        except CallFailed as failed:
            answer = (failed.code, failed.message)
        if isinstance(expected, dict):
            check_answer(TWO_PROCESSES, messages, expected, ALL_ON)
        else:
            note(TWO_PROCESSES, "context/overflow")
        assert answer == expected
