"""Every port: the protocols through which the pure core and the adapters meet.

Adapters (router over the engine, summarisers, lease stores, exact tokenizers, wall clock, outbound
invocation) implement them for the worker; tests implement them with fakes. The core never imports an
adapter, only these protocols and the small value types they carry.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from context_manager.wire.errors import Error
from context_manager.wire.ints import I64_MAX, I64_MIN
from context_manager.wire.trace import TraceContext


@dataclass(frozen=True, slots=True)
class RouterModel:
    """A router catalog record, reduced to what budget math consumes (spec 01 §3.7)."""

    id: str
    context_window: int
    max_output_tokens: int
    provider: str = ""
    input_limit: int | None = None
    thinking_budgets: dict[str, int] | None = None
    supports_vision: bool | None = None


@dataclass(frozen=True, slots=True)
class ModelBudget:
    """A `router::models::budget` answer: the catalog record and the router's output cap."""

    model: RouterModel
    effective_max_output_tokens: int


class ResolverError(Error):
    """The router is absent, unreachable, timed out or answered something unusable."""


class ModelResolver(Protocol):
    async def get_model_budget(self, provider: str | None, model_id: str) -> ModelBudget | None:
        """The budget, or ``None`` when the router does not know the model.

        Raises :class:`ResolverError` (its text becomes ``router unavailable: <text>``).
        """
        ...


# --- token estimation ---------------------------------------------------------------------------

class Estimator(Protocol):
    """Counts tokens the way one model family does; ``kind`` is ``heuristic`` or ``tokenizer``."""

    kind: str

    def message(self, m: dict[str, Any]) -> int: ...

    def text(self, s: str) -> int: ...

    def function(self, f: dict[str, Any]) -> int: ...

    def image(self, block: dict[str, Any]) -> int:
        """One image block (the flat budget, or its provider's price)."""
        ...


class TokenizerSource(Protocol):
    """Exact tokenizers by model (``estimator: auto``); the composition roots provide one."""

    def estimator_for(self, model_id: str) -> Estimator | None:
        """The exact estimator of ``model_id``, or ``None`` (the heuristic counts it)."""
        ...


class TokenCounter(Protocol):
    """The provider's own count of a request (``estimator: router``): ``None`` when it cannot
    be had (no counter, a timeout, an error); the implementation reports why."""

    async def count(self, model_id: str, system_prompt: str | None, tools: list[dict[str, Any]] | None,
                    messages: list[dict[str, Any]]) -> int | None: ...


class Clock(Protocol):
    def now_ms(self) -> int: ...


@dataclass(slots=True)
class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


@dataclass(slots=True)
class ManualClock:
    """A clock tests move by hand."""

    now: int = 0

    def now_ms(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


# --- outbound invocation ----------------------------------------------------------------------

class InvokeError(Error):
    """An invocation that did not produce a result; ``str(err)`` is the failure text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


class Invoke(Protocol):
    def __call__(self, function_id: str, payload: dict[str, Any], timeout_ms: int) -> Awaitable[Any]: ...


# --- compaction: the summariser and the lease store --------------------------------------------

SummarizeErrorKind = Literal["unavailable", "failed", "empty"]


class SummarizeError(Error):
    """Why a summary could not be produced (spec 03 §3.6).

    ``kind`` decides the outcome: ``empty`` reads as "nothing to compact", ``unavailable`` and
    ``failed`` as "compaction unavailable". The text only ever reaches logs.
    """

    kind: SummarizeErrorKind = "failed"

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail)
        self.detail = detail

    def __str__(self) -> str:
        if self.kind == "unavailable":
            return f"summariser unavailable: {self.detail}"
        if self.kind == "empty":
            return "summariser returned an empty summary"
        return f"summariser failed: {self.detail}"


class SummarizerUnavailable(SummarizeError):
    """No summariser could be reached (``router::chat`` unroutable, channel creation failed)."""

    kind: SummarizeErrorKind = "unavailable"


class SummarizerFailed(SummarizeError):
    """The summariser or the pipeline around it failed (router error, stream error, bounds)."""

    kind: SummarizeErrorKind = "failed"


class SummarizerEmpty(SummarizeError):
    """The summariser answered nothing (or only whitespace)."""

    kind: SummarizeErrorKind = "empty"

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail)


@dataclass(frozen=True, slots=True)
class SummarizerConversation:
    """The same request as the conversation the model last read (``summarizer_request:
    conversation``): its system prompt, its tools and the messages of the head, then one user
    message of ``instructions``. A transport that sends messages (the router) sends this form,
    so the provider reads the head from its prompt cache."""

    system_prompt: str
    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]
    instructions: str


@dataclass(frozen=True, slots=True)
class SummarizeRequest:
    """One summariser call: a system prompt and one user message carrying a fragment; with
    ``conversation``, the same head also as the conversation it came from (a summariser that only
    reads text uses the rendered form)."""

    system_prompt: str
    user_prompt: str
    model: str
    provider: str | None = None
    # The request's whole model input (id, provider, limits), for summarisers that want it.
    model_input: dict[str, Any] | None = None
    conversation: SummarizerConversation | None = None


class SummaryReply(str):
    """A summariser's reply text with the provider's token usage, when its transport reports one:
    ``usage`` is (input tokens, output tokens). A plain ``str`` reply reports none."""

    def __new__(cls, text: str, usage: tuple[int, int] | None = None) -> SummaryReply:
        reply = super().__new__(cls, text)
        reply.usage = usage
        return reply

    usage: tuple[int, int] | None


def reply_usage(reply: str) -> tuple[int, int] | None:
    """The usage a reply carries (:class:`SummaryReply`), else None."""
    return reply.usage if isinstance(reply, SummaryReply) else None


class Summarizer(Protocol):
    async def summarize(self, request: SummarizeRequest) -> str:
        """The reply text, unmodified.

        Raises :class:`SummarizeError` (any other exception is treated as ``failed``).
        """
        ...


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """A claim on a compaction key: who holds it and since when (ms since epoch)."""

    nonce: str
    ts: int

    @classmethod
    def from_value(cls, value: Any) -> LeaseRecord | None:
        """A stored ``{nonce: string, ts: i64}`` object (extra members allowed); anything else,
        to every store, means the key is free (spec 03 §6.4, §6.7)."""
        if type(value) is not dict:
            return None
        nonce, ts = value.get("nonce"), value.get("ts")
        if type(nonce) is not str or type(ts) is not int or not I64_MIN <= ts <= I64_MAX:
            return None
        return cls(nonce, ts)

    def as_value(self) -> dict[str, Any]:
        """The stored form, members in the spec's order."""
        return {"nonce": self.nonce, "ts": self.ts}


class LeaseStoreError(Error):
    """The store could not be read or written; the protocol reads it as "busy".

    ``reported``: the store has already logged that it is unusable, so the protocol notes the
    failure at DEBUG instead of adding a warning per call.
    """

    def __init__(self, text: str = "", *, reported: bool = False) -> None:
        super().__init__(text)
        self.reported = reported


class LeaseStore(Protocol):
    """Records under ``(scope, key)``; every operation may raise :class:`LeaseStoreError`."""

    async def get(self, scope: str, key: str) -> LeaseRecord | None: ...

    async def set(self, scope: str, key: str, record: LeaseRecord | None) -> None:
        """Write ``record``, or delete the entry when it is ``None``."""
        ...

    async def swap(self, scope: str, key: str, record: LeaseRecord) -> LeaseRecord | None:
        """Atomically write ``record`` and return what was stored before it."""
        ...


@runtime_checkable
class ClaimingLeaseStore(LeaseStore, Protocol):
    """A lease store that can also check before it writes, in one atomic step.

    The lease protocol (``core.compaction.lease.acquire``) tells the two kinds apart with
    ``isinstance``: with ``claim`` a losing racer never writes, so no racer's claim ever has to be
    written back; a plain store takes the key with ``swap`` and restores a racer's claim.
    """

    async def claim(
        self, scope: str, key: str, record: LeaseRecord, held: Callable[[LeaseRecord | None], bool]
    ) -> LeaseRecord | None:
        """Write ``record`` only when ``held(prior)`` is false; return ``prior`` either way."""
        ...


# --- summary reuse across calls ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RememberedCompaction:
    """A history's last compaction (``summary_reuse``).

    ``summary`` stands for the request messages ``[anchor_len, head_len)``; the verbatim tail
    started at request index ``head_len``; ``head_digest`` is the content key (the default lease
    key's digest) of the request's first ``head_len`` messages, customs and anchor included, so
    only a history that starts with exactly those messages reuses it.
    """

    summary: str
    head_len: int
    head_digest: str
    anchor_len: int
    # ``applied.retained_items`` of the summary (``summary_check: append``), kept by the
    # summaries computed ahead of time (``core.compaction.ahead``); ``None`` otherwise.
    retained_items: int | None = None


class SessionStore(Protocol):
    """Remembered compactions by session key; a store may forget any of them at any time."""

    async def get(self, key: str) -> RememberedCompaction | None: ...

    async def peek(self, key: str) -> RememberedCompaction | None:
        """What ``get`` would return, changing nothing: no recency refreshed, no expired or
        unreadable record cleaned up (a call that must leave no trace reads this way)."""
        ...

    async def put(self, key: str, record: RememberedCompaction) -> None: ...


# --- background jobs (``compact_ahead_at``) ------------------------------------------------

class JobRunner(Protocol):
    """Runs jobs off the calls that start them (``core.compaction.ahead``).

    A job belongs to the process that started it: it ends with it, and whatever it had not
    finished is lost. Implementations bound how many run at once and how long each may take.
    """

    def start(self, key: str, job: Callable[[], Awaitable[bool]], timeout_s: float) -> bool:
        """Start ``job`` unless one under ``key`` is still running here, a job under ``key``
        settled it (answered ``True``) and the runner still remembers that, or the runner is at
        its limit; never waits for it. ``True`` when it was started. A job still running after
        ``timeout_s`` seconds is cancelled (and settles nothing)."""
        ...


# --- published policies --------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PolicyRecord:
    """One published version of one scope (a surface, a namespace or none, a model tag or none):
    its number, when it was published (ISO 8601, UTC) and its validated JSON document."""

    version: int
    created_at: str
    document: Any


@dataclass(frozen=True, slots=True)
class PolicyIndex:
    """The active version of every scope that has one, and a stamp that changes with every
    activation or withdrawal, so a process can tell in one read whether what it resolved is
    still in force."""

    stamp: int
    active: dict[str, int]


EMPTY_POLICY_INDEX = PolicyIndex(0, {})


class PolicyStoreError(Error):
    """The policy store failed (no state worker, a timeout, an unusable reply); nothing the call
    meant to change is in force."""


class PolicyStore(Protocol):
    """Versions by scope key and the active one of each. ``allocate`` hands out strictly
    increasing numbers per scope even to concurrent callers; ``activate`` changes a scope's
    active version (``None``: withdrawn) and the stamp in one atomic step. Every failure raises
    :class:`PolicyStoreError`."""

    async def index(self) -> PolicyIndex: ...

    async def allocate(self, scope: str) -> int: ...

    async def put(self, scope: str, record: PolicyRecord) -> None: ...

    async def get(self, scope: str, version: int) -> PolicyRecord | None: ...

    async def versions(self, scope: str) -> list[PolicyRecord]: ...

    async def activate(self, scope: str, version: int | None) -> None: ...

    async def scopes(self) -> dict[str, int]:
        """Every scope a version number was taken for, with the last number taken."""
        ...


# --- telemetry ---------------------------------------------------------------------------------

# A span attribute or metric value: what OpenTelemetry accepts, never message content.
AttributeValue = str | int | float | bool
SpanKind = Literal["server", "client", "internal"]


class Span(Protocol):
    def set_attributes(self, attributes: dict[str, AttributeValue]) -> None: ...

    def set_error(self, description: str) -> None: ...


class Telemetry(Protocol):
    """Traces and metrics. ``span`` opens a span whose parent is ``parent`` (an incoming
    context) or else the span running in this task; while it is open, ``wire.trace.CURRENT_TRACE``
    holds its context so the invocations made meanwhile carry it. Metric names are dotted
    OpenTelemetry names; labels must be low-cardinality."""

    enabled: bool

    def span(self, name: str, kind: SpanKind = "internal",
             parent: TraceContext | None = None) -> AbstractContextManager[Span]: ...

    def count(self, name: str, value: int, labels: dict[str, str]) -> None: ...

    def record(self, name: str, value: float, labels: dict[str, str]) -> None: ...

    def shutdown(self) -> None:
        """Export what is buffered and stop; called once when the worker stops."""
        ...


class _NoSpan:
    __slots__ = ()

    def set_attributes(self, attributes: dict[str, AttributeValue]) -> None:
        pass

    def set_error(self, description: str) -> None:
        pass


NO_SPAN = _NoSpan()


class _NoSpanScope:
    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return NO_SPAN

    def __exit__(self, *exc_info: object) -> None:
        return None


_NO_SPAN_SCOPE = _NoSpanScope()


class NoTelemetry:
    """Telemetry off: nothing recorded, the caller's trace context passed through unchanged."""

    enabled = False

    def span(self, name: str, kind: SpanKind = "internal",
             parent: TraceContext | None = None) -> _NoSpanScope:
        return _NO_SPAN_SCOPE

    def count(self, name: str, value: int, labels: dict[str, str]) -> None:
        pass

    def record(self, name: str, value: float, labels: dict[str, str]) -> None:
        pass

    def shutdown(self) -> None:
        pass


NO_TELEMETRY = NoTelemetry()
