"""Frame builders and the frame decoder of the engine protocol."""

from __future__ import annotations

import orjson
import pytest

from context_manager.engine import protocol
from context_manager.wire.codec import Fragment


def test_frames_leave_optional_fields_out() -> None:
    assert protocol.register_function("a::b") == {"type": "registerfunction", "id": "a::b"}
    assert protocol.invoke("a::b", None) == {"type": "invokefunction", "function_id": "a::b", "data": None}
    assert protocol.invoke("x", {}, "id-1", "default") == {
        "type": "invokefunction",
        "function_id": "x",
        "data": {},
        "invocation_id": "id-1",
        "namespace": "default",
    }
    assert protocol.invoke("x", {}, void=True)["action"] == {"type": "void"}
    assert protocol.error_result("i", "f", "c", "m") == {
        "type": "invocationresult",
        "invocation_id": "i",
        "function_id": "f",
        "error": {"code": "c", "message": "m"},
    }


def test_encode_sorts_keys_and_keeps_float_text() -> None:
    frame = protocol.result("i", "f", {"b": 1, "a": {"z": Fragment(b"1e+16"), "y": "\u00e9"}})
    assert protocol.encode(frame) == (
        '{"function_id":"f","invocation_id":"i","result":{"a":{"y":"\u00e9","z":1e+16},"b":1},"type":"invocationresult"}'
    )


def test_decode_rejects_non_frames() -> None:
    with pytest.raises(protocol.FrameError):
        protocol.decode("{nope")
    with pytest.raises(protocol.FrameError):
        protocol.decode("[1]")
    with pytest.raises(protocol.FrameError):
        protocol.decode('{"type": 3}')
    assert protocol.decode(b'{"type":"ping"}') == {"type": "ping"}


def test_payload_breaking_the_codec_keeps_the_frame_for_a_reply() -> None:
    text = '{"type":"invokefunction","invocation_id":"i","function_id":"f","data":"\\ud800"}'
    with pytest.raises(protocol.PayloadError) as info:
        protocol.decode(text)
    assert info.value.frame["invocation_id"] == "i"
    assert info.value.detail


def test_error_body_tolerates_malformed_errors() -> None:
    assert protocol.error_body({"result": 1}) is None
    assert protocol.error_body({"error": {"code": "c", "message": "m"}}) == ("c", "m")
    assert protocol.error_body({"error": "bad"}) == ("UNKNOWN", '"bad"')
    code, message = protocol.error_body({"error": {"message": "m"}})
    assert (code, message) == ("UNKNOWN", "m")
    assert orjson.loads(protocol.error_body({"error": {"code": 1}})[1]) == {"code": 1}


def test_encode_bytes_is_the_utf8_of_encode() -> None:
    frame = protocol.result("i", "f", {"b": [1.5, "\u00e9\u4e2d"], "a": None})
    assert protocol.encode_bytes(frame) == protocol.encode(frame).encode("utf-8")
    assert protocol.decode(protocol.encode_bytes(frame)) == frame
