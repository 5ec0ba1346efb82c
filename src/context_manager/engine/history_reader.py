"""Parse a request that resends a history this process has already parsed, without parsing the
history again.

An agent loop sends its whole history on every turn with a few messages appended. Parsing the
request is then most of what a warm call costs: the history's bytes were parsed last turn, and
the memo already holds everything derived from them. The reader remembers, for recent histories,
the exact bytes of the message array's elements and the values they parsed to. A request whose
message array starts with those bytes is parsed as its header and tail only: the remembered
values stand in for the known elements.

Why this gives the same values as a full parse:

* the header (everything before the array's first element) is tokenised here, so the splice
  point is known to be the start of the array at ``path``, outside any string;
* the remembered bytes are a sequence of complete JSON values (they were checked to be the
  compact serialization of the remembered values), and a complete value's text cannot be a
  prefix of a different value's text, so they tokenise as the same elements in any request;
* the rest of the request (after the known elements' trailing comma) is parsed by the same codec
  with a marker string in place of the known elements; the marker must come back as the first
  element of the array at ``path``, which proves that array is the one the document keeps (a
  later duplicate key would replace it) and that the tail is valid JSON in that position.

Anything unexpected (a header too long to tokenise, pretty-printed or differently escaped
history, a parse error) falls back to a plain parse, which also raises the exact error. The
remembered values are shared by every call that finds them, like the memo's entries: nothing
downstream mutates a parsed payload.

A history is remembered from its second sighting on (the first only notes its opening bytes),
so one-off requests keep nothing alive. Memory is bounded by the remembered bytes, least
recently used first out.
"""

from __future__ import annotations

import re
import threading
import uuid
from typing import Any

import orjson

from context_manager.wire.codec import loads
from context_manager.wire.errors import DecodeError
from context_manager.wire.lru import ByteLRU, BytesBounded, SeenKeys

DEFAULT_MAX_BYTES = 32 * 1024 * 1024
# A larger history is parsed in full every time: keeping it would crowd out every other.
MAX_HISTORY_BYTES = 16 * 1024 * 1024
# Below this a history parses in microseconds: not worth remembering.
MIN_BODY_BYTES = 16 * 1024
# How far into a request the message array may start (headers are a few hundred bytes).
MAX_HEADER_BYTES = 64 * 1024
MAX_HEADER_TOKENS = 256
FINGERPRINT_BYTES = 96
MAX_SEEN = 10_000
MAX_CANDIDATES = 8

# A string no request can guess: it stands in for the remembered elements.
_MARKER = f"context-manager splice {uuid.uuid4().hex}"
_MARKER_JSON = orjson.dumps(_MARKER)

_UNSEEN = object()
_REFUSED = object()

_WS = b" \t\n\r"
# One header token: a string (with its escapes), a structural character, or a bare scalar.
_TOKEN = re.compile(rb'[ \t\n\r]*(?:"((?:[^"\\]|\\.)*)"|([{}\[\],:])|([^ \t\n\r{}\[\],:"]+))', re.S)


class _History:
    __slots__ = ("body", "values", "fingerprint")

    def __init__(self, body: bytes, values: tuple[Any, ...]) -> None:
        self.body = body  # the elements' bytes, comma-separated, without the brackets
        self.values = values
        self.fingerprint = body[:FINGERPRINT_BYTES]


class _NotFound(Exception):
    pass


class _Tokens:
    """The header's tokens, at most MAX_HEADER_TOKENS of them within MAX_HEADER_BYTES: frames
    without a message array near their start (results, configuration) cost next to nothing."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.left = MAX_HEADER_TOKENS
        self.limit = min(len(data), MAX_HEADER_BYTES)

    def next(self) -> re.Match[bytes]:
        self.left -= 1
        token = _TOKEN.match(self.data, self.pos)
        if self.left < 0 or token is None or token.end() > self.limit:
            raise _NotFound
        self.pos = token.end()
        return token

    def expect(self, char: bytes) -> None:
        if self.next().group(2) != char:
            raise _NotFound

    def skip_value(self) -> None:
        """Past the value that starts here (containers are skipped by depth)."""
        depth = 0
        while True:
            char = self.next().group(2)
            if char is None:  # a string or a scalar
                if depth == 0:
                    return
            elif char in (b"{", b"["):
                depth += 1
            elif char in (b"}", b"]"):
                depth -= 1
                if depth <= 0:
                    if depth < 0:
                        raise _NotFound
                    return
            elif depth == 0:
                raise _NotFound


def array_start(data: bytes, path: tuple[str, ...]) -> int | None:
    """Offset just after the ``[`` of the array at ``path`` (object keys from the top), or None
    if the header before it is long or not plain JSON."""
    tokens = _Tokens(data)
    try:
        for wanted in path:
            tokens.expect(b"{")
            name = wanted.encode()
            while True:
                key = tokens.next().group(1)
                if key is None:
                    return None
                tokens.expect(b":")
                if key == name:
                    break
                tokens.skip_value()
                tokens.expect(b",")
        tokens.expect(b"[")
    except _NotFound:
        return None
    return tokens.pos


class HistoryReader(BytesBounded):
    """``loads`` for requests whose message array sits at ``path``, remembering histories."""

    def __init__(self, path: tuple[str, ...], max_bytes: int = DEFAULT_MAX_BYTES,
                 min_bytes: int = MIN_BODY_BYTES) -> None:
        self.path = path
        self.min_bytes = min_bytes
        # id(history) -> history; an evicted history leaves its fingerprint bucket too
        self._lru: ByteLRU[int, _History] = ByteLRU(
            max_bytes, max_entry_bytes=MAX_HISTORY_BYTES, on_evict=self._unlist)
        self._by_fingerprint: dict[bytes, list[_History]] = {}
        # hash of a first message's text -> None (seen once) or _REFUSED
        self._seen: SeenKeys[int, object] = SeenKeys(MAX_SEEN)
        self._lock = threading.Lock()
        self.spliced = 0

    def loads(self, data: bytes) -> Any:
        if type(data) is not bytes or len(data) < self.min_bytes:
            return loads(data)
        start = array_start(data, self.path)
        if start is None:
            return loads(data)
        fingerprint = data[start:start + FINGERPRINT_BYTES]
        with self._lock:
            candidates = list(self._by_fingerprint.get(fingerprint, ()))
        for history in candidates:
            if data.startswith(history.body, start):
                value = self._splice(data, start, history)
                if value is not None:
                    return value
        value = loads(data)
        self._note(data, start, value)
        return value

    # -- a history seen before ---------------------------------------------------------------

    def _splice(self, data: bytes, start: int, history: _History) -> Any:
        end = start + len(history.body)
        after = end
        while after < len(data) and data[after] in _WS:
            after += 1
        if after == len(data):
            return None
        if data[after] == 0x2C:  # ',': more elements follow
            document = b"".join((data[:start], _MARKER_JSON, data[after:]))
        elif data[after] == 0x5D:  # ']': the same history again
            document = b"".join((data[:start], _MARKER_JSON, data[end:]))
        else:
            return None
        try:
            value = loads(document)
        except DecodeError:
            return None  # the plain parse raises the exact error
        holder, array = _at(value, self.path)
        if array is None or not array or type(array[0]) is not str or array[0] != _MARKER:
            return None
        added = array[1:]
        holder[self.path[-1]] = [*history.values, *added]
        with self._lock:
            self.spliced += 1
            self._touch(history)
            if added:
                self._extend(data, start, after, history, added)
        return value

    def _extend(self, data: bytes, start: int, comma: int, history: _History, added: list[Any]) -> None:
        """Remember the longer history when the added elements are written compactly too."""
        try:
            text = orjson.dumps(added)
        except (TypeError, ValueError):
            return
        if data[comma + 1:comma + len(text) - 1] != text[1:-1]:
            return
        body = data[start:comma + len(text) - 1]
        self._forget(history)  # the loop moves on: the longer history replaces the shorter one
        self._remember(_History(body, history.values + tuple(added)))

    # -- a history not seen before -----------------------------------------------------------

    def _note(self, data: bytes, start: int, value: Any) -> None:
        """First sighting of a history's opening message: note it. Later sightings: remember the
        history when the request wrote it compactly (the remembered bytes must be its exact
        serialization, and a history's first message names its conversation)."""
        _, array = _at(value, self.path)
        if not array:
            return
        try:
            first = orjson.dumps(array[0])
        except (TypeError, ValueError):
            return
        key = hash(first)
        with self._lock:
            seen = self._seen.get(key, _UNSEEN)
            if seen is _UNSEEN:
                self._seen.note(key, None)
                return
        if seen is _REFUSED:
            return
        if not data.startswith(first, start):
            self._refuse(key)  # not compact JSON: the full serialization would not match
            return
        if len(data) - start > MAX_HISTORY_BYTES:
            self._refuse(key)
            return
        try:
            text = orjson.dumps(array)
        except (TypeError, ValueError):
            text = b""
        body = text[1:-1]
        if len(body) < self.min_bytes:
            return  # too small to be worth it yet: a later, longer sighting tries again
        if not data.startswith(body, start):
            self._refuse(key)
            return
        with self._lock:
            self._remember(_History(body, tuple(array)))

    def _refuse(self, key: int) -> None:
        """A history this reader cannot remember: later sightings skip the attempt."""
        with self._lock:
            self._seen[key] = _REFUSED

    # -- bookkeeping (under the lock) -------------------------------------------------------

    def _remember(self, history: _History) -> None:
        cost = len(history.body)
        if not self._lru.admits(cost):
            return
        bucket = self._by_fingerprint.setdefault(history.fingerprint, [])
        bucket.insert(0, history)
        # A full bucket drops its oldest history before the new one counts towards the budget.
        if len(bucket) > MAX_CANDIDATES:
            self._forget(bucket[-1])
        self._lru.put(id(history), history, cost)

    def _touch(self, history: _History) -> None:
        if id(history) in self._lru:
            self._lru.move_to_end(id(history))

    def _forget(self, history: _History) -> None:
        if self._lru.pop(id(history)) is not None:
            self._unlist(history)

    def _unlist(self, history: _History) -> None:
        """Take ``history`` out of its fingerprint bucket."""
        bucket = self._by_fingerprint.get(history.fingerprint)
        if bucket is not None:
            bucket[:] = [other for other in bucket if other is not history]
            if not bucket:
                del self._by_fingerprint[history.fingerprint]

    def clear(self) -> None:
        with self._lock:
            self._lru.clear()
            self._by_fingerprint.clear()
            self._seen.clear()



def _at(value: Any, path: tuple[str, ...]) -> tuple[Any, Any]:
    """(the object holding the last key of ``path``, the list there), or (None, None)."""
    holder = value
    for key in path[:-1]:
        if type(holder) is not dict:
            return None, None
        holder = holder.get(key)
    if type(holder) is not dict:
        return None, None
    array = holder.get(path[-1])
    return (holder, array) if type(array) is list else (None, None)


def frame_reader() -> HistoryReader:
    """Reads invocation frames, reusing the parse of a history an earlier call sent."""
    return HistoryReader(("data", "messages"))
