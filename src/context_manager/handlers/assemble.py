"""`context::assemble`: decode the request, run the pipeline, answer (spec 02 §7, §9).

Options that are absent or null fall back to the worker configuration (``max_result_tokens``,
``tail_turns``, ``anchor_messages``, ``max_history_tokens``) or to the documented defaults
(``allow_prune`` and ``allow_compaction`` true,
``request_overhead_tokens`` 0, no protected functions, ``explain`` and ``preview_only`` false).
The prune thresholds are configuration only: assemble's options do not carry them.
"""

from __future__ import annotations

from typing import Any

from context_manager.core.assemble import AssembleOptions, AssembleRequest, assemble
from context_manager.core.counting import history_ceiling
from context_manager.core.intake import Intake
from context_manager.handlers.context import HandlerContext, call_reuse
from context_manager.handlers.prune import function_ids
from context_manager.wire import decode as t
from context_manager.wire.errors import invalid_request

FUNCTION_ID = "context::assemble"

_OPTIONS = {
    "reserved_tokens": t.FieldSpec(t.u64),
    "tail_turns": t.FieldSpec(t.usize),
    "allow_compaction": t.FieldSpec(t.boolean),
    "allow_prune": t.FieldSpec(t.boolean),
    "protected_functions": t.FieldSpec(function_ids),
    "max_result_tokens": t.FieldSpec(t.u64),
    "request_overhead_tokens": t.FieldSpec(t.u64),
    "thinking_level": t.FieldSpec(t.enum_of(t.THINKING_LEVELS)),
    "lease_key": t.FieldSpec(t.string),
    "previous_summary": t.FieldSpec(t.string),
    "anchor_messages": t.FieldSpec(t.usize),
    "explain": t.FieldSpec(t.boolean),
    "preview_only": t.FieldSpec(t.boolean),
    "max_history_tokens": t.FieldSpec(history_ceiling.decode_option),
}


def decode_options(value: Any) -> AssembleOptions:
    fields = t.decode_struct(value, "AssembleOptions", _OPTIONS)
    fields["explain"] = fields["explain"] is True  # absent or null: not asked
    fields["preview_only"] = fields["preview_only"] is True
    return AssembleOptions(**fields)


_REQUEST = {
    **t.HISTORY_REQUEST,
    "options": t.FieldSpec(decode_options, default=AssembleOptions()),
}


def decode_request(payload: Any, intake: Intake) -> AssembleRequest:
    """Decode and check the request, history and tools through ``intake``; raises DecodeError
    or `messages is required`."""
    table = {**_REQUEST, "messages": t.FieldSpec(intake.messages), "tools": t.FieldSpec(intake.tools)}
    fields = t.decode_struct(payload, "AssembleRequest", table)
    if fields["messages"] is None:
        raise invalid_request()
    return AssembleRequest(**fields)


async def handle(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    intake = Intake(call_reuse(ctx))
    request = decode_request(payload, intake)
    return await assemble(request, ctx, intake.reuse)
