"""A request's history and tools list, decoded under the call's reuse (``core.reuse``).

``wire.decode`` holds the pure decoders, which always build new dicts. Here a message may also
come back as the memo's shared dict (met by an earlier call) or as the parsed object itself
(already canonical, in an owned payload counted with the heuristic); errors are the pure
decoders' in every case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from context_manager.core.counting.raw_estimate import floats_match, heuristic_tokens
from context_manager.core.reuse import CallReuse
from context_manager.wire.decode import decode_message, invalid_type
from context_manager.wire.decode import decode_tools as decode_tools_afresh
from context_manager.wire.messages import Message


def history_reuse(value: Any, reuse: CallReuse) -> CallReuse:
    """``reuse`` for the rest of a call whose history is ``value``.

    A history the memo does not recognise (a one-off request, a conversation's first call) has
    nothing to find there: the call drops the memo, so no later step looks anything up.
    """
    memo = reuse.memo
    if memo is None or type(value) is not list or memo.recognise(value):
        return reuse
    return replace(reuse, memo=None)


def decode_history(value: Any, reuse: CallReuse) -> list[Message]:
    """The messages of ``value``; ``reuse`` is what ``history_reuse`` returned for it."""
    if type(value) is not list:
        raise invalid_type(value, "a sequence")
    decode = _message_decoder(reuse.as_is)
    memo = reuse.memo
    if memo is not None:  # messages seen by an earlier call come back already decoded
        return memo.decode_recognised(value, decode, reuse.owned)
    return [decode(v) for v in value]


def _message_decoder(as_is: dict[int, int] | None) -> Callable[[Any], Message]:
    if as_is is None or not floats_match():
        return decode_message

    def decode(raw: Any) -> Message:
        # A message that already is its canonical form member for member is used as it is:
        # checking it measures it, and copying it would change nothing but key order.
        size = heuristic_tokens(raw, exact=True)
        if size is None:
            return decode_message(raw)
        as_is[id(raw)] = size
        return raw

    return decode


def decode_tools(value: Any, reuse: CallReuse) -> list[dict[str, Any]]:
    """The tools list of ``value``, shared through the memo when the call has one."""
    memo = reuse.memo
    if memo is None:
        return decode_tools_afresh(value)
    return memo.decode_value("tools", value, decode_tools_afresh)


class Intake:
    """One call's history and tools decoders, for its request's field table.

    ``reuse`` starts as the call's policy; decoding the history settles it (``history_reuse``)
    before any message is decoded, so what follows (the tools list, the passes) runs with the
    settled value even when the history fails to decode and is decoded again to name the error.
    """

    __slots__ = ("reuse",)

    def __init__(self, reuse: CallReuse) -> None:
        self.reuse = reuse

    def messages(self, value: Any) -> list[Message]:
        self.reuse = history_reuse(value, self.reuse)
        return decode_history(value, self.reuse)

    def tools(self, value: Any) -> list[dict[str, Any]]:
        return decode_tools(value, self.reuse)
