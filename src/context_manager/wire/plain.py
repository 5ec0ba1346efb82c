"""Plain JSON values for library callers.

Inside, a float outside [1e-4, 1e16) and a deeply nested free-form subtree are
``orjson.Fragment`` objects holding their exact text (see ``codec``): that text is what counts,
hashes and written answers are taken over. A Python caller of ``api.call`` gets values the
standard library can write instead: every fragment is parsed back into the value its text
denotes (a float reads as ``float(text)``).

Walking a whole answer would cost about a third of a typical call, and few answers hold a
fragment, so while a library call watches (``watching_fragments``) the decoders note each
fragment they put into a decoded value, and by kind: a usage cost (found at one known place,
``messages[i].usage.cost_usd``, cheap to fix) or a free-form value (anywhere: the whole answer is
walked). An answer whose call noted none is returned as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import orjson

Fragment = orjson.Fragment


class FragmentWatch:
    """Which kinds of fragment entered decoded values during the watched call."""

    __slots__ = ("costs", "free_form")

    def __init__(self) -> None:
        self.costs = False
        self.free_form = False


# The watch of the library call running in this context; none for engine and command calls.
# A call's handler runs in a task, which starts from a copy of this context: it sees the watch.
_WATCH: ContextVar[FragmentWatch | None] = ContextVar("fragment_watch", default=None)


@contextmanager
def watching_fragments() -> Iterator[FragmentWatch]:
    watch = FragmentWatch()
    token = _WATCH.set(watch)
    try:
        yield watch
    finally:
        _WATCH.reset(token)


def note_cost(fragment: Fragment) -> Fragment:
    """A usage ``cost_usd`` decoded as a fragment; returns it."""
    watch = _WATCH.get()
    if watch is not None:
        watch.costs = True
    return fragment


def note_free_form(fragment: Fragment) -> Fragment:
    """A fragment placed inside (or as) a free-form value; returns it."""
    watch = _WATCH.get()
    if watch is not None:
        watch.free_form = True
    return fragment


def plain_answer(answer: dict[str, Any], watch: FragmentWatch) -> dict[str, Any]:
    """``answer`` without the fragments ``watch`` saw enter it; unchanged parts are shared."""
    if watch.free_form:
        return plain_json(answer)
    if watch.costs:
        return _with_plain_costs(answer)
    return answer


def _with_plain_costs(answer: dict[str, Any]) -> dict[str, Any]:
    messages = answer.get("messages")
    if type(messages) is not list:
        return answer
    out: list[Any] | None = None
    for index, message in enumerate(messages):
        usage = message.get("usage")
        if usage is not None and type(usage.get("cost_usd")) is Fragment:
            if out is None:
                out = list(messages)
            out[index] = {**message, "usage": {**usage, "cost_usd": _parsed(usage["cost_usd"])}}
    return answer if out is None else {**answer, "messages": out}


_LEAVES = frozenset((str, int, float, bool, type(None)))


def plain_json(value: Any) -> Any:
    """``value`` with every fragment replaced by its JSON value. A container holding one is
    copied (in its key order); the others are returned as they are."""
    kind = type(value)
    if kind is dict or kind is list:
        out: Any = None
        for key, item in (value.items() if kind is dict else enumerate(value)):
            if type(item) not in _LEAVES:
                plain = plain_json(item)
                if plain is not item:
                    if out is None:
                        out = kind(value)
                    out[key] = plain
        return value if out is None else out
    if kind is Fragment:
        return _parsed(value)
    return value


def _parsed(fragment: Fragment) -> Any:
    # orjson writes a fragment as its bytes; reading them back parses floats exactly.
    return orjson.loads(orjson.dumps(fragment))
