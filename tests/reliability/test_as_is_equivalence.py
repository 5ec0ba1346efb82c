"""Parsed messages used as they are never change anything a caller or a store can see.

A payload parsed from JSON text lets assemble and prune keep a message that already is its
canonical form instead of copying it (key order aside). Each case runs the same JSON text both
ways, written in the canonical key order and with every key sorted (as the engine writes), and
everything observable must be byte-identical: the answer or error, every summariser prompt, and
every lease key (a hash over canonical serializations).
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from context_manager.core.compaction.lease import default_lease_key
from context_manager.core.counting.raw_estimate import heuristic_tokens
from context_manager.core.memo import MessageMemo
from context_manager.core.passes.emergency import inline_reference, message_reference
from context_manager.ports import LeaseRecord, SummarizeRequest
from context_manager.wire.canonical import canonical_block, canonical_message
from context_manager.wire.codec import dumps, dumps_wire, loads
from context_manager.wire.decode import decode_message
from context_manager.wire.errors import CallError

from .strategies import RELIABILITY, assemble_options, configs, histories, models, sessions, short_text
from .support import FakeSummarizer, MemoryLeaseStore, context, run


class KeyRecordingStore(MemoryLeaseStore):
    """Remembers every lease key it was asked about (released leases leave no record)."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[tuple[str, str]] = []

    async def get(self, scope: str, key: str) -> LeaseRecord | None:
        self.keys.append((scope, key))
        return await super().get(scope, key)

    async def swap(self, scope: str, key: str, record: LeaseRecord) -> LeaseRecord | None:
        self.keys.append((scope, key))
        return await super().swap(scope, key, record)


def observed(function_id: str, text: bytes, config: dict[str, Any], summary: str, as_parsed: bool,
             memo: MessageMemo | None) -> tuple[bytes, list[str], list[tuple[str, str]]]:
    prompts: list[str] = []

    def reply(request: SummarizeRequest) -> str:
        prompts.append(request.system_prompt + "\x00" + request.user_prompt)
        return summary

    store = KeyRecordingStore()
    ctx = context(config, summarizer=FakeSummarizer(reply=reply), lease_store=store)
    ctx.payload_from_json = as_parsed
    ctx.memo = memo
    try:
        answer = dumps_wire(run(function_id, loads(text), ctx))
    except CallError as exc:
        answer = f"{exc.code}: {exc.message}".encode()
    return answer, prompts, store.keys


@RELIABILITY
@given(st.one_of(histories(max_rounds=14), sessions()), models(), configs(), assemble_options(),
       st.one_of(st.just("Summary: the earlier work."), short_text),
       st.sampled_from(["context::assemble", "context::prune"]), st.booleans(), st.booleans())
def test_parsed_messages_used_as_is_change_nothing_observable(
    history: list[dict[str, Any]], model: dict[str, Any], config: dict[str, Any], options: Any,
    summary: str, function_id: str, sorted_keys: bool, with_memo: bool,
) -> None:
    payload: dict[str, Any] = {"messages": history, "model": model}
    if options is not None and function_id == "context::assemble":
        payload["options"] = options
    text = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS if sorted_keys else 0)
    memo = MessageMemo() if with_memo else None
    if memo is not None:  # a second sighting, so that the memo holds the history
        observed(function_id, text, config, summary, True, memo)
    expected = observed(function_id, text, config, summary, False, None)
    assert observed(function_id, text, config, summary, True, memo) == expected


@RELIABILITY
@given(st.one_of(histories(max_rounds=10), sessions()), st.booleans())
def test_a_message_used_as_is_has_the_canonical_serialization_of_its_decoding(
    history: list[dict[str, Any]], sorted_keys: bool,
) -> None:
    """What lease keys, references and previews hash: identical bytes either way."""
    parsed = loads(orjson.dumps(history, option=orjson.OPT_SORT_KEYS if sorted_keys else 0))
    decoded = [decode_message(raw) for raw in parsed]
    for raw, message in zip(parsed, decoded):
        if heuristic_tokens(raw, exact=True) is None:
            continue
        assert dumps(canonical_message(raw)) == dumps(message)
        assert dumps(canonical_message(message)) == dumps(message)
        for raw_block, block in zip(raw["content"], message["content"]):
            assert dumps(canonical_block(raw_block)) == dumps(block)
            if block["type"] == "function_result":
                assert inline_reference(raw_block, "f", 7) == inline_reference(block, "f", 7)
        if message["role"] == "function_result":
            assert dumps_wire(message_reference(raw, 9)) == dumps_wire(message_reference(message, 9))
    as_is = [raw if heuristic_tokens(raw, exact=True) is not None else message
             for raw, message in zip(parsed, decoded)]
    assert default_lease_key(as_is) == default_lease_key(decoded)
