"""The peers: each a simulation of a context policy agent teams ship, with its published parameters.

A peer is called once per model call with the history the harness holds (every recorded message
before that call; ``custom`` messages never reach a model and are left out) and returns the
messages it sends, under the session's own system prompt. A peer whose design persists its
reductions (a summary that replaces history, a checkpoint) keeps that state across calls; a peer
whose design edits each request (masking, context editing) recomputes from the whole history every
time. Where a published parameter is an absolute token count it is made relative to the window it
was published for, as each docstring states, so 32k and 128k windows are treated alike. Where the
peer summarises it uses ``bench.kit.peer_summaries``; where a summary becomes a message it is a user
message at the place the peer puts it.

Budgets: ``window`` is the model's context window, ``limit`` = window - max output tokens, the
largest request the provider accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bench.kit.ledger import Message, count
from bench.kit.peer_summaries import Summary, assistant_message, summarise, user_message


@dataclass(frozen=True)
class Budget:
    name: str
    window: int
    max_output: int

    @property
    def limit(self) -> int:
        return self.window - self.max_output


@dataclass(frozen=True)
class SummaryUse:
    """One summariser request; ``continues`` is the context the request extends (cache read), if any."""

    summary: Summary
    continues: Sequence[Message] | None = None


@dataclass
class Step:
    messages: list[Message]
    summaries: list[SummaryUse] = field(default_factory=list)


Strategy = Callable[[str, list[Message]], Step]


@dataclass(frozen=True)
class Peer:
    name: str
    make: Callable[[Budget], Strategy]
    summarises: bool
    defence: bool = False  # context::assemble when the request is still over the limit
    source: str = ""


# -- helpers -------------------------------------------------------------------------------------

def _calls(m: Message) -> bool:
    return m["role"] == "assistant" and any(b["type"] == "function_call" for b in m["content"])


def _replace_result(m: Message, text: str) -> Message:
    return {**m, "content": [{"type": "text", "text": text}]}


def _result_text(m: Message) -> str:
    return "\n".join(b.get("text", "") for b in m["content"] if b["type"] == "text")


def _keep_last_results(messages: Sequence[Message], keep: int, placeholder: Callable[[Message], str]) -> list[Message]:
    """Every function result but the last ``keep`` replaced by ``placeholder(result)``."""
    positions = [i for i, m in enumerate(messages) if m["role"] == "function_result"]
    cleared = set(positions[:max(0, len(positions) - keep)])
    return [_replace_result(m, placeholder(m)) if i in cleared else m for i, m in enumerate(messages)]


def _lines_omitted(m: Message) -> str:
    return f"Old environment output: ({len(_result_text(m).splitlines())} lines omitted)"


def _safe_start(messages: Sequence[Message], start: int) -> int:
    """The first index at or after ``start`` that is not a function result (no orphaned results)."""
    while start < len(messages) and messages[start]["role"] == "function_result":
        start += 1
    return start


def _timestamp(messages: Sequence[Message]) -> int:
    return messages[-1].get("timestamp", 0) if messages else 0


class _Held:
    """The history a persisting harness holds: its own messages after the last reduction, plus
    every message recorded since."""

    def __init__(self) -> None:
        self.kept: list[Message] = []
        self.seen = 0
        self.summary: str | None = None

    def catch_up(self, history: list[Message]) -> list[Message]:
        self.kept.extend(history[self.seen:])
        self.seen = len(history)
        return self.kept


# -- raw history ---------------------------------------------------------------------------------

def raw(_budget: Budget) -> Strategy:
    """Raw history: everything recorded so far, every call. No management: calls over the limit
    overflow."""
    return lambda _system, history: Step(list(history))


# -- observation masking -------------------------------------------------------------------------

def masking(keep: int) -> Callable[[Budget], Strategy]:
    """Observation masking (Lindenbauer et al., "The Complexity Trap", JetBrains Research / TUM,
    NeurIPS 2025 DL4Code workshop, arXiv 2508.21433; SWE-agent's ``last_n_observations`` history
    processor, M = 10 in the paper): every tool output but the last ``keep`` becomes
    ``Old environment output: (N lines omitted)``; the agent's reasoning and actions and the user's
    messages stay. Recomputed from the whole history on every call (a history processor), never
    persisted; no window trigger (it masks from the first call on) and no last line of defence."""
    def make(_budget: Budget) -> Strategy:
        return lambda _system, history: Step(_keep_last_results(history, keep, _lines_omitted))
    return make


# -- LLM summary / hybrid (SWE-agent summarize_every_n_turns) -------------------------------------

class _EveryNTurns:
    """SWE-agent's ``summarize_every_n_turns`` with ``enable_static_checkpointing`` (the paper's
    LLM-Summary and hybrid): a turn is an assistant message with calls and their results; when the
    turns not yet summarised reach ``n + keep_turns``, the oldest ``n`` of them are summarised,
    anchored on the previous checkpoint, and the context becomes the opening messages (the task),
    one assistant checkpoint message, then everything after the summarised turns. The checkpoint
    persists until the next one. Adapted to multi-turn sessions: the messages between summarised
    turns (later user requests, text replies) are summarised with them, and the messages after
    them stay (SWE-agent's single-task prompts have none)."""

    def __init__(self, n: int, keep_turns: int, mask: int | None) -> None:
        self.n, self.keep_turns, self.mask = n, keep_turns, mask
        self.cut: int | None = None  # history index after the last summarised turn
        self.checkpoint: Message | None = None
        self.summary: str | None = None

    def __call__(self, _system: str, history: list[Message]) -> Step:
        opening = next((i for i, m in enumerate(history) if m["role"] == "assistant"), len(history))
        if self.cut is None:
            self.cut = opening
        turns = [i for i in range(self.cut, len(history)) if _calls(history[i])]
        uses = []
        if len(turns) >= self.n + self.keep_turns:
            end = turns[self.n] if self.n < len(turns) else len(history)
            made = summarise(history[self.cut:end], self.summary)
            self.summary = made.text
            self.checkpoint = assistant_message(f"Checkpoint for the last {self.n} turns:\n{made.text}",
                                                _timestamp(history[:end]))
            self.cut = end
            uses.append(SummaryUse(made))
        messages = list(history[:opening])
        if self.checkpoint is not None:
            messages.append(self.checkpoint)
        messages += history[self.cut if self.checkpoint is not None else opening:]
        if self.mask is not None:
            messages = _keep_last_results(messages, self.mask, _lines_omitted)
        return Step(messages, uses)


def every_n_turns(n: int, keep_turns: int, mask: int | None) -> Callable[[Budget], Strategy]:
    return lambda _budget: _EveryNTurns(n, keep_turns, mask)


# -- Anthropic: context editing and server-side compaction ---------------------------------------

def _clear_thinking(messages: Sequence[Message], keep_turns: int) -> list[Message]:
    assistants = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    old = set(assistants[:max(0, len(assistants) - keep_turns)])
    out = []
    for i, m in enumerate(messages):
        if i in old and any(b["type"] == "thinking" for b in m["content"]):
            m = {**m, "content": [b for b in m["content"] if b["type"] != "thinking"]}
        out.append(m)
    return out


class _Anthropic:
    """Anthropic's context management on the Messages API, at its defaults: ``clear_tool_uses_20250919``
    (trigger 100,000 input tokens, keep the last 3 tool uses, results only, no ``clear_at_least``,
    no exclusions; cleared results replaced by a placeholder), ``clear_thinking_20251015`` (keep the
    thinking of the last 1 assistant turn) and server-side compaction (``compact_20260112``, trigger
    150,000 input tokens: the whole conversation is summarised into a compaction block, and the API
    ignores everything before that block on later requests). Sources: docs.claude.com "Context
    editing" (build-with-claude/context-editing), platform.claude.com "Compaction"
    (build-with-claude/compaction). Window-relative: both triggers are published for the 200k
    window, so clearing starts above 50% of the window and compaction above 75%. Editing is
    server-side per request (the client keeps its history: recomputed every call); compaction
    persists (the client keeps the block: the summary then stands for all earlier messages).
    The compaction request continues the conversation (it reads it from the cache). Edits apply in
    the order above; compaction is judged on the edited request. No other defence."""

    PLACEHOLDER = "[cleared]"

    def __init__(self, budget: Budget) -> None:
        self.clear_at = budget.window * 100_000 // 200_000
        self.compact_at = budget.window * 150_000 // 200_000
        self.held = _Held()

    def _lead(self) -> list[Message]:
        if self.held.summary is None:
            return []
        return [user_message(f"Summary of the earlier conversation:\n{self.held.summary}", 0)]

    def __call__(self, system: str, history: list[Message]) -> Step:
        kept = self.held.catch_up(history)
        request = self._lead() + kept
        edited = _clear_thinking(request, 1)
        if count(system, request) > self.clear_at:
            edited = _keep_last_results(edited, 3, lambda _m: self.PLACEHOLDER)
        if count(system, edited) <= self.compact_at:
            return Step(edited)
        made = summarise(edited, self.held.summary)
        self.held.summary, self.held.kept = made.text, []
        return Step(self._lead(), [SummaryUse(made, edited)])


# -- Claude Code and Codex CLI auto-compaction ---------------------------------------------------

class _AutoCompact:
    """A coding CLI's auto-compaction: when the held context reaches ``at`` (a share of the window),
    the whole held conversation is summarised in a request that continues it (cache read), and the
    summary message replaces it; ``keep_user`` > 0 also keeps the most recent user messages (newest
    first, within that share of the window, the one that does not fit cut to what is left)."""

    def __init__(self, budget: Budget, at: float, lead: str, keep_user: float = 0.0) -> None:
        self.at = int(budget.window * at)
        self.lead = lead
        self.user_budget = int(budget.window * keep_user)
        self.held = _Held()

    def __call__(self, system: str, history: list[Message]) -> Step:
        kept = self.held.catch_up(history)
        if count(system, kept) < self.at:
            return Step(list(kept))
        made = summarise(kept, self.held.summary)
        users = self._recent_users(kept)
        self.held.summary = made.text
        self.held.kept = [*users, user_message(f"{self.lead}\n{made.text}", _timestamp(kept))]
        return Step(list(self.held.kept), [SummaryUse(made, list(kept))])

    def _recent_users(self, kept: Sequence[Message]) -> list[Message]:
        remaining, chosen = self.user_budget, []
        for m in reversed(kept):
            if remaining <= 0:
                break
            if m["role"] != "user" or m["content"][0].get("text", "").startswith(self.lead):
                continue
            text = "\n".join(b["text"] for b in m["content"] if b["type"] == "text")
            tokens = len(text.encode()) // 4
            if tokens > remaining:
                text = text.encode()[:remaining * 4].decode(errors="ignore")
                tokens = remaining
            chosen.append(user_message(text, m.get("timestamp", 0)))
            remaining -= tokens
        return list(reversed(chosen))


def claude_code(budget: Budget) -> Strategy:
    """Claude Code's auto-compaction: it fires at the effective window (window - 20,000 reserved for
    the summary's output) less a 13,000-token buffer, 167k of the 200k window (~83.5%, the ~33k
    buffer ``/context`` reports); the nine-section summary replaces the whole conversation (no
    message is kept verbatim). After compacting, Claude Code re-reads up to 5 recently read files
    into the context: a replay cannot re-read files, so that part is not simulated. Sources:
    claudefa.st "Claude Code Context Buffer" (2026), the ``autoCompact.ts`` constants quoted in
    "Claude Code Compaction Policy" (wiki.coder.dog) and decodeclaude.com "Claude Code Compaction".
    Window-relative: 83.5% of the window. Persisted (the session continues from the summary)."""
    return _AutoCompact(budget, 0.835, "This session is being continued from a previous conversation "
                        "that ran out of context. The conversation is summarized below:")


def codex(budget: Budget) -> Strategy:
    """Codex CLI's auto-compaction: ``auto_compact_token_limit`` defaults to 90% of the context
    window (``codex-rs/protocol`` ``openai_models.rs``); the compacted history is the user messages
    kept newest first within ``COMPACT_USER_MESSAGE_MAX_TOKENS`` = 20,000 (``codex-rs/core/src/
    compact.rs``), then the handoff summary as a user message. Window-relative: 20,000 of the 272k
    effective window, 7.35% of the window. Persisted."""
    return _AutoCompact(budget, 0.90, "Another language model started to solve this problem and "
                        "produced a summary of its thinking process:", keep_user=20_000 / 272_000)


# -- LangChain v1 middleware ---------------------------------------------------------------------

class _LangChainSummary:
    """LangChain v1 ``SummarizationMiddleware`` (``langchain.agents.middleware.summarization``):
    ``keep`` defaults to ``("messages", 20)``, ``trim_tokens_to_summarize`` to 4,000 and ``trigger``
    to ``None`` — no summary at all, which would make it raw history; the ``("fraction", 0.85)``
    trigger Deep Agents derives from the model profile (``create_summarization_middleware``) is used
    instead. When the held messages reach 85% of the window, the messages before the last 20 (the
    cut moved back until it splits no call from its results) are summarised and replaced by one
    user message ``Here is a summary of the conversation to date:``; persisted in the agent state.
    The summariser sees only the last 4,000 tokens of them, started on a user message (``trim_messages``
    ``strategy="last"``, ``start_on="human"``); when those hold no user message the middleware
    writes ``Previous conversation was too long to summarize.`` without calling a model. Sources:
    reference.langchain.com (SummarizationMiddleware, create_summarization_middleware), the
    middleware's source in langchain-ai/langchain ``libs/langchain_v1``. No defence."""

    LEAD = "Here is a summary of the conversation to date:\n\n"
    TRIM_TOKENS = 4_000

    def __init__(self, budget: Budget) -> None:
        self.at = int(budget.window * 0.85)
        self.held = _Held()

    def __call__(self, system: str, history: list[Message]) -> Step:
        kept = self.held.catch_up(history)
        if count(system, kept) < self.at or len(kept) <= 20:
            return Step(list(kept))
        cut = len(kept) - 20
        while cut > 0 and kept[cut]["role"] == "function_result":
            cut -= 1
        if cut <= 0:
            return Step(list(kept))
        trimmed = self._trim(kept[:cut])
        uses = []
        if trimmed:
            made = summarise(trimmed, self.held.summary)
            text = made.text
            uses.append(SummaryUse(made))
        else:
            text = "Previous conversation was too long to summarize."
        self.held.summary = text
        self.held.kept = [user_message(self.LEAD + text, _timestamp(kept[:cut])), *kept[cut:]]
        return Step(list(self.held.kept), uses)

    def _trim(self, head: Sequence[Message]) -> list[Message]:
        total, start = 0, len(head)
        while start > 0 and total + count("", [head[start - 1]]) <= self.TRIM_TOKENS:
            start -= 1
            total += count("", [head[start]])
        tail = list(head[start:])
        first_user = next((i for i, m in enumerate(tail) if m["role"] == "user"), None)
        return [] if first_user is None else tail[first_user:]


def langchain_clear(budget: Budget) -> Strategy:
    """LangChain v1 ``ContextEditingMiddleware`` with its default edit ``ClearToolUsesEdit``
    (``langchain.agents.middleware.context_editing``: trigger 100,000 tokens, keep 3 tool results,
    placeholder ``[cleared]``, inputs kept, no exclusions), which mirrors Anthropic's defaults.
    Window-relative: 100,000 of the 200k window it mirrors, 50%. Applied to each model request,
    not to the agent state: recomputed every call. No summary, no defence."""
    at = budget.window // 2

    def step(system: str, history: list[Message]) -> Step:
        if count(system, history) <= at:
            return Step(list(history))
        return Step(_keep_last_results(history, 3, lambda _m: "[cleared]"))
    return step


# -- OpenHands -----------------------------------------------------------------------------------

class _OpenHands:
    """OpenHands' ``LLMSummarizingCondenser`` (``openhands/memory/condenser/impl/llm_summarizing_condenser.py``;
    docs.openhands.dev "Condenser"): when the view holds more than ``max_size`` = 120 events, it keeps
    the first ``keep_first`` = 1 event (the task), one summary event after it, and the last
    ``max_size // 2 - keep_first - 1`` = 58 events; the forgotten events, each cut to
    ``max_event_length`` = 10,000 characters, are summarised with the previous summary. An event is
    one message here. The condensation is persisted in the event stream. On a context-window error
    OpenHands truncates the history: that last line of defence is ``context::assemble`` here."""

    def __init__(self, _budget: Budget, max_size: int = 120, keep_first: int = 1) -> None:
        self.max_size, self.keep_first = max_size, keep_first
        self.held = _Held()
        self.has_summary = False

    def __call__(self, _system: str, history: list[Message]) -> Step:
        kept = self.held.catch_up(history)
        if len(kept) <= self.max_size:
            return Step(list(kept))
        tail_size = self.max_size // 2 - self.keep_first - 1
        first = self.keep_first + (1 if self.has_summary else 0)
        start = _safe_start(kept, len(kept) - tail_size)
        made = summarise(kept[first:start], self.held.summary, limit_chars=10_000)
        self.held.summary, self.has_summary = made.text, True
        summary = user_message(made.text, _timestamp(kept[:start]))
        self.held.kept = [*kept[:self.keep_first], summary, *kept[start:]]
        return Step(list(self.held.kept), [SummaryUse(made)])


PEERS: tuple[Peer, ...] = (
    Peer("raw history", raw, False),
    Peer("masking M=10", masking(10), False),
    Peer("LLM summary N=21 M=10", every_n_turns(21, 10, None), True),
    Peer("hybrid N=43 M=10", every_n_turns(43, 10, 10), True),
    Peer("Anthropic editing+compaction", _Anthropic, True),
    Peer("Claude Code", claude_code, True),
    Peer("Codex CLI", codex, True),
    Peer("LangChain summarization", _LangChainSummary, True),
    Peer("LangChain clear tool uses", langchain_clear, False),
    Peer("OpenHands condenser", _OpenHands, True, defence=True),
)
MASKING_SWEEP = (1, 3, 5, 20, 40)
PEERS_BY_NAME = {peer.name: peer for peer in PEERS}


def masking_peer(keep: int) -> Peer:
    return Peer(f"masking M={keep}", masking(keep), False)
