"""The cross-call message memo never changes an answer.

Each case runs a history through the handlers with a fresh memo several times, the way an agent
loop does (the same history, then one grown by a message, then one with a message edited in
place, then one whose messages spell defaults and numbers differently, then its twin, every
number Python's `==` confuses replaced by its twin), and every answer must be byte-identical to
the same call made without any memo.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.config.parse import parse_config_value
from context_manager.core.memo import MessageMemo
from context_manager.handlers.context import HandlerContext
from context_manager.wire.codec import dumps_wire
from context_manager.wire.errors import CallError

from .strategies import assemble_options, configs, histories, models, system_prompts, tools, twinned
from .support import run

FUNCTIONS = ("context::count-tokens", "context::prune", "context::assemble")


def answer(function_id: str, payload: dict[str, Any], config: dict[str, Any],
           memo: MessageMemo | None) -> bytes:
    ctx = HandlerContext(config=parse_config_value(config), tokenizers=PACKAGED_TOKENIZERS, memo=memo)
    try:
        # a fresh copy: the memo must not depend on the identity of the caller's objects
        return dumps_wire(run(function_id, copy.deepcopy(payload), ctx))
    except CallError as exc:
        return f"{exc.code}: {exc.message}".encode()


def _flag_toggled(record: dict[str, Any]) -> dict[str, Any]:
    """``is_error`` left out if present, spelled out as false if absent."""
    out = dict(record)
    if "is_error" in out:
        del out["is_error"]
    else:
        out["is_error"] = False
    return out


def respelled(message: dict[str, Any]) -> dict[str, Any]:
    """The message as a caller may spell it: defaults written out or left out (which, for an
    inline result's ``is_error``, is another message)."""
    out = dict(message)
    if out["role"] == "function_result":
        out = _flag_toggled(out)
        out.setdefault("details", None)
    out["content"] = [
        {**b, "arguments": {"n": 1.0}} if b["type"] == "function_call"
        else _flag_toggled(b) if b["type"] == "function_result" else b
        for b in out["content"]
    ]
    return out


def edited(message: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(message)
    for block in out["content"]:
        if block["type"] in ("text", "thinking"):
            block["text"] += " (edited)"
            return out
    out["timestamp"] += 1
    return out


@settings(max_examples=1000, derandomize=True, database=None, deadline=None)
@given(history=histories(max_rounds=8), model=models(), config=configs(), options=assemble_options(),
       prompt=system_prompts, tool_list=tools, function_id=st.sampled_from(FUNCTIONS))
def test_answers_with_a_memo_equal_answers_without(history, model, config, options, prompt,
                                                   tool_list, function_id):
    memo = MessageMemo()
    base: dict[str, Any] = {"model": model}
    if prompt is not None:
        base["system_prompt"] = prompt
    if tool_list is not None:
        base["tools"] = tool_list
    if function_id == "context::assemble" and options is not None:
        base["options"] = options

    turns = [history[:-1], history, history, history + [{"role": "user", "timestamp": 99_999,
                                                         "content": [{"type": "text", "text": "next"}]}]]
    if history:
        turns.append([*history[:-1], edited(history[-1])])
        turns.append([respelled(m) for m in history])
        turns.append([twinned(m) for m in history])
    for messages in turns:
        payload = {**base, "messages": messages}
        assert answer(function_id, payload, config, memo) == answer(function_id, payload, config, None)


def test_the_loop_above_does_reach_the_memo():
    history = [{"role": "user", "timestamp": 1, "content": [{"type": "text", "text": "hi " * 50}]},
               {"role": "assistant", "timestamp": 2, "content": [{"type": "text", "text": "ok " * 50}],
                "stop_reason": "end", "model": "m", "provider": "p"}]
    memo = MessageMemo()
    payload = {"model": {"id": "m", "limits": {"context_window": 10000, "max_output_tokens": 100}}}
    for messages in (history[:1], history, history):
        answer("context::assemble", {**payload, "messages": messages}, {}, memo)
    assert len(memo) == 2
