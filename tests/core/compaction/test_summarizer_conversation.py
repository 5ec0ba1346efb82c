"""``summarizer_request: conversation``: the summariser asked inside the conversation it summarises,
so the provider reads the head from its prompt cache; the rendered form travels alongside."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from compaction_support import A, FakeSummarizer, MemoryLeaseStore, U, X, decoded, history

from context_manager.core.compaction.conversation import CONVERSATION_LINE, conversation_instructions
from context_manager.core.compaction.prompts import build_system_prompt, render_system_prompt
from context_manager.core.settings import DEFAULT_CONFIG, ModelChoice, WorkerConfig
from context_manager.handlers import assemble
from context_manager.handlers.context import HandlerContext
from context_manager.ports import ManualClock, ModelBudget, RouterModel, SummarizerConversation

SUMMARY = "## Goal\n- fix the parser"
CONVERSATION = replace(DEFAULT_CONFIG, summarizer_request="conversation")
TOOL = {"name": "read_file", "description": "Read a file", "parameters": {"type": "object"}}
# usable 4000 (window 5000, output 500): the first five messages (3021 tokens) are the head.
MESSAGES = (U("fix the parser " + X(600)), A("reading " + X(600)), U("more " + X(600)), A("r2"),
            U(X(1100)), A("r3"), U("q4" + X(1100)))
MODEL = {"id": "small", "limits": {"context_window": 5000, "max_output_tokens": 500}}


class Catalog:
    async def get_model_budget(self, provider: str | None, model_id: str) -> ModelBudget | None:
        return ModelBudget(RouterModel(model_id, 5000, 500, provider=provider), 500)


def run(config: WorkerConfig, messages: tuple[dict[str, Any], ...] = MESSAGES,
        **options: Any) -> tuple[dict[str, Any], FakeSummarizer]:
    summarizer = FakeSummarizer(replies=[SUMMARY])
    payload: dict[str, Any] = {"messages": history(*messages), "system_prompt": "You are a coder.",
                               "tools": [TOOL], "model": MODEL}
    if options:
        payload["options"] = options
    ctx = HandlerContext(config=config, summarizer=summarizer, lease_store=MemoryLeaseStore(),
                         clock=ManualClock(1_000_000), resolver=Catalog())
    return asyncio.run(assemble.handle(payload, ctx)), summarizer


def test_by_default_no_request_carries_a_conversation():
    response, summarizer = run(DEFAULT_CONFIG)
    assert response["applied"]["tail_start_index"] == 5
    assert [request.conversation for request in summarizer.requests] == [None]


def test_the_request_is_the_conversation_the_model_last_read_then_the_instructions():
    plain, plain_summarizer = run(DEFAULT_CONFIG)
    response, summarizer = run(CONVERSATION)
    [request] = summarizer.requests
    [rendered] = plain_summarizer.requests
    assert request.conversation == SummarizerConversation(
        "You are a coder.", tuple(decoded(*MESSAGES)[:5]), (TOOL,),
        CONVERSATION_LINE + "\n\n" + build_system_prompt(None, None))
    # The rendered form is the default request, and the answer is the default answer.
    assert (request.system_prompt, request.user_prompt) == (rendered.system_prompt, rendered.user_prompt)
    assert response == plain


def test_an_update_reads_the_summary_where_the_model_saw_it_and_anchors_on_it():
    _, summarizer = run(CONVERSATION, previous_summary="## Goal\n- earlier work")
    conversation = summarizer.requests[0].conversation
    assert conversation is not None
    assert conversation.system_prompt == render_system_prompt("You are a coder.", "## Goal\n- earlier work")
    assert conversation.instructions == conversation_instructions("## Goal\n- earlier work", None)
    assert conversation.instructions.startswith(CONVERSATION_LINE + "\n\nRevise the anchored summary")


def test_standing_instructions_close_the_conversation_too():
    _, summarizer = run(replace(CONVERSATION, compaction_instructions="Keep every file path."))
    conversation = summarizer.requests[0].conversation
    assert conversation is not None
    assert conversation.instructions == conversation_instructions(None, "Keep every file path.")
    assert conversation.instructions != conversation_instructions(None, None)


def test_a_head_that_needs_more_than_one_request_goes_rendered():
    heavy = (U(X(9000)), A("r1"), U("q2"), A("r2"), U("q3"), A("r3"))
    plain, plain_summarizer = run(DEFAULT_CONFIG, heavy)
    response, summarizer = run(CONVERSATION, heavy)
    assert len(summarizer.requests) == len(plain_summarizer.requests) == 3
    assert [request.conversation for request in summarizer.requests] == [None] * 3
    assert response == plain


def test_another_summariser_model_gets_the_rendered_form_and_the_session_model_the_conversation():
    _, other = run(replace(CONVERSATION, summarizer_model=ModelChoice("cheap")))
    assert [(request.model, request.conversation) for request in other.requests] == [("cheap", None)]
    _, same = run(replace(CONVERSATION, summarizer_model=ModelChoice("small")))
    [request] = same.requests
    assert request.model == "small" and request.conversation is not None
