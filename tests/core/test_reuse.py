"""The decoding policy and the intake: what a call reuses is decided once, in the open."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from context_manager.core.intake import Intake, decode_history, decode_tools, history_reuse
from context_manager.core.memo import SHARED_MEMO, MessageMemo
from context_manager.core.reuse import NO_REUSE, CallReuse, decoding_policy
from context_manager.core.settings import WorkerConfig
from context_manager.handlers.context import HandlerContext, call_reuse
from context_manager.wire.decode import decode_message
from context_manager.wire.errors import DecodeError

USER = {"role": "user", "content": [{"type": "text", "text": "hello there, how are you today?"}],
        "timestamp": 1}
# Every canonical member spelled out: a parsed copy is its own canonical form.
RESULT = {"role": "function_result", "function_call_id": "c1", "function_id": "fs::read",
          "content": [{"type": "text", "text": "x = 1\n" * 50}], "details": None, "is_error": False,
          "timestamp": 3}
# The same result leaving its defaults out: decoding must fill them in, so it is copied.
SHORT_RESULT = {k: v for k, v in RESULT.items() if k not in ("details", "is_error")}
TOOLS = [{"name": "fs::read", "description": "read a file", "parameters": {"type": "object"}}]


def parsed(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


# --- the policy's decisions -------------------------------------------------------------------


def test_an_owned_payload_counted_with_the_heuristic_gets_an_as_is_map() -> None:
    memo = MessageMemo()
    reuse = decoding_policy(memo, payload_from_json=True, heuristic_counts=True)
    assert reuse == CallReuse(memo=memo, owned=True, as_is={})
    again = decoding_policy(memo, payload_from_json=True, heuristic_counts=True)
    assert again.as_is == {} and again.as_is is not reuse.as_is  # one map per call


def test_a_payload_not_parsed_here_is_neither_owned_nor_used_as_is() -> None:
    memo = MessageMemo()
    assert decoding_policy(memo, payload_from_json=False, heuristic_counts=True) == \
        CallReuse(memo=memo, owned=False, as_is=None)


def test_exact_tokenizer_counts_use_no_as_is_map() -> None:
    memo = MessageMemo()
    assert decoding_policy(memo, payload_from_json=True, heuristic_counts=False) == \
        CallReuse(memo=memo, owned=True, as_is=None)


def test_without_a_memo_nothing_is_reused_across_calls() -> None:
    assert decoding_policy(None, payload_from_json=True, heuristic_counts=True) == \
        CallReuse(memo=None, owned=True, as_is={})
    assert decoding_policy(None, payload_from_json=False, heuristic_counts=True) == NO_REUSE


def test_a_handler_context_maps_onto_the_policy() -> None:
    assert call_reuse(HandlerContext(payload_from_json=True, memo=SHARED_MEMO)) == \
        CallReuse(memo=SHARED_MEMO, owned=True, as_is={})
    auto = HandlerContext(config=WorkerConfig(estimator="auto"), payload_from_json=True, memo=SHARED_MEMO)
    assert call_reuse(auto) == CallReuse(memo=SHARED_MEMO, owned=True, as_is=None)
    assert call_reuse(HandlerContext(memo=None)) == NO_REUSE


def test_a_handler_context_shares_no_memo_unless_given_one() -> None:
    assert HandlerContext().memo is None and HandlerContext().sent_ledger is None
    assert call_reuse(HandlerContext(payload_from_json=True)) == CallReuse(memo=None, owned=True, as_is={})


# --- decoding under a reuse value -------------------------------------------------------------


def test_canonical_parsed_messages_are_used_as_they_are_with_their_estimates() -> None:
    raws = parsed([USER, RESULT, SHORT_RESULT])
    reuse = decoding_policy(None, payload_from_json=True, heuristic_counts=True)
    decoded = decode_history(raws, reuse)
    assert decoded[0] is raws[0] and decoded[1] is raws[1]
    assert decoded[2] is not raws[2] and decoded[2] == decode_message(SHORT_RESULT)
    assert reuse.as_is == {id(raws[0]): 24, id(raws[1]): 127}


def test_without_an_as_is_map_every_message_is_a_new_dict() -> None:
    raws = parsed([USER, RESULT])
    decoded = decode_history(raws, decoding_policy(None, payload_from_json=False, heuristic_counts=True))
    assert [m is raw for m, raw in zip(decoded, raws)] == [False, False]
    assert decoded == [decode_message(USER), decode_message(RESULT)]


def test_a_first_met_history_drops_the_memo_and_a_known_one_keeps_it() -> None:
    memo = MessageMemo()
    reuse = decoding_policy(memo, payload_from_json=False, heuristic_counts=True)
    assert history_reuse(parsed([USER]), reuse) == CallReuse(memo=None, owned=False, as_is=None)
    assert history_reuse(parsed([USER, RESULT]), reuse) is reuse  # its first message was noted
    assert history_reuse([], reuse).memo is None  # nothing to recognise
    assert history_reuse("not a list", reuse) is reuse  # the decoder refuses it


def test_a_known_history_is_served_by_the_memo_from_its_third_call() -> None:
    memo = MessageMemo()
    calls = []
    for _ in range(3):
        intake = Intake(decoding_policy(memo, payload_from_json=False, heuristic_counts=True))
        calls.append((intake.messages(parsed([USER, RESULT])), intake.reuse.memo))
    assert [used is memo for _, used in calls] == [False, True, True]
    assert calls[1][0][0] is calls[2][0][0] and calls[1][0][1] is calls[2][0][1]
    assert (len(memo), memo.hits, memo.misses) == (2, 2, 2)


def test_a_history_that_fails_to_decode_leaves_the_call_without_the_memo() -> None:
    memo = MessageMemo()
    intake = Intake(decoding_policy(memo, payload_from_json=False, heuristic_counts=True))
    with pytest.raises(DecodeError) as caught:
        intake.messages(parsed([USER, {**USER, "timestamp": "later"}]))
    assert str(caught.value) == 'invalid type: string "later", expected i64'
    assert intake.reuse.memo is None
    intake.messages(parsed([USER]))  # decoded again, as a failing struct does to name its error
    assert (len(memo), memo.hits, memo.misses) == (0, 0, 0)


def test_tools_are_shared_through_the_memo_only_when_the_call_has_one() -> None:
    memo = MessageMemo()
    with_memo = decoding_policy(memo, payload_from_json=False, heuristic_counts=True)
    first, second = decode_tools(parsed(TOOLS), with_memo), decode_tools(parsed(TOOLS), with_memo)
    assert first is second and first == TOOLS
    assert (len(memo), memo.hits, memo.misses) == (1, 1, 1)
    fresh = [decode_tools(parsed(TOOLS), NO_REUSE) for _ in range(2)]
    assert fresh[0] == fresh[1] == TOOLS and fresh[0] is not fresh[1]
