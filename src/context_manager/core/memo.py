"""Decoded messages and their per-message measures, remembered across calls.

An agent loop resends its whole history on every turn with a few messages added, so most
messages of a request were decoded, estimated and scanned by an earlier call. The memo maps a
raw message (as parsed from the request) to the canonical dict decoded from it and to values
derived from that dict alone (estimates, result sizes, a capped or pruned rewrite), so a warm
call skips that work for every message it has seen.

Finding an entry costs no serialization: a bucket key made of a few cheap members (role,
timestamp, ...) selects a candidate, and the raw message must then equal the candidate's
canonical dict (`==`, a C-speed walk that compares the strings byte by byte) with every number
and boolean of the same type (`==` alone says ``1 == 1.0 == True``) and every zero float of
the same sign (``-0.0 == 0.0``, which JSON writes apart). A raw message whose members differ
from the canonical set only as plain decoding of its role or block types allows (an absent
``details``, a null ``signature``...) is compared with a reshaped copy of the canonical dict
made once per entry.

The memo is bounded by the bytes of text its entries hold (plus a fixed overhead each), least
recently used first out. Entries are immutable values shared by every call that finds them:
nothing in the core mutates a decoded message, and callers that hand the resulting dicts to
user code (``api.call``) run without a memo. Which memo a call uses, if any, is part of its
``core.reuse.CallReuse``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from context_manager.wire.lru import ByteLRU, BytesBounded, SeenKeys
from context_manager.wire.schema import (
    BLOCK_LIST,
    BLOCK_TAG,
    BLOCKS,
    MESSAGE_TAG,
    MESSAGES,
    Presence,
    Record,
    filled_defaults,
    names,
)

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# Rough resident cost of an entry besides its text: dicts, lists and the bookkeeping around them.
ENTRY_OVERHEAD_BYTES = 400
BLOCK_OVERHEAD_BYTES = 120
# Keys of the first messages of histories met once; cleared whole when full.
MAX_SEEN_KEYS = 10_000


class Shape(NamedTuple):
    """How plain decoding of one record kind (a role, a block type) reshapes a raw record."""

    nullable: frozenset[str]  # members an explicit null leaves out of the canonical form
    defaults: dict[str, Any]  # members the canonical form fills in when absent, with the value
    blocks: frozenset[str]  # members holding content blocks, reshaped block by block


def _shape(record: Record) -> Shape:
    return Shape(frozenset(names(record, presence=Presence.OMITTED)), filled_defaults((record,)),
                 frozenset(names(record, of_type=BLOCK_LIST)))


# Per kind: a member's name alone does not say how it decodes (an absent `is_error` is `false`
# in a function_result message but stays absent in an inline function_result block).
MESSAGE_SHAPES = {role: _shape(record) for role, record in MESSAGES.items()}
BLOCK_SHAPES = {kind: _shape(record) for kind, record in BLOCKS.items()}
_UNSHAPED = object()  # the raw shape could not be matched: the entry never serves that shape
# A zero float is probed by its sign instead of its type: the one pair of distinct JSON numbers
# `==` (and hence every other check here) cannot tell apart. Neither marker is any value's type.
_POSITIVE_ZERO = object()
_NEGATIVE_ZERO = object()

Path = tuple[Any, ...]


class Entry:
    """One decoded message (or tools list) and what has been derived from it."""

    __slots__ = ("message", "key", "raw", "expect", "top", "probes", "derived")

    def __init__(self, message: Any, key: Any) -> None:
        self.message = message
        self.key = key
        self.raw: Any = None  # the parsed message last found to be this entry's
        self.expect: Any = None  # what a raw message must equal; None until first needed
        # Numbers and booleans to type-check (zero floats: sign-check), the message's own
        # members, then nested ones.
        self.top: tuple[tuple[Any, Any], ...] = ()
        self.probes: tuple[tuple[Path, tuple[tuple[Any, Any], ...]], ...] = ()
        self.derived: dict[Any, Any] = {}


def bucket_key(raw: dict[str, Any]) -> Any:
    """A cheap key that tells most messages apart (unhashable members raise TypeError)."""
    content = raw.get("content")
    return (raw.get("role"), raw.get("timestamp"), raw.get("function_call_id"),
            len(content) if type(content) is list else -1)


def _approx_bytes(message: dict[str, Any]) -> int:
    size = ENTRY_OVERHEAD_BYTES
    for block in message["content"]:
        text = block.get("text") or block.get("data")
        size += BLOCK_OVERHEAD_BYTES + (len(text) if type(text) is str else 1024)
    return size


def _reshaped(canonical: dict[str, Any], raw: Any, shapes: dict[str, Shape] = MESSAGE_SHAPES,
              tag: str = MESSAGE_TAG) -> Any:
    """A message (or, with the block shapes and tag, a block) ``canonical`` with the raw
    record's member set, or _UNSHAPED: equal to ``raw`` exactly when plain decoding of ``raw``
    gives ``canonical``, given the same types.

    A member the canonical dict carries as its kind's default may be absent from the raw one,
    and a member the kind omits when null may be an explicit null in the raw one; anything else
    (unknown members, a different block list) cannot be reshaped. Free-form values are compared
    as they are.
    """
    if type(raw) is not dict:
        return _UNSHAPED
    shape = shapes[canonical[tag]]
    defaults = shape.defaults
    out: dict[str, Any] = {}
    for name, value in canonical.items():
        if name in raw:
            if name in shape.blocks:
                value = _reshaped_blocks(value, raw[name])
                if value is _UNSHAPED:
                    return _UNSHAPED
            out[name] = value
        elif name not in defaults or type(value) is not type(defaults[name]) or value != defaults[name]:
            return _UNSHAPED
    for name, value in raw.items():
        if name not in canonical:
            if value is not None or name not in shape.nullable:
                return _UNSHAPED
            out[name] = None
    return out


def _reshaped_blocks(blocks: list[dict[str, Any]], raw: Any) -> Any:
    if type(raw) is not list or len(raw) != len(blocks):
        return _UNSHAPED
    out = []
    for block, raw_block in zip(blocks, raw):
        item = _reshaped(block, raw_block, BLOCK_SHAPES, BLOCK_TAG)
        if item is _UNSHAPED:
            return _UNSHAPED
        out.append(item)
    return out


def _probes(value: Any, path: Path, out: dict[Path, list[tuple[Any, Any]]]) -> None:
    """The numbers and booleans of ``value`` (the leaves ``==`` cannot tell apart), each with
    its type or, for a zero float, its sign marker, grouped by the path of the container
    holding them."""
    if type(value) is dict:
        items: Any = value.items()
    else:
        items = enumerate(value)
    for name, item in items:
        kind = type(item)
        if kind is dict or kind is list:
            _probes(item, path + (name,), out)
        elif kind is float and item == 0.0:
            sign = _NEGATIVE_ZERO if math.copysign(1.0, item) < 0 else _POSITIVE_ZERO
            out.setdefault(path, []).append((name, sign))
        elif kind is int or kind is float or kind is bool:
            out.setdefault(path, []).append((name, kind))


def _same_zero(value: Any, kind: Any) -> bool:
    """Is ``value``, of another type than ``kind``, the zero float that ``kind`` marks? Only
    called once the type test failed, so leaves that are not zeros cost nothing more."""
    if type(value) is not float or value != 0.0:
        return False
    if kind is _NEGATIVE_ZERO:
        return math.copysign(1.0, value) < 0
    return kind is _POSITIVE_ZERO and math.copysign(1.0, value) > 0


def _same_types(raw: Any, probes: tuple[tuple[Path, tuple[tuple[Any, Any], ...]], ...]) -> bool:
    for path, leaves in probes:
        container = raw
        for step in path:
            container = container[step]
        for name, kind in leaves:
            value = container[name]
            if type(value) is not kind and not _same_zero(value, kind):
                return False
    return True


class MessageMemo(BytesBounded):
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        # An entry that leaves, evicted or replaced, leaves the side indexes with it.
        self._lru: ByteLRU[Any, Entry] = ByteLRU(max_bytes, on_evict=self._forget)
        self._by_id: dict[int, Entry] = {}
        self._by_raw: dict[int, Entry] = {}  # id(entry.raw) -> entry
        self._seen: SeenKeys[Any, None] = SeenKeys(MAX_SEEN_KEYS)  # first messages of histories met once
        self._lock = threading.RLock()
        self.hits = 0
        self.misses = 0

    # -- raw message -> canonical dict ------------------------------------------------------

    def decode_all(self, raws: list[Any], decode: Callable[[Any], dict[str, Any]],
                   owned: bool = False) -> list[dict[str, Any]]:
        """``[decode(raw) for raw in raws]``, reusing the entries of messages seen before.

        A history the memo does not recognise (see ``recognise``) is decoded plainly and keeps
        nothing alive; from the next call of that conversation on, every message is remembered.
        """
        if not self.recognise(raws):
            return [decode(raw) for raw in raws]
        return self.decode_recognised(raws, decode, owned)

    def recognise(self, raws: list[Any]) -> bool:
        """Has a history like ``raws`` come by before?

        A conversation is recognised by its first message: a history whose first message the
        memo has never met (a one-off request, the first call of a conversation) is not, and
        only its first message's key is noted, so that its next call is.
        """
        return bool(raws) and self._known(raws[0])

    def decode_recognised(self, raws: list[Any], decode: Callable[[Any], dict[str, Any]],
                          owned: bool = False) -> list[dict[str, Any]]:
        """``decode_all`` of a history already recognised: every message is looked up and
        remembered. ``owned``: the raws were parsed here and are never handed out (see
        ``_found``)."""
        out: list[dict[str, Any]] = []
        append = out.append
        entries = self._lru
        get = entries.get
        by_raw = self._by_raw
        hits = 0
        with self._lock:
            for raw in raws:
                # The very object found before (a history the request reader reused): parsed
                # values are never mutated, so it still decodes to the same entry.
                entry = by_raw.get(id(raw))
                if entry is not None and entry.raw is raw:
                    entries.move_to_end(entry.key)
                    hits += 1
                    append(entry.message)
                    continue
                if type(raw) is not dict:
                    append(decode(raw))
                    continue
                content = raw.get("content")  # bucket_key, inline
                key = (raw.get("role"), raw.get("timestamp"), raw.get("function_call_id"),
                       len(content) if type(content) is list else -1)
                try:
                    entry = get(key)
                except TypeError:  # an unhashable member: not a valid message anyway
                    append(decode(raw))
                    continue
                if entry is not None:
                    expect = entry.expect
                    if expect is None:
                        expect = self._expectation(raw, entry)
                    if raw == expect:
                        for name, kind in entry.top:
                            value = raw[name]
                            if type(value) is not kind and not _same_zero(value, kind):
                                break
                        else:
                            if not entry.probes or _same_types(raw, entry.probes):
                                entries.move_to_end(key)
                                hits += 1
                                if owned:
                                    self._found(entry, raw)
                                append(entry.message)
                                continue
                message = decode(raw)
                entry = self._insert(key, message)
                if owned and entry is not None:
                    self._found(entry, raw)
                append(message)
            self.hits += hits
            self.misses += len(raws) - hits
        return out

    def _known(self, first: Any) -> bool:
        """Has a history starting with ``first`` come by before? Notes it if not."""
        if type(first) is not dict:
            return False
        try:
            key = bucket_key(first)
            if key in self._lru or key in self._seen:
                return True
        except TypeError:
            return False
        with self._lock:
            self._seen.note(key, None)
        return False

    def _found(self, entry: Entry, raw: Any) -> None:
        """Note ``raw`` as the object that decodes to ``entry`` (one object per entry).

        Only for payloads the call owns: a caller's dict could be changed after the call, while
        parsed values are never mutated, so the same object is the same message next time.
        """
        if entry.raw is not None and self._by_raw.get(id(entry.raw)) is entry:
            del self._by_raw[id(entry.raw)]
        entry.raw = raw
        self._by_raw[id(raw)] = entry

    @staticmethod
    def _expectation(raw: dict[str, Any], entry: Entry) -> Any:
        """What raw messages must equal to be this entry's (made once, on the first candidate)."""
        message = entry.message
        expect = message if raw == message else _reshaped(message, raw)
        if expect is not _UNSHAPED:
            found: dict[Path, list[tuple[Any, Any]]] = {}
            _probes(expect, (), found)
            entry.top = tuple(found.pop((), ()))
            entry.probes = tuple((path, tuple(leaves)) for path, leaves in found.items())
        entry.expect = expect
        return expect

    def decode_value(self, kind: str, raw: Any, decode: Callable[[Any], Any]) -> Any:
        """``decode(raw)`` for a small value (the tools list), keyed by its exact JSON text."""
        try:
            key = (kind, orjson.dumps(raw))
        except (TypeError, ValueError):  # not plain JSON: nothing to share
            return decode(raw)
        with self._lock:
            entry = self._lru.get(key)
            if entry is not None:
                self._lru.move_to_end(key)
                self.hits += 1
                return entry.message
            value = decode(raw)
            self.misses += 1
            self._insert(key, value, ENTRY_OVERHEAD_BYTES + len(key[1]))
            return value

    def _insert(self, key: Any, message: Any, cost: int | None = None) -> Entry | None:
        if cost is None:
            cost = _approx_bytes(message)
        entry = Entry(message, key)
        if not self._lru.put(key, entry, cost):
            return None
        self._by_id[id(message)] = entry
        return entry

    def _forget(self, entry: Entry) -> None:
        """Drop an entry that left the LRU (evicted or replaced) from the side indexes."""
        if self._by_id.get(id(entry.message)) is entry:
            del self._by_id[id(entry.message)]
        if entry.raw is not None and self._by_raw.get(id(entry.raw)) is entry:
            del self._by_raw[id(entry.raw)]

    # -- canonical dict -> derived values ---------------------------------------------------

    def entry_of(self, message: Any) -> Entry | None:
        """The entry holding this very dict (not an equal one), if any."""
        entry = self._by_id.get(id(message))
        return entry if entry is not None and entry.message is message else None

    def clear(self) -> None:
        with self._lock:
            self._lru.clear()
            self._by_id.clear()
            self._by_raw.clear()
            self._seen.clear()
            self.hits = 0
            self.misses = 0



SHARED_MEMO = MessageMemo()


_MISSING = object()


def remembered(memo: MessageMemo | None, message: Any, key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()``, remembered on the message's entry when ``memo`` holds this very dict.

    ``key`` must name everything besides the message that the value depends on (the estimator,
    a threshold...).
    """
    if memo is not None:
        entry = memo.entry_of(message)
        if entry is not None:
            derived = entry.derived
            value = derived.get(key, _MISSING)
            if value is _MISSING:
                value = derived[key] = compute()
            return value
    return compute()
