"""How one ``invokefunction`` is answered: the reply frame's bytes, or None when none is due.

The engine client answers the frames it reads; a worker process of ``--processes N`` answers the
raw frames its parent hands over. Both go through these functions, so a reply is the same bytes
whichever process wrote it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from context_manager.engine import protocol
from context_manager.engine.peek import Invocation
from context_manager.wire import trace
from context_manager.wire.errors import error_envelope, is_defect

Handler = Callable[[Any], Awaitable[Any]]
HandlerFor = Callable[[str], Handler | None]


def failure_reply(call: Invocation, code: str, message: str) -> bytes | None:
    """The error reply to an invocation known only by its routing facts (None: no reply due)."""
    if call.invocation_id is None:
        return None
    return protocol.encode_bytes(protocol.error_result(call.invocation_id, call.function_id, code, message))


def refusal(exc: protocol.PayloadError, log: logging.Logger) -> bytes | None:
    """The reply to an invocation whose payload the codec refused (None for other frames)."""
    frame = exc.frame
    invocation_id = frame.get("invocation_id")
    if frame["type"] == protocol.INVOKE_FUNCTION and isinstance(invocation_id, str):
        return protocol.encode_bytes(
            protocol.error_result(
                invocation_id,
                str(frame.get("function_id")),
                protocol.INVOCATION_FAILED,
                f"serialization error: {exc.detail}",
            )
        )
    log.warning("ignoring an engine frame: %s", exc.detail)
    return None


async def answer(handler_for: HandlerFor, frame: dict[str, Any], log: logging.Logger) -> bytes | None:
    """The reply frame to one decoded ``invokefunction`` (None when no reply is due)."""
    function_id = frame.get("function_id")
    invocation_id = frame.get("invocation_id")
    handler = handler_for(function_id) if isinstance(function_id, str) else None
    if handler is None:
        if isinstance(invocation_id, str):
            return protocol.encode_bytes(
                protocol.error_result(
                    invocation_id,
                    str(function_id),
                    protocol.FUNCTION_NOT_FOUND,
                    f"Function '{function_id}' not found",
                )
            )
        return None
    reply_to = str(invocation_id)
    function_id = str(function_id)  # a registered id: the lookup above matched a string
    # The caller's context, for the handler's spans and its own outgoing calls.
    context_token = trace.CURRENT_TRACE.set(trace.from_frame(frame))
    try:
        value = await handler(frame.get("data"))
        # Encoded here so that an unencodable result still gets an error reply.
        reply = protocol.encode_bytes(protocol.result(reply_to, function_id, value))
    except Exception as exc:  # every failure answers; a caller never waits for a timeout
        if is_defect(exc):
            # The traceback stays in this worker's log: source paths are not for remote callers.
            log.exception("function %s raised", function_id)
        code, message = error_envelope(exc)
        reply = protocol.encode_bytes(protocol.error_result(reply_to, function_id, code, message))
    finally:
        trace.CURRENT_TRACE.reset(context_token)
    return reply if isinstance(invocation_id, str) else None


async def answer_message(
    handler_for: HandlerFor,
    message: bytes,
    reader: protocol.FrameReader | None,
    log: logging.Logger,
) -> bytes | None:
    """:func:`answer` for an undecoded invocation frame, decoded as the engine client would."""
    try:
        frame = protocol.decode(message, reader)
    except protocol.PayloadError as exc:
        return refusal(exc, log)
    except protocol.FrameError as exc:
        log.warning("ignoring an engine frame: %s", exc)
        return None
    if frame["type"] != protocol.INVOKE_FUNCTION:
        log.warning("ignoring a %s frame handed over as an invocation", frame["type"])
        return None
    return await answer(handler_for, frame, log)
