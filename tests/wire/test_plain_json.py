"""Library answers are plain JSON values: the fragments that keep a float's exact text inside
are parsed back at the `call()` boundary; the wire text stays byte for byte what it was."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from context_manager import call
from context_manager.api import build_context, run_handler
from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.wire.codec import Fragment, canonical_free_form, dumps_wire, loads
from context_manager.wire.decode import decode_message
from context_manager.wire.plain import (
    FragmentWatch,
    note_cost,
    plain_answer,
    plain_json,
    watching_fragments,
)

PLAIN_TYPES = (dict, list, str, int, float, bool, type(None))


def assistant(**extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": "done"}], "stop_reason": "end",
            "model": "m", "provider": "p", "timestamp": 2, **extra}


def call_message(arguments: Any) -> dict[str, Any]:
    return {"role": "assistant", "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": 3,
            "content": [{"type": "function_call", "id": "c1", "function_id": "f", "arguments": arguments}]}


def result_message(details: Any) -> dict[str, Any]:
    return {"role": "function_result", "function_call_id": "c1", "function_id": "f", "timestamp": 4,
            "content": [{"type": "text", "text": "out"}], "details": details}


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth - 1):
        value = [value] if level % 2 else {"k": value}
    return value


def leaves(value: Any) -> list[Any]:
    """Every value in ``value``, containers included, without recursion (deep values)."""
    out, stack = [], [value]
    while stack:
        item = stack.pop()
        out.append(item)
        if type(item) is dict:
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
    return out


def assert_plain(answer: Any) -> None:
    assert all(type(item) in PLAIN_TYPES for item in leaves(answer))
    json.dumps(answer)


def wire(function_id: str, payload: Any) -> bytes:
    """The answer as the command writes it: payload parsed from JSON text, sorted keys, and no
    messages remembered from earlier calls (the command is one process per call)."""
    ctx = build_context(DEFAULT_CONFIG, None)
    ctx.memo = None
    text = json.dumps(payload).encode()  # the standard library writes deeper values than orjson
    return dumps_wire(run_handler(function_id, loads(text), ctx))


def test_a_small_cost_comes_back_as_a_float_and_the_wire_text_is_unchanged() -> None:
    payload = {"messages": [assistant(usage={"input": 3, "cost_usd": 0.00001})]}
    answer = call("context::prune", payload)
    assert answer["messages"][0]["usage"] == {"input": 3, "cost_usd": 0.00001}
    assert type(answer["messages"][0]["usage"]["cost_usd"]) is float
    assert json.dumps(answer["messages"][0]["usage"]) == '{"input": 3, "cost_usd": 1e-05}'
    assert wire("context::prune", payload) == (
        b'{"messages":[{"content":[{"text":"done","type":"text"}],"model":"m","provider":"p",'
        b'"role":"assistant","stop_reason":"end","timestamp":2,"usage":{"cost_usd":0.00001,"input":3}}],'
        b'"pruned_parts":0,"pruned_tokens":0,"scanned_parts":0}')


@pytest.mark.parametrize("value, text", [
    (1e16, b"1e+16"), (1e-5, b"0.00001"), (9.9e-5, b"0.000099"), (1e-7, b"1e-7"), (5e-324, b"5e-324"),
    (1.7e308, b"1.7e+308"), (-0.0, b"-0.0"), (0.0, b"0.0"), (-2.5e20, b"-2.5e+20"),
])
def test_free_form_floats_read_back_as_the_value_their_text_denotes(value: float, text: bytes) -> None:
    payload = {"messages": [call_message({"x": value, "list": [value]}), result_message({"y": value})]}
    answer = call("context::prune", payload)
    arguments = answer["messages"][0]["content"][0]["arguments"]
    details = answer["messages"][1]["details"]
    for got in (arguments["x"], arguments["list"][0], details["y"]):
        assert type(got) is float and got == float(text.decode())
        assert str(got).startswith("-") == str(value).startswith("-")  # the sign of zero too
    assert_plain(answer)
    assert b'"x":' + text in wire("context::prune", payload)


def test_costs_at_and_beyond_the_band_edges() -> None:
    costs = [1e-4, 9.999999999999999e-05, 1e16, 9999999999999998.0, 5e-324, 1.7e308, -0.0, 0, 7]
    payload = {"messages": [assistant(usage={"cost_usd": cost}, timestamp=i) for i, cost in enumerate(costs)]}
    answer = call("context::prune", payload)
    got = [m["usage"]["cost_usd"] for m in answer["messages"]]
    assert got == [float(c) for c in costs]
    assert all(type(c) is float for c in got)
    assert str(got[6]) == "-0.0"
    assert json.loads(json.dumps(answer)) == json.loads(wire("context::prune", payload))


def test_deep_free_form_values_come_back_as_nested_containers() -> None:
    deep = nested(300, 1e20)
    payload = {"messages": [call_message({"deep": deep}), result_message(nested(150, [5e-324, "s"]))]}
    answer = call("context::prune", payload)
    assert answer["messages"][0]["content"][0]["arguments"] == {"deep": deep}
    assert answer["messages"][1]["details"] == nested(150, [5e-324, "s"])
    assert_plain(answer)
    assert json.loads(json.dumps(answer)) == json.loads(wire("context::prune", payload))


def test_assemble_answers_are_plain_too() -> None:
    payload = {"messages": [{"role": "user", "content": [{"type": "text", "text": "q"}], "timestamp": 1},
                            call_message({"t": 1e-9}), result_message({"big": 18446744073709551615, "f": 3e30}),
                            assistant(usage={"cost_usd": 2e-6}, timestamp=5)],
               "model": {"id": "m", "limits": {"context_window": 100000, "max_output_tokens": 100}}}
    answer = call("context::assemble", payload)
    assert answer["messages"][1]["content"][0]["arguments"] == {"t": 1e-9}
    assert answer["messages"][2]["details"] == {"big": 18446744073709551615, "f": 3e30}
    assert answer["messages"][3]["usage"] == {"cost_usd": 2e-6}
    assert_plain(answer)
    assert json.loads(json.dumps(answer)) == json.loads(wire("context::assemble", payload))


def test_fragments_a_caller_passes_in_come_back_parsed() -> None:
    payload = {"messages": [call_message({"x": Fragment(b"1e+16")}), result_message(Fragment(b"[1,2.5]")),
                            assistant(usage={"cost_usd": Fragment(b"1e-7")}, native_stop_reason="stop")]}
    answer = call("context::prune", payload)
    assert answer["messages"][0]["content"][0]["arguments"] == {"x": 1e16}
    assert answer["messages"][1]["details"] == [1, 2.5]
    assert answer["messages"][2]["usage"] == {"cost_usd": 1e-7}
    assert_plain(answer)


def test_every_decoder_site_notes_its_fragment() -> None:
    cases = [  # (wire message, kind noted)
        (assistant(usage={"cost_usd": 1e-5}), "costs"),  # fast path
        (assistant(usage={"cost_usd": 1e-5}, native_stop_reason="x"), "costs"),  # generic path
        (assistant(usage={"cost_usd": Fragment(b"1e-5")}), "costs"),  # a fragment let through
        (call_message({"x": 1e20}), "free_form"),
        (call_message([1e20]), "free_form"),
        (call_message(2**64 - 1), None),  # an integer in range stays an integer
        (result_message({"x": [1.5, 2e-9]}), "free_form"),
        (result_message(nested(120, "leaf")), "free_form"),  # written ahead into one fragment
        (result_message(Fragment(b"1")), "free_form"),
        (result_message({"x": 0.5, "y": [1, 1e15]}), None),
        (assistant(usage={"cost_usd": 0.5}), None),
    ]
    for message, kind in cases:
        with watching_fragments() as watch:
            decode_message(message)
        assert (watch.costs, watch.free_form) == (kind == "costs", kind == "free_form"), message


def test_notes_outside_a_watch_and_in_other_threads_are_not_seen() -> None:
    note_cost(Fragment(b"1e-5"))  # no watch: nothing to note, nothing raised
    with watching_fragments() as watch:
        worker = threading.Thread(target=lambda: canonical_free_form({"x": 1e20}))
        worker.start()
        worker.join()
    assert (watch.costs, watch.free_form) == (False, False)
    with watching_fragments() as outer:
        with watching_fragments() as inner:
            canonical_free_form([1e20])
        canonical_free_form({"a": 0.5})
    assert (inner.free_form, outer.free_form) == (True, False)


def test_an_answer_without_fragments_is_returned_as_it_is() -> None:
    answer = {"messages": [{"usage": {"cost_usd": 0.5}}], "n": 1}
    assert plain_answer(answer, FragmentWatch()) is answer


def test_costs_only_touches_the_messages_holding_one() -> None:
    kept = {"role": "user", "content": []}
    answer = {"messages": [kept, {"role": "assistant", "usage": {"input": 1, "cost_usd": Fragment(b"1e-7")}}],
              "pruned_parts": 0}
    watch = FragmentWatch()
    watch.costs = True
    plain = plain_answer(answer, watch)
    assert plain == {"messages": [kept, {"role": "assistant", "usage": {"input": 1, "cost_usd": 1e-7}}],
                     "pruned_parts": 0}
    assert plain["messages"][0] is kept
    assert type(answer["messages"][1]["usage"]["cost_usd"]) is Fragment  # the input is not changed
    assert plain_answer({"tokens": 3}, watch) == {"tokens": 3}


def test_plain_json_copies_only_the_containers_holding_a_fragment() -> None:
    untouched = {"a": [1, "x"], "b": None}
    value = {"keep": untouched, "fix": [{"f": Fragment(b"1e+16"), "s": "t"}], "z": 2}
    plain = plain_json(value)
    assert plain == {"keep": untouched, "fix": [{"f": 1e16, "s": "t"}], "z": 2}
    assert list(plain) == ["keep", "fix", "z"] and list(plain["fix"][0]) == ["f", "s"]
    assert plain["keep"] is untouched
    assert type(value["fix"][0]["f"]) is Fragment
    assert plain_json(Fragment(b'{"b":[1e-7,{"c":null}]}')) == {"b": [1e-7, {"c": None}]}


@pytest.mark.parametrize("function_id, payload, expected", [
    ("context::on-models-changed", {"provider": "p"}, {"ok": True}),
    ("context::on-config-change", {"id": "context-manager"}, {"ok": True}),
])
def test_the_internal_functions_answer_plain_values_too(function_id: str, payload: Any, expected: Any) -> None:
    answer = call(function_id, payload)
    assert answer == expected
    assert json.dumps(answer) == '{"ok": true}'


def test_the_ui_content_answer_is_plain() -> None:
    answer = call("context-manager::ui-content", {"path": "context-manager/styles.css"})
    assert list(answer) == ["content", "content_type"]
    assert answer["content_type"] == "text/css; charset=utf-8"
    assert type(answer["content"]) is str and answer["content"].startswith("/* context-manager")
    assert json.loads(json.dumps(answer)) == answer
