"""The deterministic stand-ins for the summarising model.

:func:`instant_summarizer` answers :data:`SUMMARY_TEXT` to every request (the speed and scale
suites, where only the worker's own time counts). :func:`summarize` (recorded by
:class:`RecordingSummarizer`) is the replayed suites' summariser, described below; the league's
peers summarise with it too (``bench.kit.peer_summaries``).

It has the library summariser's signature ``(system_prompt, user_prompt, model) -> str`` and
answers in the template's sections. What it writes can be checked:

* ``## Goal`` carries the first user request it ever saw, copied from the previous summary when
  there is one, so the task survives every compaction;
* ``generation`` is the previous summary's generation plus one (1 when fresh);
* ``anchored on`` is a digest of the previous summary it was asked to update (``none`` when
  fresh), so a chain of summaries can be followed back;
* ``saw`` is how many message sections the rendered conversation (this fragment) held, and
  ``messages folded`` adds it to the previous total.

The answer stays bounded: the goal is cut to 300 characters and only the 8 most recent actions
are listed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from bench.kit.ledger import Sent, count
from context_manager.ports import SummarizeRequest

_SECTION = re.compile(r"^\[(user|assistant|function_result|custom)\]$", re.MULTILINE)
_TOOL_CALL = re.compile(r"^\[tool_call\] (\S+) (.*)$", re.MULTILINE)
_FIELD = re.compile(r"^- (generation|messages folded): (\d+)$", re.MULTILINE)
_OPEN, _CLOSE = "<previous-summary>\n", "\n</previous-summary>"
GOAL_LIMIT = 300
ACTIONS_KEPT = 8


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def previous_summary(system_prompt: str) -> str | None:
    """The summary the model is asked to update, ``None`` in fresh mode."""
    start = system_prompt.find(_OPEN)
    end = system_prompt.rfind(_CLOSE)
    if start < 0 or end < start:
        return None
    return system_prompt[start + len(_OPEN):end]


def _field(summary: str | None, name: str) -> int:
    if not summary:
        return 0
    for found, value in _FIELD.findall(summary):
        if found == name:
            return int(value)
    return 0


def _goal(summary: str | None, prompt: str) -> str:
    if summary and "## Goal\n- " in summary:
        return summary.split("## Goal\n- ", 1)[1].split("\n", 1)[0]
    first_user = prompt.split("\n[user]\n", 1)
    if len(first_user) == 2:
        return " ".join(first_user[1].split("\n[", 1)[0].split())[:GOAL_LIMIT] or "(none)"
    return "(none)"


def _actions(summary: str | None, prompt: str) -> list[str]:
    earlier = []
    if summary and "## Actions Taken\n" in summary:
        block = summary.split("## Actions Taken\n", 1)[1].split("\n## ", 1)[0]
        earlier = [line[2:] for line in block.splitlines() if line.startswith("- ") and line != "- (none)"]
    latest = [f"{fid} {args[:60]}" for fid, args in _TOOL_CALL.findall(prompt)]
    return (earlier + latest)[-ACTIONS_KEPT:]


def summarize(system_prompt: str, user_prompt: str, model: dict[str, Any] | None = None) -> str:
    """The whole fake model: read the anchor and the fragment, answer in the template."""
    anchor = previous_summary(system_prompt)
    seen = len(_SECTION.findall(user_prompt))
    actions = _actions(anchor, user_prompt) or ["(none)"]
    lines = [
        "## Goal", f"- {_goal(anchor, user_prompt)}",
        "## Constraints & Preferences", "- (none)",
        "## Progress", "### Done",
        f"- generation: {_field(anchor, 'generation') + 1}",
        f"- anchored on: {digest(anchor) if anchor is not None else 'none'}",
        f"- saw: {seen}",
        f"- messages folded: {_field(anchor, 'messages folded') + seen}",
        "### In Progress", "- (none)", "### Blocked", "- (none)",
        "## Key Decisions", "- (none)",
        "## Actions Taken", *(f"- {action}" for action in actions),
        "## Next Steps", "- continue with the task",
        "## Critical Context", "- (none)",
        "## Relevant Files", "- (none)",
    ]
    return "\n".join(lines)


@dataclass
class RecordingSummarizer:
    """:func:`summarize` plus a log of every (anchor, reply) pair, in call order, and the
    heuristic tokens (bytes / 4) of each request (system and user prompt) and reply.

    Called as a function it is a library caller's summariser (text only). As the worker's
    summariser port (:meth:`summarize`) it is what a transport that sends messages receives: a
    request that carries the conversation it summarises (``summarizer_request: conversation``)
    is counted in that form (its system prompt, its messages and the closing instruction
    message, :func:`bench.kit.ledger.count`) and its prefix kept in ``conversations`` so the
    ledger can price what it repeats of the previous sent context; the stand-in model still
    reads the rendered form of the same request, which holds the same head."""

    calls: list[tuple[str | None, str]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    # Per request, in call order: its input tokens and, when it came as a conversation, the
    # (system prompt, messages) it sent ahead of its instruction.
    inputs: list[int] = field(default_factory=list)
    conversations: list[Sent | None] = field(default_factory=list)

    def __call__(self, system_prompt: str, user_prompt: str, model: dict[str, Any]) -> str:
        tokens = (len(system_prompt.encode()) + len(user_prompt.encode())) // 4
        return self._answer(system_prompt, user_prompt, model, tokens, None)

    async def summarize(self, request: SummarizeRequest) -> str:
        model = dict(request.model_input or {"id": request.model})
        conversation = request.conversation
        if conversation is None:
            return self(request.system_prompt, request.user_prompt, model)
        instruction = {"role": "user", "content": [{"type": "text", "text": conversation.instructions}]}
        sent: Sent = (conversation.system_prompt, list(conversation.messages))
        tokens = count(conversation.system_prompt, [*conversation.messages, instruction])
        return self._answer(request.system_prompt, request.user_prompt, model, tokens, sent)

    def _answer(self, system_prompt: str, user_prompt: str, model: dict[str, Any], input_tokens: int,
                conversation: Sent | None) -> str:
        reply = summarize(system_prompt, user_prompt, model)
        self.calls.append((previous_summary(system_prompt), reply))
        self.inputs.append(input_tokens)
        self.conversations.append(conversation)
        self.input_tokens += input_tokens
        self.output_tokens += len(reply.encode()) // 4
        return reply


# The speed and scale suites' summariser: one fixed answer, instantly (W3 and the scale mix).
SUMMARY_TEXT = (
    "Earlier work: the agent read the worker sources, ran the test suite, fixed two failing "
    "budget checks and documented the lease protocol. Open items: flaky channel test."
)


def instant_summarizer(system_prompt: str, user_prompt: str, model: Any) -> str:
    return SUMMARY_TEXT
