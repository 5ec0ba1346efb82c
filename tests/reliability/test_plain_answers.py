"""Every library answer is plain JSON: ``json.dumps`` (standard library, default settings)
writes it, and what it writes reads back equal to the answer the ``call`` command prints for
the same request.

Requests carry floats at and around the edges of the band [1e-4, 1e16) that the wire keeps as
exact text, the smallest and largest doubles, negative zero, and free-form values nested deeper
than the codec's own recursion (in arguments, details, tool parameters), besides edge costs.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from context_manager import CallError, call
from context_manager.api import build_context, run_handler
from context_manager.cli import run_call
from context_manager.config.parse import parse_config_value
from context_manager.core.memo import SHARED_MEMO
from context_manager.wire.codec import dumps_wire, loads

from .strategies import (
    RELIABILITY,
    assemble_options,
    configs,
    histories,
    models,
    prune_options,
    sessions,
    short_text,
    system_prompts,
)

pytestmark = pytest.mark.slow

# Examples per property: the answers that carry messages back get the most; 3,000 requests in all
# by default.
MANY = RELIABILITY.max_examples // 2
FEWER = RELIABILITY.max_examples // 4

# ---------------------------------------------------------------- values

def _around(x: float) -> list[float]:
    return [math.nextafter(x, 0.0), x, math.nextafter(x, math.inf)]


# Each is drawn with either sign (negating 0.0 gives -0.0).
EDGE_FLOATS = [*_around(1e-4), *_around(1e16), 5e-324, 2.2250738585072014e-308, 1.7e308,
               1.7976931348623157e308, 0.0, 1e-7, 1e-5, 9.999e-5, 123.5, 2.5e20, 1e300]
edge_float = st.one_of(
    st.sampled_from(EDGE_FLOATS),
    st.sampled_from(EDGE_FLOATS).map(lambda x: -x),
    st.floats(allow_nan=False, allow_infinity=False),
)
leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), edge_float, edge_float,
                 short_text)


def nested(depth: int, inner: Any, key: str) -> Any:
    value = inner
    for level in range(depth - 1):
        value = [value] if level % 2 else {key: value}
    return value


# Deeper than the 100 levels the codec writes ahead into one fragment, shallow enough for
# json.dumps' own recursion.
deep_value = st.builds(nested, st.integers(95, 240), st.one_of(leaf, st.lists(leaf, max_size=3)),
                       st.sampled_from(["k", "b", "\u00e9"]))
free_form = st.one_of(
    st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                               st.dictionaries(short_text, inner, max_size=4)),
                 max_leaves=10),
    deep_value,
)
cost = st.one_of(edge_float, st.integers(0, 10**6))


# ---------------------------------------------------------------- requests


@st.composite
def float_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A generated history with edge floats and deep values put into every free-form member and
    into the assistants' usage."""
    history = draw(st.one_of(histories(max_rounds=8), sessions()))
    out = []
    for message in history:
        message = dict(message)
        role = message["role"]
        if role == "assistant":
            if draw(st.booleans()):
                message["usage"] = {"input": draw(st.integers(0, 10**6)), "cost_usd": draw(cost)}
            message["content"] = [
                {**b, "arguments": draw(free_form)} if b["type"] == "function_call" and draw(st.booleans())
                else b for b in message["content"]]
        elif role in ("function_result", "custom") and draw(st.booleans()):
            message["details"] = draw(free_form)
        out.append(message)
    return out


tools = st.one_of(st.none(), st.lists(st.fixed_dictionaries(
    {"name": st.sampled_from(["agent_trigger", "read"]), "description": short_text},
    optional={"parameters": free_form}), max_size=2))


def with_optional(payload: dict[str, Any], **members: Any) -> dict[str, Any]:
    return {**payload, **{name: value for name, value in members.items() if value is not None}}


# ---------------------------------------------------------------- the two ways to call


@pytest.fixture(scope="module")
def workdir() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="plain-answers-") as path:
        yield path


def command(workdir: str, function_id: str, text: bytes, config: dict[str, Any]) -> tuple[int, Any]:
    """``context-manager call <function_id> --input FILE --config FILE`` run in this process, as
    a fresh process would run it (nothing remembered from earlier calls): (exit code, the JSON
    it printed on stdout, or the error envelope on stderr)."""
    request, config_file = os.path.join(workdir, "request.json"), os.path.join(workdir, "config.yaml")
    with open(request, "wb") as out:
        out.write(text)
    with open(config_file, "w", encoding="utf-8") as out:
        json.dump(config, out)  # JSON is YAML
    stdout, stderr = io.TextIOWrapper(io.BytesIO()), io.TextIOWrapper(io.BytesIO())
    SHARED_MEMO.clear()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = run_call([function_id, "--input", request, "--config", config_file])
    stream = stdout if code == 0 else stderr
    return code, json.loads(stream.buffer.getvalue())


def command_route(function_id: str, text: bytes, config: dict[str, Any],
                  summarizer: Callable[[str, str, dict[str, Any]], str]) -> tuple[int, Any]:
    """What the command does, with a summariser it has no flag for: parse the JSON text, run the
    handler, write the answer with sorted keys."""
    ctx = build_context(parse_config_value(config), summarizer)
    ctx.memo = None  # a fresh process remembers nothing
    try:
        return 0, json.loads(dumps_wire(run_handler(function_id, loads(text), ctx)))
    except CallError as exc:
        return 1, {"code": exc.code, "message": exc.message}


def summarizer_for(kind: str) -> Callable[[str, str, dict[str, Any]], str]:
    def summarize(system_prompt: str, user_prompt: str, model: dict[str, Any]) -> str:
        if kind == "fails":
            raise RuntimeError("summariser down")
        return "" if kind == "empty" else f"Summary of {len(user_prompt)} characters for {model['id']}."

    return summarize


PLAIN_TYPES = (dict, list, str, int, float, bool, type(None))


def assert_plain(value: Any) -> set[str]:
    """Every value is of a plain type; returns what the answer holds that the wire keeps as a
    fragment inside (out-of-band floats, deep subtrees)."""
    held: set[str] = set()
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        assert type(item) in PLAIN_TYPES, type(item)
        if type(item) is dict:
            stack.extend((v, depth + 1) for v in item.values())
        elif type(item) is list:
            stack.extend((v, depth + 1) for v in item)
        elif type(item) is float and not 1e-4 <= abs(item) < 1e16:
            held.add("out-of-band float")
        if depth > 100:
            held.add("deep value")
    return held


def check(workdir: str, function_id: str, payload: dict[str, Any], config: dict[str, Any],
          summary: str | None, outcomes: Counter[str]) -> dict[str, Any] | None:
    """The library answer is plain, json.dumps writes it, and it reads back as the command's
    answer; returns the answer (None for an error, which must be the command's error)."""
    config = {**config, "lease_dir": os.path.join(workdir, "leases")}
    summarizer = None if summary is None else summarizer_for(summary)
    text = json.dumps(payload).encode()  # the standard library writes deeper values than orjson
    try:
        answer = call(function_id, payload, config=config, summarizer=summarizer)
    except CallError as exc:
        # Inline limits always resolve: the one legitimate failure is an honest overflow.
        assert exc.message.startswith("handler error: context/overflow: "), exc.message
        answer, library = None, (1, {"code": exc.code, "message": exc.message})
    else:
        for held in assert_plain(answer):
            outcomes[held] += 1
            event(held)
        library = (0, json.loads(json.dumps(answer)))
    if summarizer is None:
        wire = command(workdir, function_id, text, config)
    else:
        wire = command_route(function_id, text, config, summarizer)
    assert library == wire
    if answer is not None:
        # Stricter than ==: floats stay floats (1.0 is not 1) and zeros keep their sign.
        assert json.dumps(answer, sort_keys=True) == json.dumps(wire[1], sort_keys=True)
    outcome = "answered" if answer is not None else "error"
    outcomes[outcome] += 1
    event(outcome)
    return answer


# ---------------------------------------------------------------- the properties


def test_count_tokens_answers_are_plain(workdir: str) -> None:
    @settings(RELIABILITY, max_examples=FEWER)
    @given(float_histories(), models(), configs(), system_prompts, tools)
    def prop(outcomes: Counter[str], history: list[dict[str, Any]], model: dict[str, Any],
             config: dict[str, Any], prompt: str | None, tool_list: Any) -> None:
        payload = with_optional({"messages": history, "model": model}, system_prompt=prompt, tools=tool_list)
        check(workdir, "context::count-tokens", payload, config, None, outcomes)

    outcomes: Counter[str] = Counter()
    prop(outcomes)
    assert outcomes["answered"] == FEWER


def test_prune_answers_are_plain(workdir: str) -> None:
    @settings(RELIABILITY, max_examples=MANY)
    @given(float_histories(), st.one_of(st.none(), models()), st.one_of(st.none(), prune_options()), configs())
    def prop(outcomes: Counter[str], history: list[dict[str, Any]], model: Any, options: Any,
             config: dict[str, Any]) -> None:
        payload = with_optional({"messages": history}, model=model, options=options)
        check(workdir, "context::prune", payload, config, None, outcomes)

    outcomes: Counter[str] = Counter()
    prop(outcomes)
    assert outcomes["answered"] == MANY
    # The answers carry the messages back: most of them hold what the wire keeps as fragments.
    assert outcomes["out-of-band float"] > MANY // 2, outcomes
    assert outcomes["deep value"] > MANY // 4, outcomes


SUMMARIES = st.sampled_from([None, None, "ok", "ok", "empty", "fails"])


def test_assemble_answers_are_plain(workdir: str) -> None:
    @settings(RELIABILITY, max_examples=MANY)
    @given(float_histories(), models(), configs(), assemble_options(), system_prompts, tools, SUMMARIES)
    def prop(outcomes: Counter[str], history: list[dict[str, Any]], model: dict[str, Any],
             config: dict[str, Any], options: Any, prompt: str | None, tool_list: Any,
             summary: str | None) -> None:
        payload = with_optional({"messages": history, "model": model}, options=options,
                                system_prompt=prompt, tools=tool_list)
        answer = check(workdir, "context::assemble", payload, config, summary, outcomes)
        if answer is not None and answer["applied"]["compacted"]:
            outcomes["compacted"] += 1

    outcomes: Counter[str] = Counter()
    prop(outcomes)
    # Windows are small next to deep values: many requests overflow, but a third at least fit.
    assert outcomes["answered"] > MANY // 3, outcomes
    assert outcomes["out-of-band float"] > MANY // 4, outcomes
    assert outcomes["deep value"] > MANY // 8, outcomes
    assert outcomes["compacted"] > 0, outcomes


def test_compact_answers_are_plain(workdir: str) -> None:
    @settings(RELIABILITY, max_examples=FEWER)
    @given(float_histories(), models(), configs(), st.one_of(st.none(), st.fixed_dictionaries(
        {}, optional={"tail_turns": st.integers(0, 4), "previous_summary": short_text,
                      "preserve_recent_tokens": st.integers(0, 3000)})), SUMMARIES)
    def prop(outcomes: Counter[str], history: list[dict[str, Any]], model: dict[str, Any],
             config: dict[str, Any], options: Any, summary: str | None) -> None:
        payload = with_optional({"messages": history, "model": model}, options=options)
        answer = check(workdir, "context::compact", payload, config, summary, outcomes)
        outcomes[f"status {answer['status'] if answer else None}"] += 1

    outcomes: Counter[str] = Counter()
    prop(outcomes)
    assert outcomes["answered"] == FEWER
    assert outcomes["status ok"] > 0 and outcomes["status overflow"] > 0, outcomes
