"""Step definitions of features/sessions_never_die.feature."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest
from compaction_support import AC, FR, A, FakeSummarizer, MemoryLeaseStore, U, X, history
from pytest_bdd import given, parsers, scenarios, then, when

from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.handlers import assemble as assemble_handler
from context_manager.handlers import compact as compact_handler
from context_manager.handlers.context import HandlerContext
from context_manager.ports import ManualClock
from context_manager.wire.codec import dumps_wire

scenarios("sessions_never_die.feature")


def unescape(text: str) -> str:
    return text.replace("\\n", "\n")


def tool_rounds(count: int, units: int, first: int = 1) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for k in range(first, first + count):
        call_id = f"c{k}"
        messages += [AC(call_id, "shell::run"), FR(call_id, "shell::run", X(units))]
    return messages


@pytest.fixture
def world():
    return {
        "config": DEFAULT_CONFIG,
        "summarizer": FakeSummarizer(),
        "store": MemoryLeaseStore(),
        "model": None,
        "messages": [],
        "summary": None,
        "response": None,
    }


def run(world, handler, payload):
    ctx = HandlerContext(config=world["config"], summarizer=world["summarizer"],
                         lease_store=world["store"], clock=ManualClock(1_000_000))
    world["response"] = asyncio.run(handler.handle(payload, ctx))


# --- given ----------------------------------------------------------------------------------


@given(parsers.parse('the summariser answers "{reply}"'))
def summariser_answers(world, reply):
    world["summarizer"] = FakeSummarizer(replies=[unescape(reply)] * 8)


@given(parsers.parse("an inline model of {window:d} tokens with {output:d} for output"))
def inline_model(world, window, output):
    world["model"] = {"id": "small", "limits": {"context_window": window, "max_output_tokens": output}}


@given(parsers.parse("the worker configuration {config}"))
def worker_configuration(world, config):
    world["config"] = replace(DEFAULT_CONFIG, **json.loads(config))


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


@when("the history is assembled")
def assemble(world):
    payload = {"messages": world["messages"], "model": world["model"], "system_prompt": "Base."}
    if world["summary"] is not None:
        payload["options"] = {"previous_summary": world["summary"]}
    run(world, assemble_handler, payload)


@when(parsers.parse("the history is compacted with options {options}"))
def compact(world, options):
    run(world, compact_handler, {"messages": world["messages"], "model": world["model"],
                                 "options": json.loads(options)})


@when("the harness keeps the summary and the messages from the reported index onward")
def keep_round_trip(world):
    applied = world["response"]["applied"]
    world["summary"] = applied["summary"]
    world["messages"] = world["messages"][applied["tail_start_index"]:]
    world["summarizer"].requests.clear()


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


@then(parsers.parse("the summariser was called {count:d} time"))
@then(parsers.parse("the summariser was called {count:d} times"))
def summariser_calls(world, count):
    assert world["summarizer"].calls == count


@then(parsers.parse('the summariser was asked to revise "{summary}"'))
def asked_to_revise(world, summary):
    first = world["summarizer"].requests[0]
    assert f"<previous-summary>\n{unescape(summary)}\n</previous-summary>" in first.system_prompt


@then("the kept history has no user message")
def no_user(world):
    assert not any(m["role"] == "user" for m in world["messages"])


@then(parsers.parse("the wire response is {body}"))
def wire_response(world, body):
    assert dumps_wire(world["response"]).decode() == body


@then(parsers.parse('the response status is "{status}"'))
def response_status(world, status):
    assert world["response"]["status"] == status


@then("the response has no tail")
def no_tail(world):
    assert world["response"]["tail_start_index"] is None
