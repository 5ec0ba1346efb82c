"""Namespaces: the scopes a policy is published at and a request names (``acme``, ``acme/proj-7``,
``acme/proj-7/user-99``), and the levels a request resolves through."""

from __future__ import annotations

import re
from typing import Any

from context_manager.wire.decode import unexpected
from context_manager.wire.errors import INVALID_REQUEST, HandlerError

PATTERN = re.compile(r"[a-z0-9_-]{1,64}(/[a-z0-9_-]{1,64})*")
MAX_LENGTH = 255


def invalid(path: str, reason: str) -> HandlerError:
    """``context/invalid_request`` naming the member at ``path``."""
    return HandlerError(INVALID_REQUEST, f"{path}: {reason}")


def check_namespace(value: Any, path: str) -> str | None:
    """``value`` when it is a namespace, ``None`` when it is null or absent; otherwise
    ``context/invalid_request`` naming ``path``."""
    if value is None:
        return None
    if type(value) is not str:
        raise invalid(path, f"expected a namespace string, got {unexpected(value)}")
    if len(value) > MAX_LENGTH:
        raise invalid(path, f"a namespace has at most {MAX_LENGTH} characters, got {len(value)}")
    if PATTERN.fullmatch(value) is None:
        raise invalid(path, "a namespace is segments of 1 to 64 characters a-z, 0-9, _ or - "
                            "separated by /")
    return value


def levels(namespace: str | None) -> tuple[str | None, ...]:
    """The levels a request at ``namespace`` resolves through, nearest first: the namespace, each
    ancestor, then the org-global level (``None``)."""
    if namespace is None:
        return (None,)
    parts = namespace.split("/")
    return (*("/".join(parts[:depth]) for depth in range(len(parts), 0, -1)), None)
