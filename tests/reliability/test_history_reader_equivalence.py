"""The worker's history reader never changes an answer.

Each case sends an agent loop's requests as engine frames (a history grown turn by turn, resent,
edited in place, respelled, twinned, written with whitespace, broken) through one reader and one
memo, and every answer must be byte-identical to the answer to a plain parse with no memo at
all, errors included.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.config.parse import parse_config_value
from context_manager.core.memo import MessageMemo
from context_manager.engine.history_reader import HistoryReader
from context_manager.handlers.context import HandlerContext
from context_manager.wire.codec import dumps_wire, loads
from context_manager.wire.errors import CallError, DecodeError

from .strategies import assemble_options, configs, histories, models, twinned
from .support import run
from .test_memo_equivalence import edited, respelled

FUNCTIONS = ("context::count-tokens", "context::prune", "context::assemble")


def frame(payload: dict[str, Any], spelling: str) -> bytes:
    envelope = {"type": "invokefunction", "invocation_id": "i", "function_id": "f", "data": payload}
    if spelling == "indented":
        return json.dumps(envelope, indent=1, ensure_ascii=False).encode()
    if spelling == "broken":
        return orjson.dumps(envelope)[:-2] + b",}"
    return orjson.dumps(envelope)


def answer(function_id: str, data: bytes, config: dict[str, Any], reader: HistoryReader | None,
           memo: MessageMemo | None) -> bytes:
    try:
        payload = (reader.loads(data) if reader is not None else loads(data))["data"]
    except DecodeError as exc:
        return f"parse: {exc.detail}".encode()
    ctx = HandlerContext(config=parse_config_value(config), tokenizers=PACKAGED_TOKENIZERS, memo=memo,
                         payload_from_json=True)
    try:
        return dumps_wire(run(function_id, payload, ctx))
    except CallError as exc:
        return f"{exc.code}: {exc.message}".encode()


@settings(max_examples=400, derandomize=True, database=None, deadline=None)
@given(history=histories(max_rounds=8), model=models(), config=configs(), options=assemble_options(),
       function_id=st.sampled_from(FUNCTIONS),
       spellings=st.lists(st.sampled_from(["compact"] * 6 + ["indented", "broken"]), min_size=10,
                          max_size=10))
def test_answers_through_the_reader_equal_answers_to_a_plain_parse(history, model, config, options,
                                                                  function_id, spellings):
    reader = HistoryReader(("data", "messages"), min_bytes=0)
    memo = MessageMemo()
    base: dict[str, Any] = {"model": model}
    if function_id == "context::assemble" and options is not None:
        base["options"] = options
    nxt = {"role": "user", "timestamp": 99_999, "content": [{"type": "text", "text": "next"}]}
    turns = [history[:-2], history[:-1], history, history, history + [nxt], history + [nxt, nxt]]
    if history:
        turns.append([*history[:-1], edited(history[-1]), nxt])
        turns.append([respelled(m) for m in history])
        turns.append([edited(history[0]), *history[1:]])
        turns.append([twinned(m) for m in history])
    for messages, spelling in zip(turns, spellings):
        data = frame({**base, "messages": copy.deepcopy(messages)}, spelling)
        assert answer(function_id, data, config, reader, memo) == answer(function_id, data, config, None, None)


def test_the_loop_above_does_splice():
    reader = HistoryReader(("data", "messages"), min_bytes=0)
    history = [{"role": "user", "timestamp": i, "content": [{"type": "text", "text": f"turn {i}"}]}
               for i in range(4)]
    model = {"id": "m", "limits": {"context_window": 10000, "max_output_tokens": 100}}
    for messages in (history[:2], history[:3], history, history):
        data = frame({"model": model, "messages": messages}, "compact")
        answer("context::assemble", data, {}, reader, MessageMemo())
    assert reader.spliced == 2
