"""`context::compact`: decode the request, run the compaction, answer (spec 03 §4)."""

from __future__ import annotations

from typing import Any

from context_manager.core.compaction.compact import CompactOptions, compact
from context_manager.handlers.context import HandlerContext
from context_manager.wire import decode as t
from context_manager.wire.errors import invalid_request

FUNCTION_ID = "context::compact"

_OPTIONS = {
    "tail_turns": t.FieldSpec(t.usize),
    "previous_summary": t.FieldSpec(t.string),
    "preserve_recent_tokens": t.FieldSpec(t.u64),
    "lease_key": t.FieldSpec(t.string),
    "instructions": t.FieldSpec(t.string),
}


def decode_options(value: Any) -> CompactOptions:
    return CompactOptions(**t.decode_struct(value, "CompactOptions", _OPTIONS))


_REQUEST = {
    "messages": t.FieldSpec(t.decode_messages),
    "model": t.FieldSpec(t.decode_model_input, required=True),
    "options": t.FieldSpec(decode_options, default=CompactOptions()),
}


async def handle(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    request = t.decode_struct(payload, "CompactRequest", _REQUEST)
    messages = request["messages"]
    if messages is None:
        raise invalid_request()
    return await compact(messages, request["model"], request["options"], ctx)
