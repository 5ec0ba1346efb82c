"""The two ports compaction reaches the world through: the summariser and the lease store.

Adapters implement them for the worker (``router::chat`` over a channel, lease files); tests
implement them with fakes. The core only ever sees these protocols.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

SummarizeErrorKind = Literal["unavailable", "failed", "empty"]


class SummarizeError(Exception):
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
class SummarizeRequest:
    """One summariser call: a system prompt and one user message carrying a fragment."""

    system_prompt: str
    user_prompt: str
    model: str
    provider: str | None = None
    # The request's whole model input (id, provider, limits), for summarisers that want it.
    model_input: dict[str, Any] | None = None


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


class LeaseStoreError(Exception):
    """The store could not be read or written; the protocol reads it as "busy"."""


class LeaseStore(Protocol):
    """Records under ``(scope, key)``; every operation may raise :class:`LeaseStoreError`."""

    async def get(self, scope: str, key: str) -> LeaseRecord | None: ...

    async def set(self, scope: str, key: str, record: LeaseRecord | None) -> None:
        """Write ``record``, or delete the entry when it is ``None``."""
        ...

    async def swap(self, scope: str, key: str, record: LeaseRecord) -> LeaseRecord | None:
        """Atomically write ``record`` and return what was stored before it."""
        ...

    # Optional: a store that can also check before it writes, in one atomic step, offers
    # ``async def claim(scope, key, record, held) -> prior``, which writes ``record`` only when
    # ``held(prior)`` is false and returns ``prior`` either way. The protocol then never has to
    # write a racer's claim back (see ``core.lease.acquire``).
