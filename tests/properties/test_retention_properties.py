"""Properties of the retention pass over generated histories and policies (1,000+ cases each).

The pass never separates a call from its result, never makes a message larger, is a fixed point
of itself, and a policy that cuts nothing (or no policy at all) leaves every answer unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import call
from context_manager.config.retention import parse_retention
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.passes.retention import apply_retention
from context_manager.wire import codec
from context_manager.wire.decode import decode_message

pytestmark = pytest.mark.slow

FUNCTIONS = ["fs::read_file", "fs::write_file", "web::search", "sh::run"]
MIMES = ["image/png", "image/jpeg", "application/pdf"]
_short = st.text(alphabet=st.sampled_from(list("ab \n\"\\é中😀x")), max_size=40)
# Long payloads repeat a short piece, so most histories have something a rule can cut.
_text = st.one_of(_short, st.builds(lambda piece, n: piece * n, _short.filter(bool), st.integers(2, 60)))
_count = st.integers(0, 120)


def _truncation():
    keep = st.sampled_from(["head", "tail", "both"])
    over = st.integers(0, 120).flatmap(
        lambda o: st.fixed_dictionaries({"mode": st.just("over"), "over": st.just(o), "to": st.integers(0, o), "keep": keep}))
    return st.one_of(st.just({"mode": "keep"}),
                     st.fixed_dictionaries({"mode": st.just("always"), "to": _count, "keep": keep}), over)


def _optional(strategy):
    return st.one_of(st.none(), strategy)


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


_treatment = st.builds(lambda a, r: _drop_none({"arguments": a, "result": r}), _optional(_truncation()), _optional(_truncation()))
_rule = st.builds(lambda f, t: {"function": f, **t}, st.sampled_from(["fs::*", "fs::read_file", "*", "web::?earch", "sh::run"]), _treatment)
_tools = st.builds(
    lambda d, rules, errors, mark: _drop_none({"default": d, "rules": rules, "errors": errors, "mark_truncations": mark}),
    _optional(_treatment), st.lists(_rule, max_size=4), _optional(_truncation()), st.booleans())
_media = st.builds(lambda d, rules: _drop_none({"default_keep_turns": d, "rules": rules}), _optional(st.integers(0, 3)),
                   st.lists(st.builds(lambda m, k: {"mime": m, "keep_turns": k},
                                      st.sampled_from(["image/*", "image/png", "*/*"]), st.integers(0, 3)), max_size=2))
POLICIES = st.builds(
    lambda tools, verbatim, text, reasoning, media: _drop_none(
        {"tools": tools, "verbatim_turns": verbatim, "text": text, "reasoning": reasoning, "media": media}),
    _optional(_tools), _optional(st.integers(0, 3)),
    _optional(st.builds(lambda p, m: _drop_none({"prompt": p, "message": m}), _optional(_truncation()), _optional(_truncation()))),
    _optional(st.builds(lambda k: {"keep_turns": k}, st.integers(0, 3))), _optional(_media))


def _image(mime: str) -> dict[str, Any]:
    return {"type": "image", "mime": mime, "data": "QUFB"}


_arguments = st.recursive(
    st.one_of(_text, st.integers(-5, 5), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["path", "q", "body", "n"]), inner, max_size=3)),
    max_leaves=6)

# One step of a history: a user prompt, an assistant turn (thinking, text, calls), or results.
_step = st.one_of(
    st.tuples(st.just("user"), _text, st.lists(st.sampled_from(MIMES), max_size=2)),
    st.tuples(st.just("assistant"), st.lists(st.tuples(_text, st.booleans()), max_size=2), _text,
              st.lists(st.tuples(st.sampled_from(FUNCTIONS), st.dictionaries(st.sampled_from(["path", "body"]), _arguments, max_size=2)),
                       max_size=2), st.sampled_from(["p", "q"])),
    st.tuples(st.just("results"), st.lists(st.tuples(_text, st.booleans(), st.booleans(), st.sampled_from(MIMES + [None]))),
              st.booleans()),
)


def _history(steps: list[tuple]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    pending: list[tuple[str, str]] = []
    serial = 0
    for step in steps:
        serial += 1
        if step[0] == "user":
            _, text, mimes = step
            messages.append({"role": "user", "content": [{"type": "text", "text": text}, *map(_image, mimes)], "timestamp": serial})
        elif step[0] == "assistant":
            _, thoughts, text, calls, provider = step
            content: list[dict[str, Any]] = [
                {"type": "thinking", "text": t, **({"signature": "sig"} if signed else {})} for t, signed in thoughts]
            content.append({"type": "text", "text": text})
            for function_id, arguments in calls:
                serial += 1
                call_id = f"c{serial}"
                content.append({"type": "function_call", "id": call_id, "function_id": function_id, "arguments": arguments})
                pending.append((call_id, function_id))
            messages.append({"role": "assistant", "content": content, "stop_reason": "end", "model": "m",
                             "provider": provider, "timestamp": serial})
        else:
            _, outputs, inline = step
            answered = list(zip(pending, outputs))
            pending = pending[len(answered):]
            if inline and answered:
                messages.append({"role": "user", "timestamp": serial, "content": [
                    {"type": "function_result", "function_call_id": call_id, "is_error": error,
                     "content": [{"type": "text", "text": text}, *([_image(mime)] if mime else [])]}
                    for (call_id, _), (text, error, _, mime) in answered]})
            else:
                for (call_id, function_id), (text, error, _, mime) in answered:
                    messages.append({"role": "function_result", "function_call_id": call_id, "function_id": function_id,
                                     "content": [{"type": "text", "text": text}, *([_image(mime)] if mime else [])],
                                     "is_error": error, "timestamp": serial})
    return [decode_message(m) for m in messages]


HISTORIES = st.lists(_step, min_size=2, max_size=14).map(_history)


def _shape(messages: list[dict[str, Any]]) -> list[tuple]:
    """What links calls to results: roles, call ids and answered ids, in order."""
    out = []
    for m in messages:
        calls = tuple(b["id"] for b in m["content"] if b["type"] == "function_call")
        answers = tuple(b["function_call_id"] for b in m["content"] if b["type"] == "function_result")
        out.append((m["role"], calls, answers, m.get("function_call_id")))
    return out


def _apply(view, policy, provider):
    return apply_retention(view, [HEURISTIC.message(m) for m in view], policy, HEURISTIC, provider)


@settings(max_examples=1200, deadline=None)
@given(view=HISTORIES, raw_policy=POLICIES, provider=st.sampled_from(["p", "q", None]))
def test_the_pass_keeps_pairs_never_grows_and_is_idempotent(view, raw_policy, provider):
    policy = parse_retention(raw_policy)
    assert policy is not None
    first = _apply(view, policy, provider)
    assert _shape(first.messages) == _shape(view)
    assert first.sizes == [HEURISTIC.message(m) for m in first.messages]
    for before, after in zip(view, first.messages):
        assert HEURISTIC.message(after) <= HEURISTIC.message(before)
        codec.loads(codec.dumps(after))  # still serializable JSON
    second = _apply(first.messages, policy, provider)
    assert second.messages == first.messages
    assert second.warnings == []
    # Every token the pass frees is charged to a warning; images are reported by count only.
    freed = sum(w.get("tokens_freed", 0) for w in first.warnings)
    total = sum(HEURISTIC.message(m) for m in view) - sum(first.sizes)
    if policy.media is None:
        assert freed == total
    else:
        assert freed <= total


INLINE = {"id": "m", "provider": "p", "limits": {"context_window": 6000, "max_output_tokens": 500}}
NOTHING = {"verbatim_turns": 0, "tools": {"default": {"arguments": {"mode": "keep"}, "result": {"mode": "keep"}},
                                          "errors": {"mode": "keep"}},
           "text": {"prompt": {"mode": "keep"}, "message": {"mode": "keep"}}, "media": {"rules": []}}


@settings(max_examples=1000, deadline=None)
@given(view=HISTORIES)
def test_no_policy_and_a_policy_that_cuts_nothing_answer_byte_identically(view):
    payload = {"messages": view, "model": INLINE, "options": {"allow_compaction": False}}
    outcomes = []
    for config in ({}, {"retention": None}, {"retention": NOTHING}):
        try:
            outcomes.append(codec.dumps_wire(call("context::assemble", payload, config=config)))
        except Exception as exc:  # an overflow must be the same overflow
            outcomes.append(repr(exc).encode())
    assert outcomes[0] == outcomes[1] == outcomes[2]
