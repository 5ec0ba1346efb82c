"""`context::count-tokens`: estimate a request without changing it (spec 01 §6)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from context_manager.core.compaction.prompts import carries_summary
from context_manager.core.counting import history_ceiling
from context_manager.core.counting.calibrated_budget import CalibratedCount, routed_calibration
from context_manager.core.counting.calibration import Calibration, InputDigests, Recall, choose_calibration
from context_manager.core.counting.estimate import (
    HEURISTIC,
    by_role,
    empty_by_role,
    estimator_for_call,
    message_sizes,
    tools_tokens,
)
from context_manager.core.counting.raw_estimate import floats_match, heuristic_tokens
from context_manager.core.intake import Intake
from context_manager.core.reuse import CallReuse
from context_manager.handlers.context import HandlerContext, call_reuse
from context_manager.wire import decode as t
from context_manager.wire.errors import DecodeError, invalid_request

FUNCTION_ID = "context::count-tokens"

_REQUEST = {**t.HISTORY_REQUEST,
            "options": t.FieldSpec(history_ceiling.decode_options, default=history_ceiling.NO_OPTIONS)}


def _raw_list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise t.invalid_type(value, "a sequence")
    return value


# The same request with its messages left as parsed: counted without decoding (see below).
_RAW_REQUEST = {**_REQUEST, "messages": t.FieldSpec(_raw_list)}


def _heuristic_count(raws: list[Any]) -> tuple[list[int], dict[str, int]]:
    """(per-message heuristic estimates, their sum by role) of valid messages, most of them
    straight from the parsed JSON; an unusual message is decoded (which raises its exact error
    if it is invalid)."""
    measured = [heuristic_tokens(raw) for raw in raws]
    if None in measured:
        measured = [
            size if size is not None else HEURISTIC.message(t.decode_message(raw))
            for raw, size in zip(raws, measured)
        ]
    sizes = cast("list[int]", measured)  # no None is left
    buckets = empty_by_role()
    for raw, size in zip(raws, sizes):
        buckets[raw["role"]] += size
    return sizes, buckets


def _decode(
    payload: Any, ctx: HandlerContext, intake: Intake
) -> tuple[dict[str, Any], Any, list[int], dict[str, int]]:
    """(request fields, estimator, per-message estimates, their sum by role).

    For payloads parsed from JSON text the heuristic counts the parsed messages without
    decoding them when everything else in the request is valid.
    """
    tools = t.FieldSpec(intake.tools)
    if ctx.payload_from_json:
        try:
            request = t.decode_struct(payload, "CountTokensRequest", {**_RAW_REQUEST, "tools": tools})
        except DecodeError:
            request = None  # the ordinary decoding below raises the exact error
        if request is not None and request["messages"] is not None:
            est = estimator_for_call(request["model"].id, ctx.config, ctx.tokenizers, request["model"].provider)
            if est is HEURISTIC and floats_match():
                return (request, est, *_heuristic_count(request["messages"]))
    table = {**_REQUEST, "messages": t.FieldSpec(intake.messages), "tools": tools}
    request = t.decode_struct(payload, "CountTokensRequest", table)
    messages = request["messages"]
    if messages is None:
        raise invalid_request()
    est = estimator_for_call(request["model"].id, ctx.config, ctx.tokenizers, request["model"].provider)
    sizes = message_sizes(messages, est, intake.reuse)
    return request, est, sizes, by_role(messages, sizes)


def count_tokens(payload: Any, ctx: HandlerContext, reuse: CallReuse) -> dict[str, Any]:
    measured = _measure(payload, ctx, reuse)
    return _respond(measured, CalibratedCount(_calibration(measured, ctx)))


async def count_tokens_routed(payload: Any, ctx: HandlerContext, reuse: CallReuse) -> dict[str, Any]:
    """``estimator: router``: the router's count of the request, else the local count."""
    measured = _measure(payload, ctx, reuse)
    request = measured.request
    assert ctx.token_counter is not None
    facing = [m for m in request["messages"] if m["role"] != "custom"]
    counted = await ctx.token_counter.count(request["model"].id, request["system_prompt"],
                                            request["tools"], facing)
    routed = routed_calibration(counted, measured.total())
    if routed is not None:
        return _respond(measured, CalibratedCount(routed, routed=True))
    return _respond(measured, CalibratedCount(_calibration(measured, ctx)))


@dataclass(slots=True)
class _Measured:
    request: dict[str, Any]
    est: Any
    sizes: list[int]
    roles: dict[str, int]
    prompt_tokens: int
    tools_count: int

    def total(self) -> int:
        return sum(self.sizes) + self.prompt_tokens + self.tools_count


def _measure(payload: Any, ctx: HandlerContext, reuse: CallReuse) -> _Measured:
    intake = Intake(reuse)
    request, est, sizes, roles = _decode(payload, ctx, intake)
    prompt_tokens = est.text(request["system_prompt"]) if request["system_prompt"] is not None else 0
    counted = tools_tokens(request["tools"], est, intake.reuse) if request["tools"] is not None else 0
    return _Measured(request, est, sizes, roles, prompt_tokens, counted)


def _respond(measured: _Measured, count: CalibratedCount) -> dict[str, Any]:
    request, est = measured.request, measured.est
    _, counted, roles = count.parts(measured.prompt_tokens, measured.tools_count, measured.roles)
    response: dict[str, Any] = {"tokens": 0, "by_role": roles}
    if request["tools"] is not None:
        response["tools_tokens"] = counted
    if request["parts"] is not None:
        response["by_part"] = count.by_part(request["parts"].items(), est)
    response["tokens"] = count.total(measured.total())
    count.describe(response, est)
    return response


def _calibration(measured: _Measured, ctx: HandlerContext) -> Calibration | None:
    """The anchor of ``count_calibration: usage`` (``core.counting.calibration``): every message
    counted here is taken as sent, unless this process reduced the anchored call or the prompt
    before the anchor is over the model's context window."""
    if ctx.config.count_calibration != "usage":
        return None
    request, est, sizes = measured.request, measured.est, measured.sizes
    fixed_tokens = measured.prompt_tokens + measured.tools_count
    messages = request["messages"]
    ledger = ctx.sent_ledger
    recall = None
    if ledger is not None:
        digests = InputDigests((est.kind, request["model"].id, request["system_prompt"], None,
                                request["tools"]), messages, ctx.memo)
        recall = Recall(ledger, digests)
    # No budget is computed here; a prompt over the model's whole window (when the request
    # gives it) was not sent as it is either.
    limits = request["model"].limits
    # A context holding this worker's summary section starts at a compaction's tail; with no
    # budget known here, an anchor that counted more than our estimate of the whole request held
    # the history the summary replaced.
    summarized = measured.total() if carries_summary(request["system_prompt"], messages) else None
    return choose_calibration(messages, range(len(messages)), sizes, fixed_tokens, recall,
                              exact=est.kind == "tokenizer",
                              unrecorded_limit=history_ceiling.unrecorded_limit(
                                  limits.context_window if limits is not None else None,
                                  history_ceiling.ceiling_for(request["options"].max_history_tokens,
                                                              ctx.config.max_history_tokens)),
                              summarized_limit=summarized)


async def handle(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    if ctx.config.estimator == "router" and ctx.token_counter is not None:
        return await count_tokens_routed(payload, ctx, call_reuse(ctx))
    return count_tokens(payload, ctx, call_reuse(ctx))
