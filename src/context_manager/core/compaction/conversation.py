"""``summarizer_request: conversation``: the summary asked for inside the conversation it summarises.

A compaction's head is the start of the context the model last read. Sent as that conversation
(the same system prompt, tools and leading messages) followed by one user message of
instructions, the summariser's request repeats the previous model call's prefix, which providers
with prompt caching read from the cache at about a tenth of the price; Claude Code, Codex and
Anthropic's server-side compaction ask for their summaries this way. It applies when the
summariser is the session's model (a prompt cache belongs to one model) and the whole head fits
one summariser request in both forms; otherwise the head goes rendered, as by default. The
rendered form travels in the same request, so a summariser that reads text only (a library
function) gets exactly the default request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from context_manager.core.compaction.prompts import build_system_prompt
from context_manager.ports import SummarizerConversation

# Plain ASCII. The tools stay in the request (they are part of the cached prefix), so the
# summariser is told not to call one.
CONVERSATION_LINE = (
    "Everything above is the conversation so far. Call no function and answer with text only: "
    "summarise the conversation as set out below; copy identifiers unmodified."
)


@dataclass(frozen=True, slots=True)
class ConversationContext:
    """What comes before the head in the context the model last read: its system prompt, the
    messages ahead of the view (a pinned anchor, a summary message) and the request's tools;
    ``fixed_tokens`` counts the three as the call did."""

    system_prompt: str
    lead: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]
    fixed_tokens: int


def conversation_instructions(previous_summary: str | None, instructions: str | None) -> str:
    """The closing user message: what to do, then the summariser's usual anchor and template."""
    return CONVERSATION_LINE + "\n\n" + build_system_prompt(previous_summary, instructions)


def conversation_form(context: ConversationContext, head: Sequence[dict[str, Any]],
                      instructions: str) -> SummarizerConversation:
    return SummarizerConversation(context.system_prompt, (*context.lead, *head), context.tools, instructions)
