"""Reading an invocation's routing facts from its opening bytes, and choosing the serving
process for it."""

from __future__ import annotations

from dataclasses import dataclass

import orjson
import pytest

from context_manager.engine.peek import HINT_BYTES, Invocation, peek_invocation, session_hint
from context_manager.processes.routing import SPILL_BYTES, Affinity, pick

ID = "3b0f2c7e-5a41-4c1e-8f0a-6d2b9e7c1a55"


@pytest.mark.parametrize(("frame", "expected"), [
    # The engine's layout: type first, the short members before the payload.
    (b'{"type":"invokefunction","invocation_id":"' + ID.encode() + b'","function_id":"context::assemble",'
     b'"data":{"messages":[]}}', Invocation("context::assemble", ID)),
    # Type last (the Python SDK's layout): parsed in full, same answer.
    (b'{"invocation_id":"' + ID.encode() + b'","function_id":"context::prune","data":{},"type":"invokefunction"}',
     Invocation("context::prune", ID)),
    # Spaces and an escaped id.
    (b'{ "type" : "invokefunction" , "function_id" : "a\\u003ab" , "invocation_id":"x", "data": null}',
     Invocation("a:b", "x")),
    # Fire and forget: no reply due.
    (b'{"type":"invokefunction","function_id":"f","data":{},"action":{"type":"void"}}', Invocation("f", None)),
    # The id after the payload: parsed in full.
    (b'{"type":"invokefunction","function_id":"f","data":{"invocation_id":"no"},"invocation_id":"yes"}',
     Invocation("f", "yes")),
    # A payload the codec refuses (a number out of range) is still an invocation to answer.
    (b'{"type":"invokefunction","invocation_id":"i","function_id":"f","data":{"n":1e999}}', Invocation("f", "i")),
    # A number as the id: no reply can be addressed.
    (b'{"type":"invokefunction","invocation_id":7,"function_id":"f","data":{}}', Invocation("f", None)),
])
def test_an_invocation_is_read_from_its_opening_bytes(frame: bytes, expected: Invocation) -> None:
    assert peek_invocation(frame) == expected


@pytest.mark.parametrize("frame", [
    b'{"type":"invocationresult","invocation_id":"i","function_id":"f","result":{"type":"invokefunction"}}',
    b'{"type":"ping"}',
    b'not json "invokefunction"',
    b'{"type":"invokefunction","function_id":42,"data":{}}',
    b'[{"type":"invokefunction"}]',
])
def test_other_frames_are_not_invocations(frame: bytes) -> None:
    assert peek_invocation(frame) is None


def test_the_session_hint_is_the_opening_of_the_message_array() -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "x" * 1000}], "timestamp": 1}]
    frame = orjson.dumps({"type": "invokefunction", "function_id": "f", "data": {"messages": messages}})
    hint = session_hint(frame)
    assert hint == orjson.dumps(messages)[1:1 + HINT_BYTES]
    assert session_hint(b'{"type":"invokefunction","function_id":"f","data":{}}') is None


@dataclass
class FakeProcess:
    index: int
    load: int = 0
    calls_in_hand: int = 0
    has_room: bool = True


def test_a_call_goes_to_its_sessions_process_unless_that_one_is_far_busier() -> None:
    first, second = FakeProcess(0), FakeProcess(1)
    assert pick([first, second], None) is first  # a new session: the least loaded
    second.load = 10
    assert pick([first, second], 1) is second  # its own, a little busier
    second.load = SPILL_BYTES + 1
    assert pick([first, second], 1) is first  # far busier: it moves
    assert pick([first], 1) is first  # its process is gone
    assert pick([first, second], 1, size=SPILL_BYTES * 2) is second  # a large call moves only for more


def test_a_call_goes_elsewhere_when_its_process_has_no_room_and_waits_when_none_has() -> None:
    first, second = FakeProcess(0, load=100, calls_in_hand=1), FakeProcess(1, load=50, calls_in_hand=4, has_room=False)
    assert pick([first, second], 1) is first
    first.has_room = False
    assert pick([first, second], None) is None
    assert pick([first, second], 1, needs_room=False) is second  # a large call ignores room


def test_ties_go_to_the_process_with_fewer_calls() -> None:
    first, second = FakeProcess(0, load=5, calls_in_hand=2), FakeProcess(1, load=5, calls_in_hand=1)
    assert pick([first, second], None) is second


def test_the_remembered_sessions_are_bounded_and_refreshed_by_use() -> None:
    affinity = Affinity(capacity=3)
    for n in range(3):
        affinity.remember(b"session %d" % n, n)
    affinity.remember(b"session 0", 1)  # used again: the last to go
    affinity.remember(b"session 3", 0)
    assert len(affinity) == 3
    assert [affinity.last(b"session %d" % n) for n in range(4)] == [1, None, 2, 0]
    assert affinity.last(None) is None
