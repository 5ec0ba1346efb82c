"""Step definitions of features/never_lose_the_task.feature."""

from __future__ import annotations

from typing import Any

import pytest
from compaction_support import FR, U, X, history
from pytest_bdd import given, parsers, scenarios, then, when

from context_manager.core.carried_anchor import split_summary
from tests.features.world import new_world, unescape

scenarios("never_lose_the_task.feature")


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
    return new_world()


# --- given ----------------------------------------------------------------------------------


@given(parsers.parse('the task "{task}" and {count:d} rounds reading src/mod1.py to '
                     'src/mod{last:d}.py of {units:d} tokens each'))
def task_and_rounds(world, task, count, last, units):
    assert count == last
    world["messages"] = history(U(task), *reading_rounds(1, last, units))


# --- when -----------------------------------------------------------------------------------


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
