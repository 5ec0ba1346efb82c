"""Frames of the iii engine WebSocket protocol (engine 0.23 wire shapes).

Every frame is one JSON object tagged by a lowercase ``type``. Builders leave optional fields out
instead of sending ``null``, which is what the engine expects.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from context_manager.wire import codec
from context_manager.wire.errors import DecodeError, Error

# Frame types the worker sends.
REGISTER_FUNCTION = "registerfunction"
REGISTER_TRIGGER = "registertrigger"
INVOKE_FUNCTION = "invokefunction"
INVOCATION_RESULT = "invocationresult"
REATTACH = "reattach"
PING = "ping"
PONG = "pong"

# Frame types the engine sends.
WORKER_REGISTERED = "workerregistered"
REGISTRATION_REJECTED = "registrationrejected"
TRIGGER_REGISTRATION_RESULT = "triggerregistrationresult"

WORKERS_REGISTER = "engine::workers::register"
CHANNELS_CREATE = "engine::channels::create"

# Error codes this side produces (the engine forwards the target's code unchanged).
INVOCATION_FAILED = "invocation_failed"
FUNCTION_NOT_FOUND = "function_not_found"
TIMEOUT = "TIMEOUT"
SHUTDOWN = "SHUTDOWN"

MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class FrameError(Error, ValueError):
    """A received frame is not a JSON object with a string ``type``."""


class PayloadError(FrameError):
    """A frame is JSON but its payload breaks the number or string rules of the codec.

    ``frame`` is the leniently parsed frame, so an invocation can still be answered.
    """

    def __init__(self, detail: str, frame: dict[str, Any]) -> None:
        super().__init__(detail)
        self.detail = detail
        self.frame = frame


def encode(frame: dict[str, Any]) -> str:
    # Sorted keys and compact text, as the SDKs send results; free-form floats are Fragments.
    return codec.dumps_wire(frame).decode("utf-8")


def encode_bytes(frame: dict[str, Any]) -> bytes:
    """:func:`encode` as UTF-8 bytes, which the socket sends as a text frame without a copy."""
    return codec.dumps_wire(frame)


class FrameReader(Protocol):
    def loads(self, data: bytes) -> Any: ...


def decode(data: str | bytes, reader: FrameReader | None = None) -> dict[str, Any]:
    """Parse one frame with the codec's number rules (the payload is what handlers decode).

    ``reader`` parses byte frames instead of the plain codec (the worker's history reader,
    which gives the same values faster for a history it has seen).
    """
    try:
        value = reader.loads(data) if reader is not None and type(data) is bytes else codec.loads(data)
    except DecodeError as exc:
        lenient = _lenient(data)
        if lenient is None:
            raise FrameError(f"frame is not JSON: {exc.detail}") from None
        raise PayloadError(exc.detail, lenient) from None
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise FrameError("frame is not an object with a string `type`")
    return value


def _lenient(data: str | bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return value
    return None


def register_function(
    function_id: str,
    description: str | None = None,
    request_format: Any = None,
    response_format: Any = None,
    metadata: Any = None,
) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": REGISTER_FUNCTION, "id": function_id}
    if description is not None:
        frame["description"] = description
    if request_format is not None:
        frame["request_format"] = request_format
    if response_format is not None:
        frame["response_format"] = response_format
    if metadata is not None:
        frame["metadata"] = metadata
    return frame


def register_trigger(
    trigger_id: str, trigger_type: str, function_id: str, config: Any
) -> dict[str, Any]:
    return {
        "type": REGISTER_TRIGGER,
        "id": trigger_id,
        "trigger_type": trigger_type,
        "function_id": function_id,
        "config": config,
    }


def invoke(
    function_id: str,
    data: Any,
    invocation_id: str | None = None,
    namespace: str | None = None,
    void: bool = False,
) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": INVOKE_FUNCTION, "function_id": function_id, "data": data}
    if invocation_id is not None:
        frame["invocation_id"] = invocation_id
    if void:
        frame["action"] = {"type": "void"}
    if namespace is not None:
        frame["namespace"] = namespace
    return frame


def result(invocation_id: str, function_id: str, value: Any) -> dict[str, Any]:
    return {
        "type": INVOCATION_RESULT,
        "invocation_id": invocation_id,
        "function_id": function_id,
        "result": value,
    }


def error_result(
    invocation_id: str, function_id: str, code: str, message: str, stacktrace: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if stacktrace is not None:
        body["stacktrace"] = stacktrace
    return {
        "type": INVOCATION_RESULT,
        "invocation_id": invocation_id,
        "function_id": function_id,
        "error": body,
    }


def reattach(previous_worker_id: str, reattach_token: str) -> dict[str, Any]:
    return {
        "type": REATTACH,
        "previous_worker_id": previous_worker_id,
        "reattach_token": reattach_token,
    }


def error_body(frame: dict[str, Any]) -> tuple[str, str] | None:
    """The ``(code, message)`` of an ``invocationresult`` error, or ``None`` when it succeeded."""
    error = frame.get("error")
    if error is None:
        return None
    if isinstance(error, dict):
        code = error.get("code")
        message = error.get("message")
        return (
            code if isinstance(code, str) else "UNKNOWN",
            message if isinstance(message, str) else json.dumps(error),
        )
    return ("UNKNOWN", json.dumps(error))
