"""The one agent-loop driver of the suites: the caller's round trip and the harness's turn loop.

**The round trip** (:func:`round_trip`: ``bench.replay``, ``bench.recall``, ``bench.league``,
``bench.counting``). Before each assistant message of the recording the caller sends the history
it holds so far and the model's limits. A persisting caller (the default) does the round trip of
spec 03 §5.7 when the answer says ``applied.compacted``: it keeps ``applied.summary`` as the next
calls' ``options.previous_summary`` and from then on holds only its own messages from
``applied.tail_start_index`` onward (plus everything recorded later). A mode with
``persist=False`` is a caller that ignores the answer's report and sends its whole history every
time. Drops by ``overflow_fallback: drop_oldest`` are not persisted: they only shape one call.
A call that fails with ``context/overflow`` is counted and the replay goes on.

A persisting caller re-sends the pinned anchor's messages (``anchor_messages``) first after a
compaction, as the README's round trip asks. A ``tail_only`` mode is the agent harness of an iii
deployment instead: it knows nothing of an anchor, and after a compaction sends only its messages
from the compaction's ``tail_start_index`` onward, with the summary as ``previous_summary`` and
the session's name as ``lease_key``. One worker per replay (``bench.kit.summariser``'s recorded
summariser, as the worker's summariser port, when the mode has one; no lease store, a fresh
session store): remembered compactions never cross sessions or modes. Every sent call is counted
in a :class:`~bench.kit.ledger.Ledger` against the previous sent context, and so is every
summariser request in conversation form; an ``observer`` sees every call as it was sent and
answered.

**The harness turn loop** (:class:`HarnessLoop`: ``bench.replay``'s harness table and
``tests/roots/harness_loop.py``).

The agent harness (the worker's main caller in an iii deployment) keeps each session as a log of
entries: messages, and ``custom`` entries such as its compaction records. :class:`HarnessLoop`
replays a recorded session through that loop, one model step for each recorded assistant message,
over ``trigger(function_id, payload)`` (the test engine and the official SDK in
``tests/roots/harness_loop.py``, the handlers in process with :class:`InProcess`):

* it loads the log, takes the latest ``custom`` entry of type ``"compaction"`` and builds the
  candidate window: the model-facing messages (``custom`` ones are never sent) from that entry's
  ``tail_start_entry_id`` onward, the whole log when there is no entry;
* it calls ``context::assemble`` with ``{messages, model: {id, provider}, options: {lease_key:
  <session id>, request_overhead_tokens, previous_summary?}, tools, system_prompt}``: no inline
  limits, so the worker resolves the model through the router;
* an error whose text contains ``context/overflow:`` fails the turn (not retried); any other error
  is a dependency failure; there is never a fallback to the raw history. An answer with no
  messages, or whose ``token_count`` exceeds ``usable``, fails the turn too;
* when ``applied.compacted`` it appends a compaction entry (``summary``, ``tail_start_entry_id`` =
  the id of the candidate message at ``applied.tail_start_index``, ``tokens_before``,
  ``summarized_head_tokens``, ``initial_token_count``, ...) under an id per step, so a second
  write in the same step (after a re-assembly) keeps the first;
* pre-generate hooks then run on the assembled context. While hooks are bound the loop reserves
  :data:`HOOK_ALLOWANCE_TOKENS` on top of the request overhead from the start. Hooks may append
  messages; orphaned function calls (a call whose result is not in the list) are patched with an
  "elided" result. When either changed the request it is counted again with
  ``context::count-tokens`` (messages, the assembled system prompt, tools) plus the base request
  overhead; over ``usable``, the loop assembles once more with the growth over the assembled
  ``token_count`` plus :data:`REASSEMBLY_MARGIN_TOKENS` added to the overhead, and fails the turn
  when the second count is still over;
* the recorded assistant message (with the provider ``usage`` it carries) is then appended, as the
  generated reply, followed by the recorded results and user messages.

The base request overhead is the harness's own estimate for a request without a response format
or provider options: 64 tokens of provider framing plus the serialised empty option object
(``{}``, 2 characters, rounded up to 1 token) = 65 (``request_overhead``). The system prompt is
the session's, with the harness's ``Your session id is <id>.`` line appended (``session_line``).
``bench.replay``'s harness table drives the loop with 64, without the line and without a hook.
Messages that arrive while a step generates
(steering) never occur in a replay, since every recorded user message starts a new turn, so the
harness's reordering of such messages has nothing to do here and is left out.

The hook this module provides (:class:`GuidanceHook`) is deterministic: it appends a guidance
user message on every third step, alternately short and long (longer than the allowance, so that
near a full window the recount is over and the loop re-assembles).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from bench.kit.ledger import Ledger, cached_prefix_tokens
from bench.kit.modes import MAX_OUTPUT_TOKENS, Mode
from bench.kit.sessions import Session
from bench.kit.summariser import RecordingSummarizer
from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.config.parse import parse_config_value
from context_manager.core.anchor import anchor_length
from context_manager.core.counting.calibration import SentLedger
from context_manager.core.memo import MessageMemo
from context_manager.handlers import assemble as assemble_handler
from context_manager.handlers import count_tokens as count_tokens_handler
from context_manager.handlers.context import HandlerContext
from context_manager.wire.errors import OVERFLOW, HandlerError

# ---------------------------------------------------------------------------------- the round trip


@dataclass(frozen=True)
class Call:
    """One assemble call of a round trip as an observer sees it."""

    index: int  # the recorded assistant message the call is made before
    sent: list[dict[str, Any]]  # the messages the caller sent
    previous_summary: str | None  # the summary it sent in options (persisting caller)
    response: dict[str, Any] | None  # the answer, None when the call failed with context/overflow
    anchor: int = 0  # messages of the pinned anchor at the front of ``sent``
    summarizer_calls: list[tuple[str | None, str]] = field(default_factory=list)  # made by this call


# Called after every assemble call of a round trip, with the session and the call.
Observer = Callable[[Session, Call], None]


def quiet_logger(name: str) -> logging.Logger:
    log = logging.getLogger(name)
    log.setLevel(logging.ERROR)
    return log


def worker_context(config: dict[str, Any], summarizer: RecordingSummarizer | None,
                   log: logging.Logger | None = None) -> HandlerContext:
    """A worker of its own: ``config``, ``summarizer`` (or none), no lease store, a fresh session
    store, message memo and calibration ledger (what a worker process starts with)."""
    return HandlerContext(
        config=parse_config_value(config),
        # The recorder is the summariser port itself, as the router is to a worker on the engine:
        # it sees a request's conversation form (``summarizer_request: conversation``).
        summarizer=summarizer,
        lease_store=None,  # one caller, one history: nothing to coordinate
        tokenizers=PACKAGED_TOKENIZERS,
        log=log if log is not None else quiet_logger("bench.kit.worker"),
        session_store=MemorySessionStore(),
        memo=MessageMemo(),
        sent_ledger=SentLedger(),
    )


def model_input(context_window: int, model_id: str = "replay-model",
                max_output_tokens: int = MAX_OUTPUT_TOKENS) -> dict[str, Any]:
    return {"id": model_id,
            "limits": {"context_window": context_window, "max_output_tokens": max_output_tokens}}


def anchor_messages(session: Session, mode: Mode) -> list[dict[str, Any]]:
    """The leading recorded messages that hold the mode's pinned anchor (customs included)."""
    requested = mode.config.get("anchor_messages", 0)
    facing = [i for i, m in enumerate(session.messages) if m["role"] != "custom"]
    pinned = anchor_length([session.messages[i] for i in facing], requested)
    return session.messages[:facing[pinned - 1] + 1] if pinned else []


def round_trip(session: Session, mode: Mode, context_window: int, *, model_id: str = "replay-model",
               max_output_tokens: int = MAX_OUTPUT_TOKENS, observer: Observer | None = None) -> Ledger:
    """Drive ``session`` through ``context::assemble`` in ``mode`` for a model of ``context_window``
    tokens and ``max_output_tokens``; ``observer`` sees every call."""
    recorder = RecordingSummarizer() if mode.summarizer else None
    ctx = worker_context(mode.config, recorder)
    model = model_input(context_window, model_id, max_output_tokens)
    return anyio.run(_round_trip, session, mode, ctx, recorder, model, observer)


async def _round_trip(session: Session, mode: Mode, ctx: HandlerContext, recorder: RecordingSummarizer | None,
                      model: dict[str, Any], observer: Observer | None) -> Ledger:
    ledger = Ledger()
    # The pinned anchor (request messages the caller always resends first) and, after it, the
    # first recorded message the caller still holds.
    anchor = [] if mode.tail_only else anchor_messages(session, mode)
    held_from = len(anchor)
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
        ledger.calls += 1
        mark = len(recorder.calls) if recorder is not None else 0
        try:
            response = await assemble_handler.handle(payload, ctx)
        except HandlerError as exc:
            if exc.kind != OVERFLOW:
                raise
            ledger.overflows += 1
            if observer is not None:
                observer(session, Call(index, sent_messages, previous_summary, None, len(anchor)))
            continue
        made = list(recorder.calls[mark:]) if recorder is not None else []
        if recorder is not None:
            # What a summariser request in conversation form repeats of the last context sent.
            for request in range(mark, len(recorder.calls)):
                conversation = recorder.conversations[request]
                if conversation is not None:
                    ledger.summarizer_cached += min(cached_prefix_tokens(previous_sent, conversation),
                                                    recorder.inputs[request])
        if observer is not None:
            observer(session, Call(index, sent_messages, previous_summary, response, len(anchor), made))
        sent = (response["system_prompt"], response["messages"])
        ledger.send(previous_sent, sent, response["token_count"])
        previous_sent = sent
        applied = response["applied"]
        if applied["compacted"] and mode.persist:
            previous_summary = applied["summary"]
            held_from += applied["tail_start_index"] - len(anchor)
    if recorder is not None:
        ledger.summarizer_calls += len(recorder.calls)
        ledger.summarizer_input += recorder.input_tokens
        ledger.summarizer_output += recorder.output_tokens
    return ledger


# ---------------------------------------------------------------------------------- the harness turn loop

PROVIDER_FRAMING_ALLOWANCE_TOKENS = 64
REQUEST_OVERHEAD_TOKENS = PROVIDER_FRAMING_ALLOWANCE_TOKENS + (len("{}") + 3) // 4
HOOK_ALLOWANCE_TOKENS = 256
REASSEMBLY_MARGIN_TOKENS = 256
OVERFLOW_MARK = f"{OVERFLOW}:"
ELIDED = ("result elided from the assembled context (compaction); the call completed in an earlier "
          "turn — consult the transcript if its output matters")


@dataclass(frozen=True)
class GuidanceHook:
    """A pre-generate hook that appends a guidance message on every ``every``-th step: short on
    one, ``long_chars`` long on the next."""

    every: int = 3
    short_chars: int = 160
    long_chars: int = 6_000

    def appended(self, step: int) -> list[dict[str, Any]]:
        if step % self.every != self.every - 1:
            return []
        size = self.long_chars if (step // self.every) % 2 else self.short_chars
        line = f"[guidance step {step}] Keep the change minimal, run the tests, report what failed. "
        text = (line * (size // len(line) + 1))[:size]
        return [{"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1_767_225_600_000 + step}]


class CallFailed(Exception):
    """A ``context::*`` call the worker answered with an error (its text as the caller sees it)."""


Trigger = Callable[[str, dict[str, Any]], Any]


@dataclass
class Entry:
    entry_id: str
    message: dict[str, Any] | None = None
    custom: dict[str, Any] | None = None  # {"custom_type", "data"}


@dataclass
class Assembly:
    overhead: int
    token_count: int
    usable: int
    compacted: bool
    tail_start_index: int | None
    message_count: int


@dataclass
class Step:
    step: int
    window: list[str]  # the entry ids sent, in order
    previous_summary: bool
    assemblies: list[Assembly] = field(default_factory=list)
    recount: list[int] = field(default_factory=list)  # count-tokens + base overhead, per count
    patched: int = 0
    task_in_context: bool | None = None
    failure: str | None = None

    @property
    def reassembled(self) -> bool:
        return len(self.assemblies) > 1


@dataclass
class CompactionRecord:
    step: int
    entry_id: str
    tail_start_index: int | None
    tail_start_entry_id: str | None
    candidate: int  # messages in the window the index points into
    written: bool  # False: the step's entry already existed (a re-assembly), the first one kept


@dataclass
class SessionRun:
    session: str
    session_id: str
    steps: list[Step] = field(default_factory=list)
    compactions: list[CompactionRecord] = field(default_factory=list)

    @property
    def failures(self) -> list[Step]:
        return [s for s in self.steps if s.failure is not None]


class HarnessLoop:
    """One session's turn loop over ``trigger(function_id, payload)``, which returns the result
    or raises :class:`CallFailed` with the error's text."""

    def __init__(self, trigger: Trigger, session: Session, session_id: str,
                 hook: GuidanceHook | None = GuidanceHook(), *,
                 request_overhead: int = REQUEST_OVERHEAD_TOKENS, session_line: bool = True,
                 observe: Callable[[dict[str, Any]], None] | None = None) -> None:
        """``session_line``: the system prompt carries the harness's session id line;
        ``observe`` sees every assemble answer."""
        self.trigger = trigger
        self.session = session
        self.session_id = session_id
        self.hook = hook
        self.request_overhead = request_overhead
        self.observe = observe
        self.model_id, self.provider = session.model
        aid = f"Your session id is {session_id}."
        prompt = session.system_prompt
        if not session_line:
            self.system_prompt = prompt
        else:
            self.system_prompt = f"{prompt}\n{aid}" if prompt else aid
        self.log: list[Entry] = []

    def run(self) -> SessionRun:
        result = SessionRun(self.session.name, self.session_id)
        step = 0
        for index, message in enumerate(self.session.messages):
            if message["role"] == "assistant" and any(e.message and e.message["role"] != "custom" for e in self.log):
                result.steps.append(self.step(step, result))
                step += 1
            self.log.append(Entry(f"e{index}", message=message))
        return result

    # ------------------------------------------------------------------ one step

    def step(self, step: int, run: SessionRun) -> Step:
        entries = list(self.log)
        previous_summary, candidate = self._window(entries)
        record = Step(step, [entry_id for entry_id, _ in candidate], previous_summary is not None)
        appended = self.hook.appended(step) if self.hook is not None else []
        extra = HOOK_ALLOWANCE_TOKENS if self.hook is not None else 0
        while True:
            try:
                answer = self._assemble(candidate, previous_summary, self.request_overhead + extra)
            except CallFailed as exc:
                kind = "context_overflow" if OVERFLOW_MARK in str(exc) else "dependency"
                record.failure = f"{kind}: context::assemble: {exc}"
                return record
            if self.observe is not None:
                self.observe(answer)
            applied = answer["applied"]
            record.assemblies.append(Assembly(
                self.request_overhead + extra, answer["token_count"], answer["usable"],
                bool(applied.get("compacted")), applied.get("tail_start_index"), len(answer["messages"])))
            if not answer["messages"]:
                record.failure = "context_overflow: context::assemble returned an empty model-facing context"
                return record
            if answer["token_count"] > answer["usable"]:
                record.failure = (f"context_overflow: context::assemble returned an over-budget context: "
                                  f"{answer['token_count']} tokens > {answer['usable']} usable")
                return record
            if applied.get("compacted") and applied.get("summary") is not None:
                self._record_compaction(step, candidate, answer, run)
            messages = list(answer["messages"]) + appended
            patched = patch_orphaned_calls(messages)
            record.patched = patched
            record.task_in_context = self._task_in(answer["system_prompt"], messages)
            if not appended and not patched:  # the request is the answer: its count stands
                final = answer["token_count"]
            else:
                try:
                    counted = self.trigger("context::count-tokens", self._count_payload(messages, answer["system_prompt"]))
                except CallFailed as exc:
                    record.failure = f"dependency: context::count-tokens: {exc}"
                    return record
                final = counted["tokens"] + self.request_overhead
                record.recount.append(final)
            if final <= answer["usable"]:
                return record
            if record.reassembled:
                record.failure = (f"context_overflow: final model request exceeds the assembled usable budget: "
                                  f"{final} tokens > {answer['usable']} usable (persists after re-assembly)")
                return record
            extra += max(0, final - answer["token_count"]) + REASSEMBLY_MARGIN_TOKENS

    def _window(self, entries: list[Entry]) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
        """The latest compaction entry's summary, and the model-facing messages from its tail."""
        summary: str | None = None
        tail: str | None = None
        for entry in entries:
            if entry.custom is not None and entry.custom["custom_type"] == "compaction":
                data = entry.custom["data"]
                summary = data.get("summary") if isinstance(data.get("summary"), str) else None
                tail = data.get("tail_start_entry_id") if isinstance(data.get("tail_start_entry_id"), str) else None
        started = tail is None
        candidate: list[tuple[str, dict[str, Any]]] = []
        for entry in entries:
            if tail is not None and entry.entry_id == tail:
                started = True
            if started and entry.message is not None and entry.message["role"] != "custom":
                candidate.append((entry.entry_id, entry.message))
        return summary, candidate

    def _assemble(self, candidate: list[tuple[str, dict[str, Any]]], previous_summary: str | None,
                  overhead: int) -> Any:
        model: dict[str, Any] = {"id": self.model_id}
        if self.provider is not None:
            model["provider"] = self.provider
        options: dict[str, Any] = {"lease_key": self.session_id, "request_overhead_tokens": overhead}
        if previous_summary is not None:
            options["previous_summary"] = previous_summary
        payload: dict[str, Any] = {"messages": [m for _, m in candidate], "model": model, "options": options,
                                   "tools": self.session.tools}
        if self.system_prompt is not None:
            payload["system_prompt"] = self.system_prompt
        return self.trigger("context::assemble", payload)

    def _count_payload(self, messages: list[dict[str, Any]], system_prompt: str) -> dict[str, Any]:
        model: dict[str, Any] = {"id": self.model_id}
        if self.provider is not None:
            model["provider"] = self.provider
        return {"messages": messages, "model": model, "tools": self.session.tools, "system_prompt": system_prompt}

    def _record_compaction(self, step: int, candidate: list[tuple[str, dict[str, Any]]], answer: Any,
                           run: SessionRun) -> None:
        applied = answer["applied"]
        index = applied.get("tail_start_index")
        tail_id = candidate[index][0] if isinstance(index, int) and 0 <= index < len(candidate) else None
        entry_id = f"compaction-{step}"
        written = not any(e.entry_id == entry_id for e in self.log)
        if written:
            self.log.append(Entry(entry_id, custom={"custom_type": "compaction", "data": {
                "summary": applied["summary"],
                "tail_start_entry_id": tail_id,
                "tokens_before": applied.get("tokens_before"),
                "summarized_head_tokens": applied.get("summarized_head_tokens"),
                "initial_token_count": applied.get("initial_token_count", 0),
                "assembled_token_count": answer["token_count"],
                "usable_input_tokens": answer["usable"],
                "effective_max_output_tokens": answer["effective_max_output_tokens"],
            }}))
        run.compactions.append(CompactionRecord(step, entry_id, index, tail_id, len(candidate), written))

    def _task_in(self, system_prompt: str, messages: list[dict[str, Any]]) -> bool:
        texts = [system_prompt]
        for message in messages:
            texts.extend(b["text"] for b in message.get("content", []) if b.get("type") == "text")
        context = "\n".join(texts)
        return all(text in context for text in self.session.task)


def patch_orphaned_calls(messages: list[dict[str, Any]]) -> int:
    """Insert an "elided" result after each assistant message whose function call has no result
    anywhere in the list; the number inserted."""
    resolved = {m["function_call_id"] for m in messages if isinstance(m.get("function_call_id"), str)}
    for m in messages:
        for block in m.get("content") or []:
            if block.get("type") == "function_result" and isinstance(block.get("function_call_id"), str):
                resolved.add(block["function_call_id"])
    patched = 0
    i = 0
    while i < len(messages):
        missing: list[tuple[str, str]] = []
        if messages[i].get("role") == "assistant":
            for block in messages[i].get("content") or []:
                if block.get("type") == "function_call" and isinstance(block.get("id"), str) \
                        and block["id"] not in resolved:
                    missing.append((block["id"], block.get("function_id") or "unknown"))
        for offset, (call_id, function_id) in enumerate(missing):
            messages.insert(i + 1 + offset, {
                "role": "function_result", "function_call_id": call_id, "function_id": function_id,
                "content": [{"type": "text", "text": ELIDED}], "is_error": False, "timestamp": 1_767_225_600_000})
        patched += len(missing)
        i += 1 + len(missing)
    return patched


class InProcess:
    """``trigger`` for :class:`HarnessLoop` over the worker's handlers in this process: one worker
    (``ctx``) for the whole run. ``context/overflow`` becomes :class:`CallFailed` with the text
    the caller sees; any other error propagates (a dependency failure stops the run)."""

    HANDLERS = {"context::assemble": assemble_handler.handle, "context::count-tokens": count_tokens_handler.handle}

    def __init__(self, ctx: HandlerContext) -> None:
        self.ctx = ctx

    def __call__(self, function_id: str, payload: dict[str, Any]) -> Any:
        handler = self.HANDLERS[function_id]
        try:
            return anyio.run(handler, payload, self.ctx)
        except HandlerError as exc:
            if exc.kind != OVERFLOW:
                raise
            raise CallFailed(f"{OVERFLOW}: {exc}") from None
