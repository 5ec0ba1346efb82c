"""The one mapping of an exception to the error envelope every entry answers with."""

from __future__ import annotations

import pytest

from context_manager.wire.errors import (
    CallError,
    DecodeError,
    HandlerError,
    error_envelope,
    is_defect,
    overflow,
)


@pytest.mark.parametrize(
    ("exc", "envelope", "defect"),
    [
        (DecodeError("missing field `model`"), ("invocation_failed", "serialization error: missing field `model`"), False),
        (overflow(12, 10), ("invocation_failed",
                            "handler error: context/overflow: assembled context requires 12 tokens but usable budget is 10"),
         False),
        (HandlerError("UNKNOWN_UI_ASSET", "'x' is not one"), ("invocation_failed", "handler error: UNKNOWN_UI_ASSET: 'x' is not one"),
         False),
        (CallError("function_not_found", "gone"), ("function_not_found", "gone"), False),
        (RuntimeError("kaput"), ("invocation_failed", "internal error: kaput"), True),
        (KeyError("messages"), ("invocation_failed", "internal error: 'messages'"), True),
        # A defect without a message keeps the bare prefix, as every entry always answered.
        (AssertionError(), ("invocation_failed", "internal error: "), True),
    ],
)
def test_error_envelope(exc: BaseException, envelope: tuple[str, str], defect: bool) -> None:
    assert error_envelope(exc) == envelope
    assert is_defect(exc) is defect
