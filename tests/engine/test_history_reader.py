"""The history reader: a request resending a known history parses to exactly what a full parse
gives, reuses the known part, and never keeps more than its byte budget."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from context_manager.engine.history_reader import HistoryReader, array_start
from context_manager.wire.codec import loads
from context_manager.wire.errors import DecodeError

PATH = ("data", "messages")


def message(i: int, text: str = "") -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text or f"turn {i} " + "x" * 40}],
            "timestamp": 1_000 + i}


def frame(messages: list[Any], invocation: int = 1, **data: Any) -> bytes:
    return orjson.dumps({"type": "invokefunction", "invocation_id": f"id-{invocation}",
                         "function_id": "context::assemble",
                         "data": {"messages": messages, "model": "m", **data}})


def same(a: Any, b: Any) -> bool:
    """Equal values of equal JSON types (``==`` alone says 1 == 1.0 == True)."""
    return orjson.dumps(a) == orjson.dumps(b)


def reader() -> HistoryReader:
    return HistoryReader(PATH, min_bytes=0)


def agent_loop(reader: HistoryReader, turns: int, start: int = 3) -> list[bytes]:
    history = [message(i) for i in range(start)]
    frames = []
    for turn in range(turns):
        history = history + [message(100 + turn)]
        frames.append(frame(history, turn))
    for data in frames:
        assert same(reader.loads(data), loads(data))
    return frames


def test_an_agent_loop_is_parsed_once_and_then_only_its_new_messages():
    r = reader()
    agent_loop(r, 6)
    # first sighting noted, second remembered, the four after it spliced
    assert r.spliced == 4
    assert len(r) == 1  # each longer history replaces the one it extends


def test_spliced_messages_are_the_objects_parsed_before():
    r = reader()
    history = [message(i) for i in range(4)]
    r.loads(frame(history, 1))
    second = r.loads(frame(history, 2))["data"]["messages"]
    third = r.loads(frame(history + [message(9)], 3))["data"]["messages"]
    assert all(a is b for a, b in zip(second, third[:4]))
    assert third[4] == message(9)


def test_the_same_history_resent_is_spliced_with_nothing_added():
    r = reader()
    history = [message(i) for i in range(5)]
    for i in range(4):
        data = frame(history, i)
        assert same(r.loads(data), loads(data))
    assert r.spliced == 2


@pytest.mark.parametrize("tail", [
    b',"messages":[]}}',                       # a later duplicate key wins in a full parse
    b'},"data":{"messages":[1]}}',             # so does a later duplicate of the holder
])
def test_a_later_duplicate_key_is_read_as_a_full_parse_reads_it(tail: bytes):
    r = reader()
    history = [message(i) for i in range(4)]
    r.loads(frame(history, 1))
    r.loads(frame(history, 2))
    head = b'{"type":"invokefunction","invocation_id":"x","data":{"messages":'
    data = head + orjson.dumps(history + [message(7)]) + tail
    expected = loads(data)
    assert same(r.loads(data), expected)
    assert expected["data"]["messages"] in ([], [1])


@pytest.mark.parametrize("tail", [b',{"role":}]}}', b']', b',]}}', b'] , }}', b'\xff]}}'])
def test_a_broken_tail_raises_the_full_parse_error(tail: bytes):
    r = reader()
    history = [message(i) for i in range(4)]
    r.loads(frame(history, 1))
    r.loads(frame(history, 2))
    data = frame(history)[:-3] + tail  # the known history, then something broken
    with pytest.raises(DecodeError) as full:
        loads(data)
    with pytest.raises(DecodeError) as spliced:
        r.loads(data)
    assert spliced.value.detail == full.value.detail


def test_an_edited_older_message_is_not_taken_from_the_known_history():
    r = reader()
    history = [message(i) for i in range(6)]
    r.loads(frame(history, 1))
    r.loads(frame(history, 2))
    edited = history[:2] + [message(2, "changed")] + history[3:] + [message(9)]
    data = frame(edited, 3)
    value = r.loads(data)
    assert value["data"]["messages"][2]["content"][0]["text"] == "changed"
    assert same(value, loads(data))


def test_pretty_printed_histories_are_parsed_plainly_and_never_kept():
    r = reader()
    history = [message(i) for i in range(4)]
    for _ in range(3):
        data = json.dumps({"type": "invokefunction", "data": {"messages": history}}, indent=2).encode()
        assert same(r.loads(data), loads(data))
    assert len(r) == 0 and r.spliced == 0


def test_a_history_with_differently_escaped_text_is_not_kept():
    r = reader()
    history = [message(i, "café") for i in range(4)]
    for _ in range(3):
        data = json.dumps({"data": {"messages": history}}, separators=(",", ":")).encode()  # \u00e9
        assert same(r.loads(data), loads(data))
    assert len(r) == 0


def test_memory_stays_within_the_budget_least_recent_first_out():
    history_bytes = len(orjson.dumps([message(i) for i in range(20)]))
    r = HistoryReader(PATH, max_bytes=history_bytes * 3, min_bytes=0)
    for conversation in range(6):
        history = [message(i, f"conversation {conversation} turn {i}") for i in range(20)]
        r.loads(frame(history, 1))
        r.loads(frame(history, 2))
        assert r.size_bytes <= history_bytes * 3
    assert len(r) == 3
    # the oldest conversation was forgotten: its next turn is a full parse again
    oldest = [message(i, f"conversation 0 turn {i}") for i in range(20)]
    before = r.spliced
    r.loads(frame(oldest, 3))
    assert r.spliced == before


def test_small_requests_are_never_kept():
    r = HistoryReader(PATH)  # the default threshold
    history = [message(i) for i in range(5)]
    for i in range(3):
        r.loads(frame(history, i))
    assert len(r) == 0


def test_a_conversation_that_starts_small_is_remembered_once_it_is_large_enough():
    r = HistoryReader(PATH, min_bytes=2_000)
    history = [message(i) for i in range(3)]
    frames = []
    for turn in range(40):
        history = history + [message(100 + turn)]
        frames.append(frame(history, turn))
    for data in frames:
        assert same(r.loads(data), loads(data))
    assert len(frames[0]) < 2_000 < len(frames[-1])
    assert r.spliced > 20


@pytest.mark.parametrize("data, path, expected", [
    (b'{"messages":[1]}', ("messages",), 13),
    (b' { "messages" : [ 1 ] }', ("messages",), 17),
    (b'{"model":"a[\\"]{","tools":[{"a":[1,{}]}],"messages":[]}', ("messages",), 53),
    (b'{"type":"x","data":{"_caller":"w","messages":[{}]}}', PATH, 46),
    (b'{"data":{"messages":{}}}', PATH, None),        # not an array
    (b'{"data":[{"messages":[]}]}', PATH, None),      # not an object on the way
    (b'{"data":{"model":"m"}}', PATH, None),          # absent
    (b'{"data":{"messages" [1]}}', PATH, None),       # not JSON
    (b'["messages",[1]]', ("messages",), None),
    (b'{"x":[' + b"1," * 300 + b'1],"messages":[1]}', ("messages",), None),  # header too long
    (b'{"x":"' + b"y" * 10_000 + b'","messages":[1]}', ("messages",), 10_020),  # one long token
])
def test_the_array_start_is_found_only_where_the_path_leads(data, path, expected):
    assert array_start(data, path) == expected
    if expected is not None:
        assert data[expected - 1:expected] == b"["
