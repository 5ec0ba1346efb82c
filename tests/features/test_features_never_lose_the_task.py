"""Step definitions of features/never_lose_the_task.feature."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest
from compaction_support import FR, FakeSummarizer, U, X, history
from pytest_bdd import given, parsers, scenarios, then, when

from context_manager.core.carried_anchor import split_summary
from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.handlers import assemble as assemble_handler
from context_manager.handlers.context import HandlerContext

scenarios("never_lose_the_task.feature")


def unescape(text: str) -> str:
    return text.replace("\\n", "\n")


def reading_rounds(first: int, last: int, units: int) -> list[dict[str, Any]]:
    """One call per file ``src/mod{k}.py``, answered with ``units`` tokens of text."""
    messages: list[dict[str, Any]] = []
    for k in range(first, last + 1):
        call_id = f"c{k}"
        messages += [
            {"role": "assistant",
             "content": [{"type": "function_call", "id": call_id, "function_id": "shell::run",
                          "arguments": {"command": f"cat src/mod{k}.py"}}],
             "stop_reason": "function_call", "model": "test-model", "provider": "test"},
            FR(call_id, "shell::run", X(units)),
        ]
    return messages


@pytest.fixture
def world():
    return {"config": DEFAULT_CONFIG, "summarizer": FakeSummarizer(), "model": None,
            "messages": [], "summary": None, "response": None}


# --- given ----------------------------------------------------------------------------------


@given(parsers.parse('the summariser answers "{reply}"'))
def summariser_answers(world, reply):
    world["summarizer"] = FakeSummarizer(replies=[unescape(reply)])


@given(parsers.parse("an inline model of {window:d} tokens with {output:d} for output"))
def inline_model(world, window, output):
    world["model"] = {"id": "small", "limits": {"context_window": window, "max_output_tokens": output}}


@given(parsers.parse("the worker configuration {config}"))
def worker_configuration(world, config):
    world["config"] = replace(DEFAULT_CONFIG, **json.loads(config))


@given(parsers.parse('the task "{task}" and {count:d} rounds reading src/mod1.py to '
                     'src/mod{last:d}.py of {units:d} tokens each'))
def task_and_rounds(world, task, count, last, units):
    assert count == last
    world["messages"] = history(U(task), *reading_rounds(1, last, units))


# --- when -----------------------------------------------------------------------------------


@when("the history is assembled")
def assemble(world):
    payload: dict[str, Any] = {"messages": world["messages"], "model": world["model"]}
    if world["summary"] is not None:
        payload["options"] = {"previous_summary": world["summary"]}
    ctx = HandlerContext(config=world["config"], summarizer=world["summarizer"], lease_store=None)
    world["response"] = asyncio.run(assemble_handler.handle(payload, ctx))


@when("the harness keeps the summary and the messages from the reported index onward")
def keep_round_trip(world):
    applied = world["response"]["applied"]
    world["summary"] = applied["summary"]
    world["messages"] = world["messages"][applied["tail_start_index"]:]


@when(parsers.parse("{count:d} more rounds reading src/mod{first:d}.py to src/mod{last:d}.py "
                    "of {units:d} tokens each are appended"))
def append_rounds(world, count, first, last, units):
    assert count == last - first + 1
    after = world["messages"][-1]["timestamp"] + 1
    world["messages"] = world["messages"] + history(*reading_rounds(first, last, units),
                                                    first_timestamp=after)


# --- then -----------------------------------------------------------------------------------


@then(parsers.parse("the history was compacted from request message {index:d} onward"))
def compacted(world, index):
    applied = world["response"]["applied"]
    assert (applied["compacted"], applied["tail_start_index"]) == (True, index)


@then(parsers.parse('the summary is "{summary}"'))
def summary_inline(world, summary):
    assert world["response"]["applied"]["summary"] == unescape(summary)


@then("the summary is")
def summary_block(world, docstring):
    assert world["response"]["applied"]["summary"] == docstring
    # An anchor section travels with the summary, never into the rendered prompt.
    text = split_summary(docstring).text
    assert text is not None and world["response"]["system_prompt"].endswith(text)
    assert "context-manager:anchor" not in world["response"]["system_prompt"]


@then(parsers.parse("{count:d} retained items are reported"))
def retained(world, count):
    assert world["response"]["applied"]["retained_items"] == count


@then("no retained items are reported")
def no_retained(world):
    assert "retained_items" not in world["response"]["applied"]


@then(parsers.parse('the returned messages start with the task "{task}"'))
def starts_with_task(world, task):
    first = world["response"]["messages"][0]
    assert (first["role"], first["content"]) == ("user", [{"type": "text", "text": task}])


@then("the task is in the returned messages once")
def task_once(world):
    task = world["response"]["messages"][0]["content"][0]["text"]
    texts = [b.get("text", "") for m in world["response"]["messages"] for b in m["content"]]
    assert sum(text.count(task) for text in texts) == 1


@then("the summariser never saw the task")
def never_saw(world):
    task = world["messages"][0]["content"][0]["text"]
    requests = world["summarizer"].requests
    assert requests and not any(task in r.user_prompt for r in requests)
