"""Step definitions of features/compact.feature."""

from __future__ import annotations

import json

import pytest
from compaction_support import A, FakeSummarizer, MemoryLeaseStore, U, X, history
from pytest_bdd import given, parsers, scenarios, then, when

from context_manager.core.compaction import lease
from context_manager.handlers import assemble as assemble_handler
from context_manager.handlers import compact as compact_handler
from context_manager.ports import LeaseRecord, ManualClock, SummarizerFailed, SummarizerUnavailable
from context_manager.wire.decode import decode_messages
from tests.features.world import Catalog, new_world, run_handler, unescape

scenarios("compact.feature")


@pytest.fixture
def world():
    catalog = Catalog()
    return new_world(router=catalog, resolver=catalog, store=MemoryLeaseStore(), clock=ManualClock(1_000_000))


# --- given ----------------------------------------------------------------------------------


@given(parsers.parse('the summariser fails with "{kind}" "{detail}"'))
def summariser_fails(world, kind, detail):
    error = SummarizerUnavailable(detail) if kind == "unavailable" else SummarizerFailed(detail)
    world["summarizer"] = FakeSummarizer(replies=[error])


@given(parsers.parse('a history of one 9000-token question and the turns "{second}", "{third}"'))
def long_history(world, second, third):
    world["messages"] = history(U(X(9000)), A("r1"), U(second), A("r2"), U(third), A("r3"))


@given(parsers.parse('a history of the turns "{first}", "{second}"'))
def short_history(world, first, second):
    world["messages"] = history(U(first), A("a1"), U(second), A("a2"))


@given(parsers.parse('a history of one 3000-token question, the reply "{reply}" and the turn "{turn}"'))
def medium_history(world, reply, turn):
    world["messages"] = history(U(X(3000)), A(reply), U(turn), A("a2"))


@given(parsers.parse('a history of two 3000-token questions with replies, then the turn "{turn}"'))
def assemble_history(world, turn):
    world["messages"] = history(U(X(3000)), A("r0"), U(X(3000)), A("r1"), U(turn), A("latest answer"))


@given(parsers.parse("another holder claimed the history at {ts:d} ms"))
def foreign_claim(world, ts):
    key = lease.default_lease_key(decode_messages(world["messages"]))
    world["store"].records[(lease.SCOPE, key)] = LeaseRecord("foreign-holder", ts)


@given(parsers.parse("the clock reads {now:d} ms"))
def clock_reads(world, now):
    world["clock"].now = now


@given("the lease store is unreadable")
def unreadable_store(world):
    world["store"].fail = True


# --- when -----------------------------------------------------------------------------------


@when(parsers.parse('the history is compacted for model "{model_id}"'))
def compact_plain(world, model_id):
    run_handler(world, compact_handler, {"messages": world["messages"], "model": {"id": model_id}})


@when(parsers.parse('the history is compacted for model "{model_id}" with options {options}'))
def compact_with_options(world, model_id, options):
    run_handler(world, compact_handler, {"messages": world["messages"], "model": {"id": model_id},
                                         "options": json.loads(options)})


@when(parsers.parse("the history is compacted for an inline model of {window:d} tokens with {output:d} for output"))
def compact_inline(world, window, output):
    model = {"id": "inline", "limits": {"context_window": window, "max_output_tokens": output}}
    run_handler(world, compact_handler, {"messages": world["messages"], "model": model})


@when(parsers.parse('a request without messages is compacted for model "{model_id}"'))
def compact_without_messages(world, model_id):
    run_handler(world, compact_handler, {"model": {"id": model_id}})


def _assemble(world, system_prompt, window, output):
    payload = {"messages": world["messages"],
               "model": {"id": "small", "limits": {"context_window": window, "max_output_tokens": output}}}
    if system_prompt is not None:
        payload["system_prompt"] = system_prompt
    run_handler(world, assemble_handler, payload)


@when(parsers.parse('the history is assembled with the system prompt "{prompt}" for an inline model of {window:d} tokens with {output:d} for output'))
def assemble_with_prompt(world, prompt, window, output):
    _assemble(world, prompt, window, output)


@when(parsers.parse("the history is assembled without a system prompt for an inline model of {window:d} tokens with {output:d} for output"))
def assemble_without_prompt(world, window, output):
    _assemble(world, None, window, output)


# --- then -----------------------------------------------------------------------------------


@then("the response reports that a prior summary was used")
def prior_summary_used(world):
    assert world["response"]["used_prior_summary"] is True


@then("no lease is left behind")
def no_lease_left(world):
    assert world["store"].records == {}


@then(parsers.parse('the assembled system prompt is "{prompt}"'))
def assembled_prompt(world, prompt):
    assert world["response"]["system_prompt"] == unescape(prompt)


@then(parsers.parse("the assembled context holds {tokens:d} tokens from request message {index:d} onward"))
def assembled_window(world, tokens, index):
    response = world["response"]
    assert response["token_count"] == tokens
    assert response["applied"]["tail_start_index"] == index
    assert response["messages"] == decode_messages(world["messages"][index:])
