"""The bounded summarisation pipeline (spec 03 §3.1–§3.6).

The rendered head is sent to the summariser in as few requests as fit the model's input budget
(at most 32): each request carries a consecutive byte range of the rendered conversation, and
every request after the first is anchored on the previous reply, so the last reply summarises
everything. One deadline covers the whole pipeline and ends before the lease could expire.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from context_manager.core.compaction.conversation import (
    ConversationContext,
    conversation_form,
    conversation_instructions,
)
from context_manager.core.compaction.prompts import (
    FRAGMENT_NOTE,
    build_system_prompt,
    render_user_prompt,
    strip_media,
    trim,
)
from context_manager.core.compaction.summarizer_model import SummarizerTally
from context_manager.core.settings import WorkerConfig
from context_manager.ports import (
    Estimator,
    SummarizeError,
    Summarizer,
    SummarizerConversation,
    SummarizerEmpty,
    SummarizeRequest,
    SummarizerFailed,
    reply_usage,
)
from context_manager.wire.decode import ModelInput
from context_manager.wire.ints import I64_MAX, saturating_add, saturating_mul

MAX_CHUNKS = 32
REQUEST_OVERHEAD_TOKENS = 64
# Only used to size the estimate: the largest signed 64-bit integer, 19 digits.
PLACEHOLDER_TIMESTAMP = I64_MAX



def user_message(text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "timestamp": PLACEHOLDER_TIMESTAMP,
    }


def request_tokens(estimator: Estimator, system_prompt: str, user_prompt: str) -> int:
    """Estimated size of one summariser request, framing overhead included (03 §3.2)."""
    return (
        estimator.text(system_prompt)
        + estimator.message(user_message(user_prompt))
        + REQUEST_OVERHEAD_TOKENS
    )


def is_char_boundary(data: bytes, index: int) -> bool:
    return index == 0 or index == len(data) or (data[index] & 0xC0) != 0x80


def back_off(data: bytes, index: int) -> int:
    while not is_char_boundary(data, index):
        index -= 1
    return index


def fitting_prefix(estimator: Estimator, system_prompt: str, text: bytes, budget: int) -> int:
    """The longest character-boundary prefix (in bytes) whose request fits ``budget``; 0 if none."""

    def fits(end: int) -> bool:
        return request_tokens(estimator, system_prompt, text[:end].decode("utf-8")) <= budget

    if fits(len(text)):
        return len(text)
    low, high = 0, len(text)
    while low < high:
        middle = low + (high - low + 1) // 2
        if fits(back_off(text, middle)):
            low = middle
        else:
            high = middle - 1
    return back_off(text, low)


def preflight_chunk_bound(
    estimator: Estimator, prompt_bytes: int, input_budget: int, instructions: str | None
) -> int:
    """A lower bound on the number of requests needed; fails fast when it exceeds the cap."""
    empty_request = request_tokens(estimator, build_system_prompt(None, instructions), "")
    if input_budget <= empty_request:
        raise SummarizerFailed(
            f"summary instructions leave no room for history within {input_budget} tokens"
        )
    capacity = input_budget - empty_request
    # A fragment of n raw bytes serialises to at least n bytes, so more than 4*capacity+3 bytes
    # can never fit one request, whatever the escaping.
    max_fragment = saturating_add(saturating_mul(capacity, 4), 3)
    bound = -(-prompt_bytes // max_fragment)
    if bound > MAX_CHUNKS:
        raise SummarizerFailed(f"history needs at least {bound} fragments; maximum is {MAX_CHUNKS}")
    return bound


def pipeline_deadline_ms(config: WorkerConfig) -> int:
    """``min(summarizer_timeout_ms, lease_ttl_secs*1000 - 1000)``, never below zero."""
    ttl_ms = saturating_mul(config.lease_ttl_secs, 1000)
    return min(config.summarizer_timeout_ms, max(0, ttl_ms - 1000))


async def summarize_head(
    summarizer: Summarizer,
    model: ModelInput,
    head: Sequence[dict[str, Any]],
    input_budget: int,
    *,
    previous_summary: str | None,
    instructions: str | None,
    estimator: Estimator,
    config: WorkerConfig,
    log: logging.Logger | None = None,
    tally: SummarizerTally | None = None,
    conversation: ConversationContext | None = None,
) -> str:
    """Summarise ``head`` within ``input_budget`` tokens per request (03 §3.1), every request
    counted with ``estimator`` (the calling function's, so both count alike).

    Returns the last reply unmodified. Raises :class:`SummarizeError`; never anything else.
    ``tally`` records every reply: the router's usage when the reply carries one, else the
    request's estimate and the reply's. ``conversation`` (``summarizer_request: conversation``):
    when the whole head fits one request both rendered and as that conversation, the request
    carries both forms (``core.compaction.conversation``).
    """
    log = log or logging.getLogger("context_manager.summarize")
    prompt = render_user_prompt(strip_media(head, config.max_output_chars)).encode("utf-8")
    # The pre-flight needs no waiting, so it is reported as itself even with a zero deadline.
    preflight_chunk_bound(estimator, len(prompt), input_budget, instructions)
    whole = None
    if conversation is not None:
        whole = _one_request_conversation(conversation, head, prompt, input_budget, previous_summary,
                                          instructions, estimator)
    deadline_ms = pipeline_deadline_ms(config)
    try:
        async with asyncio.timeout(deadline_ms / 1000):
            return await _chunk_loop(
                summarizer, model, estimator, prompt, input_budget,
                previous_summary, instructions, log, tally, whole,
            )
    except TimeoutError:
        raise SummarizerFailed("summary pipeline exceeded its time budget") from None


def _one_request_conversation(
    context: ConversationContext,
    head: Sequence[dict[str, Any]],
    prompt: bytes,
    input_budget: int,
    previous_summary: str | None,
    instructions: str | None,
    estimator: Estimator,
) -> tuple[SummarizerConversation, int] | None:
    """The head as its conversation and that request's estimate, when the rendered head needs no
    second request and the conversation also fits ``input_budget``; else ``None``."""
    rendered = request_tokens(estimator, build_system_prompt(previous_summary, instructions), prompt.decode("utf-8"))
    if rendered > input_budget:
        return None
    text = conversation_instructions(previous_summary, instructions)
    tokens = (context.fixed_tokens + sum(estimator.message(message) for message in head)
              + estimator.message(user_message(text)) + REQUEST_OVERHEAD_TOKENS)
    return (conversation_form(context, head, text), tokens) if tokens <= input_budget else None


async def _chunk_loop(
    summarizer: Summarizer,
    model: ModelInput,
    estimator: Estimator,
    prompt: bytes,
    input_budget: int,
    previous_summary: str | None,
    instructions: str | None,
    log: logging.Logger,
    tally: SummarizerTally | None = None,
    whole: tuple[SummarizerConversation, int] | None = None,
) -> str:
    remaining = prompt
    summary: str | None = None
    for chunk in range(MAX_CHUNKS):
        system_prompt = build_system_prompt(
            summary if summary is not None else previous_summary, instructions
        )
        if chunk > 0 or request_tokens(estimator, system_prompt, remaining.decode("utf-8")) > input_budget:
            system_prompt += FRAGMENT_NOTE
        end = fitting_prefix(estimator, system_prompt, remaining, input_budget)
        if end == 0:
            raise SummarizerFailed(
                "summary instructions and anchor leave no room for history "
                f"within {input_budget} tokens"
            )
        fragment = remaining[:end].decode("utf-8")
        log.debug(
            "summarising fragment %d of model %s: %d bytes, %d estimated tokens",
            chunk + 1, model.id, end, request_tokens(estimator, system_prompt, fragment),
        )
        # With ``whole`` the first request is the only one: the rendered head fits it.
        conversation, estimate = (whole if whole is not None and chunk == 0
                                  else (None, request_tokens(estimator, system_prompt, fragment)))
        reply = await _call(
            summarizer,
            SummarizeRequest(system_prompt, fragment, model.id, model.provider, model.to_dict(), conversation),
        )
        if tally is not None:
            tally.record(reply_usage(reply), estimate, estimator.text(reply))
        reply = str(reply)  # the text alone from here on (a ``SummaryReply`` also carries usage)
        if not trim(reply):
            raise SummarizerEmpty()
        remaining = remaining[end:]
        if not remaining:
            return reply
        summary = reply
    # Partial summaries would silently drop the unsummarised rest of the history.
    raise SummarizerFailed(f"history requires more than {MAX_CHUNKS} bounded summary calls")


async def _call(summarizer: Summarizer, request: SummarizeRequest) -> str:
    """One summariser call; an adapter's unexpected exception becomes a ``failed`` error."""
    try:
        reply = await summarizer.summarize(request)
    except SummarizeError:
        raise
    except Exception as exc:  # noqa: BLE001 - a broken adapter must not escape as a traceback
        raise SummarizerFailed(str(exc) or type(exc).__name__) from exc
    if not isinstance(reply, str):
        raise SummarizerFailed(f"summariser returned {type(reply).__name__}, expected text")
    return reply
