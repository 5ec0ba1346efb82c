"""Drive one recorded session through ``context::assemble`` as an agent harness would.

Before each assistant message of the recording the harness sends the history it holds so far and
the model's limits. A persisting harness (the default) does the round trip of spec 03 §5.7 when
the answer says ``applied.compacted``: it keeps ``applied.summary`` as the next calls'
``options.previous_summary`` and from then on holds only its own messages from
``applied.tail_start_index`` onward (plus everything recorded later). A mode with
``persist=False`` is a harness that ignores the answer's report and sends its whole history every
time. Drops by ``overflow_fallback: drop_oldest`` are not persisted: they only shape one call.
A call that fails with ``context/overflow`` is counted and the replay goes on.

A persisting harness re-sends the pinned anchor's messages (``anchor_messages``) first after a
compaction, as the README's round trip asks. A ``tail_only`` mode is the agent harness of an iii
deployment instead: it knows nothing of an anchor, and after a compaction sends only its messages
from the compaction's ``tail_start_index`` onward, with the summary as ``previous_summary`` and
the session's name as ``lease_key``.

Each successful call is also priced by ``bench.replay.economy`` (what a provider with prefix
caching bills for it, against the previous successful call's context). An ``observer`` given to
:func:`replay` sees every call as it was sent and answered (``bench.recall`` measures through it).
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from bench.kit.summariser import RecordingSummarizer
from bench.replay.economy import Bill, cached_prefix_tokens
from bench.replay.probes import Probes, context_text, head_probes, task_text
from context_manager.adapters.callable_summarizer import CallableSummarizer
from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.config.parse import parse_config_value
from context_manager.core.anchor import anchor_length
from context_manager.core.compaction.prompts import render_system_prompt
from context_manager.handlers import assemble as assemble_handler
from context_manager.handlers.context import HandlerContext
from context_manager.wire.errors import OVERFLOW, HandlerError

SESSIONS_DIR = Path(__file__).resolve().parents[1] / "kit" / "sessions"
MAX_OUTPUT_TOKENS = 4000
BUDGETS = {"16k": 16_000, "32k": 32_000, "64k": 64_000, "128k": 128_000}
DEFAULT_BUDGETS = ("32k", "64k", "128k")


@dataclass(frozen=True)
class Mode:
    name: str
    summarizer: bool
    config: dict[str, Any]
    persist: bool = True  # does the harness keep the round trip (summary and tail start)?
    tail_only: bool = False  # after a compaction, only the tail (no anchor re-sent), lease_key set


MODES = (
    Mode("summariser", True, {}),
    Mode("none", False, {}),
    Mode("none+drop_oldest", False, {"overflow_fallback": "drop_oldest"}),
    Mode("original", True, {"user_less_compaction": False}),
    # Task retention: anchor, retention check, extractive fallback.
    Mode("summariser+anchor", True, {"anchor_messages": 1}),
    Mode("summariser+check", True, {"summary_check": "append"}),
    Mode("summariser+anchor+check", True, {"anchor_messages": 1, "summary_check": "append"}),
    Mode("none+extractive", False, {"summarizer_fallback": "extractive"}),
    Mode("none+extractive+anchor", False, {"summarizer_fallback": "extractive", "anchor_messages": 1}),
    Mode("none+drop_oldest+anchor", False, {"overflow_fallback": "drop_oldest", "anchor_messages": 1}),
    # The agent harness's round trip: the tail alone after a compaction.
    Mode("harness", True, {}, tail_only=True),
    Mode("harness+anchor", True, {"anchor_messages": 1}, tail_only=True),
    Mode("harness+check", True, {"summary_check": "append"}, tail_only=True),
    Mode("harness+anchor+check", True, {"anchor_messages": 1, "summary_check": "append"},
         tail_only=True),
    Mode("harness-none+extractive+anchor", False,
         {"summarizer_fallback": "extractive", "anchor_messages": 1}, tail_only=True),
    Mode("harness+anchor+message", True, {"anchor_messages": 1, "summary_placement": "message"},
         tail_only=True),
    # Cache-aware reduction: harnesses that do not persist the round trip, stable steps, reuse.
    Mode("summariser-nopersist", True, {}, persist=False),
    Mode("summariser-nopersist+reuse", True, {"summary_reuse": True}, persist=False),
    Mode("summariser-nopersist+reuse+reduce", True, {"summary_reuse": True, "reduce_to": 0.6},
         persist=False),
    Mode("summariser+reduce", True, {"reduce_to": 0.6}),
    Mode("summariser+reuse+reduce", True, {"summary_reuse": True, "reduce_to": 0.6}),
    Mode("none+drop_oldest+reduce", False, {"overflow_fallback": "drop_oldest", "reduce_to": 0.6}),
    Mode("summariser+message", True, {"summary_placement": "message"}),
    Mode("summariser+eager", True, {"eager_compaction_at": 0.8}),
    Mode("summariser+eager+reduce", True, {"eager_compaction_at": 0.8, "reduce_to": 0.6}),
    Mode("summariser+all", True, {"summary_reuse": True, "reduce_to": 0.6,
                                  "summary_placement": "message", "eager_compaction_at": 0.8}),
    Mode("summariser-nopersist+all", True, {"summary_reuse": True, "reduce_to": 0.6,
                                            "summary_placement": "message",
                                            "eager_compaction_at": 0.8}, persist=False),
)
ECONOMY_MODES = ("summariser", "summariser-nopersist", "none+drop_oldest", "none",
                 "summariser-nopersist+reuse", "summariser-nopersist+reuse+reduce",
                 "none+drop_oldest+reduce", "summariser+reduce", "summariser+reuse+reduce",
                 "summariser+message", "summariser+eager", "summariser+eager+reduce", "summariser+all",
                 "summariser-nopersist+all")
MODES_BY_NAME = {mode.name: mode for mode in MODES}


@dataclass(frozen=True)
class Session:
    name: str
    system_prompt: str | None
    messages: list[dict[str, Any]]

    @property
    def tool_rounds(self) -> int:
        return sum(1 for m in self.messages
                   if m["role"] == "assistant" and any(b["type"] == "function_call" for b in m["content"]))


@dataclass(frozen=True)
class Call:
    """One assemble call as an observer of the replay sees it."""

    index: int  # the recorded assistant message the call is made before
    sent: list[dict[str, Any]]  # the messages the harness sent
    previous_summary: str | None  # the summary it sent in options (persisting harness)
    response: dict[str, Any] | None  # the answer, None when the call failed with context/overflow


# Called after every assemble call of a replay, with the session and the call.
Observer = Callable[["Session", Call], None]


@dataclass
class Compaction:
    """One compacting call: the summary kept, and every summariser (anchor, reply) of that call."""

    call_index: int
    summary: str
    tail_start_index: int
    summarizer_calls: list[tuple[str | None, str]]


@dataclass
class ReplayStats:
    session: str
    budget: str
    mode: str
    calls: int = 0
    input_tokens: int = 0
    cache_busts: int = 0
    overflows: int = 0
    pruned: int = 0
    capped: int = 0
    compacted: int = 0
    dropped: int = 0
    compactions: list[Compaction] = field(default_factory=list)
    probes: Probes = field(default_factory=Probes)
    task_kept: int = 0  # calls whose returned context holds the first user message verbatim
    task_repeated: int = 0  # calls whose returned context holds it more than once
    bill: Bill = field(default_factory=Bill)
    # compacting calls whose system prompt is not the request's as it renders without a summary
    prompt_changed_at_compaction: int = 0


def load_session(path: Path) -> Session:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    document = json.loads(raw)
    name = path.name.removesuffix(".gz").removesuffix(".json")
    return Session(name, document.get("system_prompt"), document["messages"])


def shipped_sessions(directory: Path = SESSIONS_DIR) -> list[Session]:
    paths = sorted(directory.glob("*.json.gz")) + sorted(directory.glob("*.json"))
    return [load_session(path) for path in paths]


def model_input(context_window: int, model_id: str = "replay-model",
                max_output_tokens: int = MAX_OUTPUT_TOKENS) -> dict[str, Any]:
    return {"id": model_id,
            "limits": {"context_window": context_window, "max_output_tokens": max_output_tokens}}


def _quiet_logger() -> logging.Logger:
    log = logging.getLogger("bench.replay.worker")
    log.setLevel(logging.ERROR)
    return log


def replay(session: Session, budget: str, mode: Mode, model_id: str = "replay-model", *,
           max_output_tokens: int = MAX_OUTPUT_TOKENS, observer: Observer | None = None) -> ReplayStats:
    """Replay ``session`` at ``budget`` (a key of :data:`BUDGETS`) in ``mode`` on ``model_id``,
    a model with ``max_output_tokens``; ``observer`` sees every call."""
    recorder = RecordingSummarizer() if mode.summarizer else None
    ctx = HandlerContext(
        config=parse_config_value(mode.config),
        summarizer=CallableSummarizer(recorder) if recorder is not None else None,
        lease_store=None,  # one harness, one history: nothing to coordinate
        tokenizers=PACKAGED_TOKENIZERS,
        log=_quiet_logger(),
        # A worker of its own per replay: remembered compactions never cross sessions or modes.
        session_store=MemorySessionStore(),
    )
    model = model_input(BUDGETS[budget], model_id, max_output_tokens)
    return anyio.run(_replay, session, budget, mode, ctx, recorder, model, observer)


async def _replay(session: Session, budget: str, mode: Mode, ctx: HandlerContext,
                  recorder: RecordingSummarizer | None, model: dict[str, Any],
                  observer: Observer | None) -> ReplayStats:
    stats = ReplayStats(session.name, budget, mode.name)
    # The pinned anchor (request messages the harness always resends first) and, after it, the
    # first recorded message the harness still holds.
    anchor = [] if mode.tail_only else _anchor_messages(session, mode)
    held_from = len(anchor)
    task = task_text(session.messages)
    previous_summary: str | None = None
    previous_sent: tuple[str, list[dict[str, Any]]] | None = None
    for index, message in enumerate(session.messages):
        if message["role"] != "assistant" or (index == held_from and not anchor):
            continue  # nothing to send yet
        sent_messages = anchor + session.messages[held_from:index]
        payload: dict[str, Any] = {"messages": sent_messages, "model": model}
        if session.system_prompt is not None:
            payload["system_prompt"] = session.system_prompt
        if previous_summary is not None:
            payload["options"] = {"previous_summary": previous_summary}
        if mode.tail_only:
            payload["options"] = {**payload.get("options", {}), "lease_key": session.name}
        stats.calls += 1
        summarizer_mark = len(recorder.calls) if recorder is not None else 0
        try:
            response = await assemble_handler.handle(payload, ctx)
        except HandlerError as exc:
            if exc.kind != OVERFLOW:
                raise
            stats.overflows += 1
            if observer is not None:
                observer(session, Call(index, sent_messages, previous_summary, None))
            continue
        if observer is not None:
            observer(session, Call(index, sent_messages, previous_summary, response))
        sent = (response["system_prompt"], response["messages"])
        if previous_sent is not None and not _extends(previous_sent, sent):
            stats.cache_busts += 1
        stats.bill.add_call(response["token_count"], cached_prefix_tokens(previous_sent, sent))
        previous_sent = sent
        stats.input_tokens += response["token_count"]
        applied = response["applied"]
        stats.pruned += applied["pruned"]
        stats.capped += applied["capped_parts"] > 0
        stats.dropped += "dropped_messages" in applied
        returned = context_text(response["system_prompt"], response["messages"])
        stats.task_kept += task is not None and task in returned
        stats.task_repeated += task is not None and returned.count(task) > 1
        if applied["compacted"]:
            stats.compacted += 1
            stats.prompt_changed_at_compaction += (
                response["system_prompt"] != render_system_prompt(session.system_prompt, None))
            tail = applied["tail_start_index"]
            if mode.persist:
                previous_summary = applied["summary"]
                stats.probes.add(head_probes(sent_messages[len(anchor):tail], returned))
                held_from += tail - len(anchor)
            stats.compactions.append(Compaction(
                stats.calls - 1, applied["summary"], applied["tail_start_index"],
                list(recorder.calls[summarizer_mark:]) if recorder is not None else []))
    if recorder is not None:
        stats.bill.add_summarizer(len(recorder.calls), recorder.input_tokens, recorder.output_tokens)
    return stats


def _anchor_messages(session: Session, mode: Mode) -> list[dict[str, Any]]:
    """The leading recorded messages that hold the mode's pinned anchor (customs included)."""
    requested = mode.config.get("anchor_messages", 0)
    facing = [i for i, m in enumerate(session.messages) if m["role"] != "custom"]
    pinned = anchor_length([session.messages[i] for i in facing], requested)
    return session.messages[:facing[pinned - 1] + 1] if pinned else []


def _extends(before: tuple[str, list[Any]], after: tuple[str, list[Any]]) -> bool:
    """Does ``after`` start with exactly what ``before`` sent (same system prompt, same messages)?"""
    prompt, messages = before
    return after[0] == prompt and after[1][:len(messages)] == messages
