"""Error types and their wire rendering.

Two failure layers reach a caller (spec 01 §4):
* decoding failures, rendered ``serialization error: <decoder message>``;
* handler failures, rendered ``handler error: <code>: <message>``.
Both travel with the envelope code ``invocation_failed``, as does any other exception (a defect),
rendered ``internal error: <exception text>``; :func:`error_envelope` is the one mapping.
"""

from __future__ import annotations

INVOCATION_FAILED = "invocation_failed"

INVALID_REQUEST = "context/invalid_request"
MODEL_UNRESOLVED = "context/model_unresolved"
STATE = "context/state"
OVERFLOW = "context/overflow"


class Error(Exception):
    """The root of every exception the library raises (exported as ``context_manager.Error``).

    Each class below it keeps the base it had before this root existed as well (``ConfigError``
    is still a ``ValueError``, ``UnknownFunction`` a ``LookupError``), so older handlers keep
    catching them.
    """


class ContextManagerError(Error):
    """Base class of every failure a function can report to its caller."""

    code: str = INVOCATION_FAILED

    @property
    def wire_message(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError


class DecodeError(ContextManagerError):
    """The payload does not decode into the function's typed request."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    @property
    def wire_message(self) -> str:
        return f"serialization error: {self.detail}"


class HandlerError(ContextManagerError):
    """A rule of the function itself rejected the request."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message

    @property
    def text(self) -> str:
        return f"{self.kind}: {self.message}"

    @property
    def wire_message(self) -> str:
        return f"handler error: {self.text}"


def invalid_request() -> HandlerError:
    return HandlerError(INVALID_REQUEST, "messages is required")


def model_unresolved(reason: str) -> HandlerError:
    return HandlerError(MODEL_UNRESOLVED, f"could not resolve model limits ({reason})")


def overflow(token_count: int, usable: int) -> HandlerError:
    return HandlerError(
        OVERFLOW,
        f"assembled context requires {token_count} tokens but usable budget is {usable}",
    )


class CallError(Error):
    """Raised by :func:`context_manager.call`; carries the envelope an engine caller would get."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def is_defect(exc: BaseException) -> bool:
    """Whether ``exc`` is none of the failures a function reports on purpose: the one kind whose
    traceback belongs in the log."""
    return not isinstance(exc, (ContextManagerError, CallError))


def error_envelope(exc: BaseException) -> tuple[str, str]:
    """The ``(code, message)`` a caller receives for ``exc``, on every entry (engine, library,
    command). A defect's traceback is never part of the message."""
    if isinstance(exc, ContextManagerError):
        return exc.code, exc.wire_message
    if isinstance(exc, CallError):
        return exc.code, exc.message
    return INVOCATION_FAILED, f"internal error: {exc}"
