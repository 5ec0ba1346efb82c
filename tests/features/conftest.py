"""The steps more than one feature uses, each defined once; they read and write the scenario's
world (world.py). A feature's own steps stay in its module."""

from __future__ import annotations

import json
from typing import Any

from compaction_support import FakeSummarizer
from pytest_bdd import given, parsers, then, when

from context_manager.handlers import assemble as assemble_handler
from context_manager.wire.codec import dumps_wire
from tests.features.world import assemble_for, run_handler, unescape

World = dict[str, Any]


# --- given: the request ---------------------------------------------------------------------


def _append(world: World, message: dict[str, Any]) -> None:
    world["request"]["messages"].append(message)


@given(parsers.parse('a user turn "{text}" at {ts:d}'))
def user_turn(world: World, text: str, ts: int) -> None:
    _append(world, {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})


@given(parsers.parse('an assistant reply "{text}" at {ts:d}'))
def assistant_reply(world: World, text: str, ts: int) -> None:
    _append(world, {"role": "assistant", "content": [{"type": "text", "text": text}],
                    "stop_reason": "end", **world["replying_model"], "timestamp": ts})


@given(parsers.parse("a user message with a PNG image of {size:d} base64 characters at {ts:d}"))
def image_message(world: World, size: int, ts: int) -> None:
    _append(world, {"role": "user", "timestamp": ts,
                    "content": [{"type": "image", "mime": "image/png", "data": "A" * size}]})


@given(parsers.parse('a custom "{custom_type}" message "{text}" at {ts:d}'))
def custom_message(world: World, custom_type: str, text: str, ts: int) -> None:
    _append(world, {"role": "custom", "custom_type": custom_type,
                    "content": [{"type": "text", "text": text}], "timestamp": ts})


@given("the request has no messages member")
def no_messages(world: World) -> None:
    del world["request"]["messages"]


@given(parsers.parse("the options {options}"))
def options(world: World, options: str) -> None:
    world["options"] = json.loads(options)


@given(parsers.parse("an inline model of {window:d} tokens with {output:d} for output"))
def inline_model(world: World, window: int, output: int) -> None:
    world["model"] = {"id": "small", "limits": {"context_window": window, "max_output_tokens": output}}


# --- given: the worker and its ports --------------------------------------------------------


@given(parsers.parse("the worker configuration {config}"))
def worker_configuration(world: World, config: str) -> None:
    world["config"] = json.loads(config)


@given(parsers.parse('the router knows model "{model_id}" with a {window:d} token window and {output:d} output tokens'))
def router_knows(world: World, model_id: str, window: int, output: int) -> None:
    world["router"].knows(model_id, window, output)


@given(parsers.parse('the summariser answers "{reply}"'))
def summariser_answers(world: World, reply: str) -> None:
    world["summarizer"] = FakeSummarizer(replies=[unescape(reply)])


# --- when -----------------------------------------------------------------------------------


@when(parsers.re(r'the history is assembled for model "(?P<model_id>[^"]+)"$'))
def assemble_for_model(world: World, model_id: str) -> None:
    assemble_for(world, {"id": model_id})


@when("the history is assembled")
def assemble(world: World) -> None:
    payload: dict[str, Any] = {"messages": world["messages"], "model": world["model"]}
    if world["system_prompt"] is not None:
        payload["system_prompt"] = world["system_prompt"]
    if world["summary"] is not None:
        payload["options"] = {"previous_summary": world["summary"]}
    run_handler(world, assemble_handler, payload)


@when("the harness keeps the summary and the messages from the reported index onward")
def keep_round_trip(world: World) -> None:
    applied = world["response"]["applied"]
    world["summary"] = applied["summary"]
    world["messages"] = world["messages"][applied["tail_start_index"]:]
    world["summarizer"].requests.clear()


# --- then -----------------------------------------------------------------------------------


@then(parsers.parse("the wire response is {body}"))
def wire_response(world: World, body: str) -> None:
    assert world["error"] is None, world["error"]
    assert dumps_wire(world["response"]).decode() == body


@then(parsers.parse('the response status is "{status}"'))
def response_status(world: World, status: str) -> None:
    assert world["response"]["status"] == status


@then(parsers.parse("the usable budget is {usable:d}"))
def usable_budget(world: World, usable: int) -> None:
    assert world["error"] is None, world["error"] and world["error"].message
    assert world["response"]["usable"] == usable


@then(parsers.parse("the response has {count:d} messages"))
def message_count(world: World, count: int) -> None:
    assert len(world["response"]["messages"]) == count


@then(parsers.parse('message {index:d} reads "{text}"'))
def message_reads(world: World, index: int, text: str) -> None:
    assert world["response"]["messages"][index]["content"] == [{"type": "text", "text": text}]


@then(parsers.parse("the summariser was called {count:d} time"))
@then(parsers.parse("the summariser was called {count:d} times"))
def summariser_calls(world: World, count: int) -> None:
    assert world["summarizer"].calls == count


@then(parsers.parse('the summariser was asked to revise "{summary}"'))
def asked_to_revise(world: World, summary: str) -> None:
    (request,) = world["summarizer"].requests
    assert f"<previous-summary>\n{unescape(summary)}\n</previous-summary>" in request.system_prompt


@then(parsers.parse('the call fails with "{message}"'))
def call_fails(world: World, message: str) -> None:
    assert world["response"] is None
    assert (world["error"].code, world["error"].message) == ("invocation_failed", message)
