"""Step definitions of features/sessions_never_die.feature."""

from __future__ import annotations

import json
from typing import Any

import pytest
from compaction_support import AC, FR, A, MemoryLeaseStore, U, X, history
from pytest_bdd import given, parsers, scenarios, then, when

from context_manager.handlers import compact as compact_handler
from context_manager.ports import ManualClock
from tests.features.world import new_world, run_handler

scenarios("sessions_never_die.feature")


def tool_rounds(count: int, units: int, first: int = 1) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for k in range(first, first + count):
        call_id = f"c{k}"
        messages += [AC(call_id, "shell::run"), FR(call_id, "shell::run", X(units))]
    return messages


@pytest.fixture
def world():
    return new_world(store=MemoryLeaseStore(), clock=ManualClock(1_000_000), system_prompt="Base.")


# --- given ----------------------------------------------------------------------------------


@given(parsers.parse('a history of {count:d} tool rounds of {units:d} tokens each and the answer "{answer}"'))
def tool_round_history(world, count, units, answer):
    world["messages"] = history(*tool_rounds(count, units), A(answer))


@given(parsers.parse("a history of 1 tool round of {units:d} tokens"))
def lone_round(world, units):
    world["messages"] = history(*tool_rounds(1, units))


@given(parsers.parse('a single-task history "{task}" with {count:d} tool rounds of {units:d} tokens each'))
def single_task(world, task, count, units):
    world["messages"] = history(U(task), *tool_rounds(count, units))


# --- when -----------------------------------------------------------------------------------


@when(parsers.parse("the history is compacted with options {options}"))
def compact(world, options):
    run_handler(world, compact_handler, {"messages": world["messages"], "model": world["model"],
                                         "options": json.loads(options)})


@when(parsers.parse("{count:d} more tool rounds of {units:d} tokens each are appended"))
def append_rounds(world, count, units):
    last = world["messages"][-1]["timestamp"]
    first_id = sum(1 for m in world["messages"] if m["role"] == "assistant") + 100
    world["messages"] = world["messages"] + history(
        *tool_rounds(count, units, first=first_id), first_timestamp=last + 1)


# --- then -----------------------------------------------------------------------------------


@then(parsers.parse("the history was compacted from request message {index:d} onward with a head of {tokens:d} tokens"))
def compacted(world, index, tokens):
    applied = world["response"]["applied"]
    assert (applied["compacted"], applied["tail_start_index"], applied["tokens_before"]) == (True, index, tokens)
    assert len(world["response"]["messages"]) == len(world["messages"]) - index


@then("the history was not compacted")
def not_compacted(world):
    applied = world["response"]["applied"]
    assert applied["compacted"] is False
    assert "tail_start_index" not in applied and "summary" not in applied


@then(parsers.parse("the assembled context holds {tokens:d} tokens"))
def assembled_tokens(world, tokens):
    assert world["response"]["token_count"] == tokens


@then("the kept history has no user message")
def no_user(world):
    assert not any(m["role"] == "user" for m in world["messages"])


@then("the response has no tail")
def no_tail(world):
    assert world["response"]["tail_start_index"] is None
