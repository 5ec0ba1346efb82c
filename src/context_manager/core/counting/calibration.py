"""Counts anchored on the provider's own prompt count (``count_calibration: usage``).

Every assistant message a harness appends carries the ``usage`` of the call that produced it:
``input + cache_read + cache_write`` is the provider's count of that call's prompt. The latest
such message is the anchor. With ``P`` the provider's count and ``E`` our estimate of the prompt
that was actually sent for the anchored call, an estimate ``x`` of the current request counts
``P + (x - E) * g`` (rounded up): the anchor total plus what differs from the anchored prompt at
the session's growth ratio ``g``. ``g`` is what the provider counted for the growth between the
anchor and an earlier anchor over our estimate of that growth (so a fixed part the provider adds
to every request, such as hidden framing or tools sent as text, is not scaled), never below
``min(P / E, 1)``; with a single anchor it is the observed ratio ``P / E``, except that with a
tokenizer (``estimator: auto`` on a known vocabulary), an anchor whose prompt is the request's own
prefix counts growth at ``min(P / E, 1)``: its ratio above 1 is mostly the provider's fixed part,
and a tokenizer's count of new content is already about one provider token each (``lone_anchor``).
When nothing before the anchor changed, the count is ``P`` plus the estimate of what was added
since, scaled.

What was sent for the anchored call:

* this worker reduced it (pruned, capped, compacted, dropped): the estimate it returned then,
  remembered per input in a bounded ``SentLedger`` keyed by a digest of that call's input;
* otherwise (no record): the request's own prefix, i.e. the system prompt, the tools and the
  model-facing messages before the anchor, as they are now; but only when that prefix could
  have been sent as it is: a prefix whose estimate is over the usable budget (``unrecorded_limit``)
  was reduced by some process (another worker process, or a record this one has forgotten), what
  was sent is unknown, and its ratio would be that of a smaller prompt, an under-count. Such an
  anchor is not used.

Plausibility. An anchor is used only when its prompt plausibly is this request's prefix; a
session that began before this worker ran (or a ``context-manager call`` process) has no record
of what was sent, and after a compaction a caller that sends only the tail carries ``usage`` that
counted the whole earlier history. When in doubt the call counts uncalibrated:

* the estimator's band: ``P / E`` within ``HEURISTIC_BAND`` or ``TOKENIZER_BAND`` (the measured
  extremes widened, see the constants); an anchor outside it is skipped for the next earlier one
  (up to ``MAX_ANCHORS_TRIED``), and so is one whose calibrated count would fall below the
  estimate of the content added after it;
* counts only grow: an anchor that counted more than a newer one (used or not) predates a
  reduction of the history, and so does every earlier one: the search stops;
* agreement: an earlier anchor whose ratio differs from the chosen one's by more than
  ``AGREEMENT`` means one of the two did not count this request's prefix: no anchor;
* a previous summary (``summarized_limit``): every prompt sent since the compaction was fitted
  to the usable budget, so an anchor that counted more held the history the summary replaced and
  is skipped (count-tokens, with no budget, passes its whole estimate when the context holds a
  summary section).

A growth ratio outside the band is not used (the observed ratio is). A count below the anchored
prompt's estimate (a context reduced below it) is never below that estimate at the smaller of
the two ratios. A ``usage`` with negative or non-integer members never decodes (the usual
decoding error); one with absurd totals fails the band. Overhead (``request_overhead_tokens``) is
the caller's own allowance and is never scaled. What assemble guarantees on top (a calibration
never turns a fitting call into an overflow, nor shrinks the summariser's budget) lives in
``core.assemble``.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from threading import Lock
from typing import Any, Protocol

import orjson

from context_manager.core.memo import MessageMemo, remembered
from context_manager.wire.lru import ByteLRU

# The band of plausible ratios P / E (the provider's count over our estimate of the same prompt)
# per estimator: the extremes measured on the recorded sessions (``python -m bench.accuracy
# --realdata ../shared/realdata --realdata-only``, columns "P/E min" and "P/E max"), each widened
# 1.5 times and rounded outward to 0.05. Heuristic: 0.769-1.275 over 427 prompts (DeepSeek
# 0.769-1.162, Llama 0.980-1.275) -> [0.5, 1.95]; o200k_base: 1.069-1.498 -> [0.7, 2.25].
HEURISTIC_BAND = (0.5, 1.95)
TOKENIZER_BAND = (0.7, 2.25)
# Two anchors of one history whose ratios differ by more than this factor cannot both count this
# request's prefixes (measured: within 1.27 over any 9 successive anchors of a session, within
# 1.51 over a whole session).
AGREEMENT = 2.0
# Anchors looked at, newest first, before giving up on a request (each costs one comparison).
MAX_ANCHORS_TRIED = 8
# The least growth (estimator units) between two anchors for their slope to be the growth ratio.
MIN_GROWTH_SPAN = 1024


def provider_prompt_tokens(message: dict[str, Any]) -> int:
    """The provider's prompt count recorded on an assistant message, 0 when it carries none."""
    if message.get("role") != "assistant":
        return 0
    usage = message.get("usage")
    if type(usage) is not dict:
        return 0
    total = 0
    for name in ("input", "cache_read", "cache_write"):
        value = usage.get(name)
        if type(value) is int and value > 0:
            total += value
    return total


@dataclass(frozen=True, slots=True)
class Calibration:
    """The anchor in force for one call and the growth ratio of its session.

    An estimate ``x`` (estimator units) counts ``P + (x - E) * growth`` provider tokens, rounded
    up: exactly ``P`` for the anchored prompt, and what differs from it at the session's growth
    ratio. ``growth`` is ``growth_tokens / growth_estimate``: the provider's count of what was
    added between the anchor and the nearest earlier anchor at least ``MIN_GROWTH_SPAN`` smaller,
    over our estimate of it, which leaves out what the provider adds once per request (hidden
    framing, tool text); never below ``min(P / E, 1)``; without such a pair it is the observed
    ratio ``P / E``.
    """

    anchor_index: int
    provider_tokens: int
    estimated_tokens: int
    growth_tokens: int = 0
    growth_estimate: int = 0

    @property
    def ratio(self) -> float:
        return self.provider_tokens / self.estimated_tokens

    def _growth(self) -> tuple[int, int]:
        if self.growth_estimate > 0:
            return self.growth_tokens, self.growth_estimate
        return self.provider_tokens, self.estimated_tokens

    @property
    def growth_ratio(self) -> float:
        num, den = self._growth()
        return num / den

    def scale(self, tokens: int) -> int:
        """Estimator units to provider units, rounded up (a count never rounds down).

        Growth past the anchored prompt is counted at the growth ratio. Below it (a context
        reduced under the anchored prompt) the count is never less than the estimate at the
        smaller of the growth and observed ratios: a growth ratio above the observed one would
        otherwise take a reduced context towards zero.
        """
        num, den = self._growth()
        affine = self.provider_tokens + -(-(tokens - self.estimated_tokens) * num // den)
        if tokens >= self.estimated_tokens:
            return affine
        if num * self.estimated_tokens <= self.provider_tokens * den:  # growth ratio <= observed
            return max(0, affine)
        return max(affine, -(-max(0, tokens) * self.provider_tokens // self.estimated_tokens))

    def amount(self, tokens: int) -> int:
        """A part or a difference (freed, capped, one text) at the growth ratio, rounded up."""
        num, den = self._growth()
        return -(-tokens * num // den)

    def estimate_of_amount(self, tokens: int) -> int:
        """The largest estimate whose ``amount`` is at most ``tokens`` (a threshold's estimate)."""
        num, den = self._growth()
        return max(0, tokens) * den // num

    def unscale(self, tokens: int) -> int:
        """The largest estimate whose calibrated count (:meth:`scale`) is at most ``tokens``."""
        num, den = self._growth()
        if tokens <= 0:
            return 0
        estimate = max(0, self.estimated_tokens + (tokens - self.provider_tokens) * den // num)
        if estimate < self.estimated_tokens and num * self.estimated_tokens > self.provider_tokens * den:
            # Below the anchored prompt the count is also at least the estimate at P / E.
            estimate = min(estimate, tokens * self.estimated_tokens // self.provider_tokens)
        return estimate

    def apportion(self, parts: Sequence[int]) -> list[int]:
        """Calibrated parts that sum exactly to ``scale(sum(parts))``: each part's share of the
        total, rounded by largest remainders (never negative)."""
        return largest_remainder(parts, self.scale(sum(parts)))

    def apportion_amount(self, parts: Sequence[int]) -> list[int]:
        """Calibrated differences that sum exactly to ``amount(sum(parts))`` (the calibrated
        total they make up), by the same largest remainders."""
        return largest_remainder(parts, self.amount(sum(parts)))

    def report(self) -> dict[str, Any]:
        return {"anchor_index": self.anchor_index, "provider_tokens": self.provider_tokens,
                "ratio": round(self.ratio, 4), "growth_ratio": round(self.growth_ratio, 4)}


def largest_remainder(parts: Sequence[int], target: int) -> list[int]:
    """``target`` shared in proportion to ``parts``, rounded by largest remainders: the shares
    sum to ``target`` exactly (all of it on the first part when the parts sum to nothing)."""
    whole = sum(parts)
    if whole <= 0:
        return [target] + [0] * (len(parts) - 1) if parts else []
    floors = [part * target // whole for part in parts]
    missing = target - sum(floors)
    order = sorted(range(len(parts)), key=lambda i: (-(parts[i] * target % whole), i))
    for i in order[:missing]:
        floors[i] += 1
    return floors


def _plausible(provider: int, estimated: int, band: tuple[float, float]) -> bool:
    return estimated > 0 and provider > 0 and band[0] <= provider / estimated <= band[1]


def _agree(a: Calibration, provider: int, estimated: int) -> bool:
    """Whether an earlier anchor's ratio is within ``AGREEMENT`` of the chosen anchor's."""
    if estimated <= 0 or provider <= 0:
        return False
    # Cross-multiplied: r_a / r_b <= AGREEMENT and r_b / r_a <= AGREEMENT.
    left, right = a.provider_tokens * estimated, provider * a.estimated_tokens
    return left <= AGREEMENT * right and right <= AGREEMENT * left


def choose_calibration(
    messages: Sequence[dict[str, Any]],
    view_to_orig: Sequence[int],
    sizes: Sequence[int],
    fixed_tokens: int,
    recalled: Recall | None = None,
    exact: bool = False,
    unrecorded_limit: int | None = None,
    summarized_limit: int | None = None,
) -> Calibration | None:
    """The anchor for a request, or None.

    ``messages`` are the request's messages (request indices); ``view_to_orig[i]`` is the request
    index of model-facing message ``i`` and ``sizes[i]`` its estimate; ``fixed_tokens`` is the
    estimate of the system prompt and tools. ``recalled(index, estimate)`` gives what this worker
    returned for the call whose input was ``messages[:index]`` (estimated at ``estimate``) when it
    reduced that call, else None. ``exact`` says the estimator is a tokenizer: a lone anchor
    whose prompt is the request's own prefix then counts growth at ``min(P / E, 1)``
    (``lone_anchor``). An anchor without a record whose prefix is estimated above
    ``unrecorded_limit`` (None: no limit) is skipped: that prompt was not sent as it is. With a
    previous summary, ``summarized_limit`` is the budget every prompt since the compaction was
    fitted to: an anchor that counted more predates the summary and is skipped.
    """
    total = fixed_tokens + sum(sizes)
    band = TOKENIZER_BAND if exact else HEURISTIC_BAND
    latest: Calibration | None = None
    latest_prefix = 0
    tried = 0
    # The least provider count among the newer anchors looked at (any of them).
    newer_provider = 0
    # Anchors come newest first, so a prefix's estimate is the total less a suffix that only
    # grows: summed once over the messages after the oldest anchor tried, not over the history.
    suffix_start, suffix = len(sizes), 0
    for index in _usage_indices(messages):
        provider = provider_prompt_tokens(messages[index])
        if not provider:
            continue
        tried += 1
        if tried > MAX_ANCHORS_TRIED:
            break
        if newer_provider and provider > newer_provider:
            # Counts along one history only grow: a later prompt counted less, so the history
            # was reduced (compacted, dropped) after this anchor, which counted a longer prompt
            # than its prefix here; so did every earlier one.
            break
        newer_provider = provider if not newer_provider else min(newer_provider, provider)
        if summarized_limit is not None and provider > summarized_limit:
            continue
        start = bisect_left(view_to_orig, index)
        suffix += sum(sizes[start:suffix_start])
        suffix_start = start
        prefix = total - suffix
        sent = recalled(index, prefix) if recalled is not None else None
        if sent is None and unrecorded_limit is not None and prefix > unrecorded_limit:
            continue
        estimated = sent if sent is not None else prefix
        if latest is None:
            candidate = lone_anchor(index, provider, estimated, exact and sent is None)
            if _plausible(provider, estimated, band) and _not_below_added(candidate, total, prefix):
                latest, latest_prefix, tried = candidate, prefix, 0
            continue
        if not _agree(latest, provider, estimated):
            # Two anchors of this history that disagree this much: one of them counted a prompt
            # that is not this request's prefix, and which one is unknown.
            return None
        # An earlier anchor: what the provider counted for the growth between the two.
        span_estimate = latest.estimated_tokens - estimated
        if span_estimate < MIN_GROWTH_SPAN:
            continue
        span_tokens = latest.provider_tokens - provider
        # Growth is never counted below the observed ratio or 1, whichever is smaller: a slope
        # under both is measurement noise from a change of content, and under-counts.
        floor = min(latest.provider_tokens, latest.estimated_tokens)
        if span_tokens * latest.estimated_tokens < span_estimate * floor:
            span_tokens, span_estimate = floor, latest.estimated_tokens
        if _plausible(span_tokens, span_estimate, band):
            calibration = Calibration(latest.anchor_index, latest.provider_tokens,
                                      latest.estimated_tokens, span_tokens, span_estimate)
            if _not_below_added(calibration, total, latest_prefix):
                return calibration
        break
    return latest


def lone_anchor(index: int, provider: int, estimated: int, capped: bool) -> Calibration:
    """An anchor before a growth ratio is measured: growth at the observed ratio ``P / E``,
    or at ``min(P / E, 1)`` when ``capped``.

    ``P / E`` holds what the provider adds once per request (framing of the system prompt and
    tools) as well as its ratio for content. A heuristic's ratio for content is far from 1, so
    ``P / E`` is mostly that ratio and scales growth. A tokenizer's estimate of new content is
    already a token count of a related vocabulary, so a ratio above 1 is largely the fixed part
    and over-counts what is added (the OpenHands sessions: 1.44-1.50 observed, about 1.0 for
    the content added). Capped at 1, the least growth ratio a pair of anchors is ever given, a
    count never falls below the floor of the guard rails: ``P + (x - E)``, at least ``x``.

    The cap is for an anchored prompt that is the request's own prefix, where growth is what
    was added since. When this worker reduced the anchored call, growth from what it sent is
    mostly the history it left out and fits again; counting that at 1 would plan reductions
    short by the vocabulary's gap (a provider counting 1.2 o200k tokens per token overflowed
    its window in the replay), so it keeps ``P / E``.
    """
    if capped and provider > estimated:
        return Calibration(index, provider, estimated, estimated, estimated)
    return Calibration(index, provider, estimated)


def _usage_indices(messages: Sequence[dict[str, Any]]) -> Iterator[int]:
    """Indices of the messages that carry a ``usage``, newest first."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("usage") is not None:
            yield index


def _not_below_added(calibration: Calibration, total: int, prefix: int) -> bool:
    # Never below the estimate of the content added after the anchor.
    return calibration.scale(total) >= total - prefix


class Ledger(Protocol):
    """What a call uses of a ``SentLedger``: ``SentLedger`` itself, or the read-only view of a
    call that sends nothing (``core.preview``)."""

    def __len__(self) -> int: ...

    def holds_shape(self, shape: bytes) -> bool: ...

    def recall(self, digest: bytes) -> int | None: ...

    def remember(self, digest: bytes, estimate: int) -> None: ...


class Recall:
    """``recalled(index, estimate)`` of ``choose_calibration`` over one request and a ledger."""

    __slots__ = ("_digests", "_ledger")

    def __init__(self, ledger: Ledger, digests: InputDigests) -> None:
        self._ledger = ledger
        self._digests = digests

    def __call__(self, index: int, estimate: int) -> int | None:
        ledger = self._ledger
        # Most anchors were never reduced: their shape alone rules them out, with nothing hashed.
        if not ledger or not ledger.holds_shape(input_shape(index, estimate)):
            return None
        return ledger.recall(self._digests.prefix(index, estimate))


def input_shape(count: int, estimate: int) -> bytes:
    """The first 16 bytes of every input key: the number of messages and their estimate."""
    return count.to_bytes(8, "little") + max(0, estimate).to_bytes(8, "little")


def _value_digest(value: Any) -> bytes:
    # Key order is not content: parsed and decoded copies hash alike.
    return hashlib.blake2b(orjson.dumps(value, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()



class InputDigests:
    """Keys of a request's input and of its prefixes for the ``SentLedger``.

    A key covers the model, system prompt and tools (the header), the number of messages, their
    total estimate and the digests of the last ``TAIL_MESSAGES`` of them: what identifies one
    history in practice at a cost independent of its length (each message digest is remembered
    on the call's memo entry, so a warm agent loop hashes only new messages).
    """

    __slots__ = ("_head", "_header", "_memo", "_messages")

    TAIL_MESSAGES = 8

    def __init__(self, header: Sequence[Any], messages: Sequence[dict[str, Any]],
                 memo: MessageMemo | None = None) -> None:
        self._header = header
        self._head: Any = None  # hashed on first use: most calls never need a key
        self._messages = messages
        self._memo = memo

    def _header_hash(self) -> Any:
        if self._head is None:
            head = hashlib.blake2b(digest_size=16)
            for value in self._header:
                # A tools list the memo holds is hashed once.
                part = remembered(self._memo, value, _DIGEST_KEY, lambda: _value_digest(value)) \
                    if type(value) is list else _value_digest(value)
                head.update(part)
            self._head = head
        return self._head

    def prefix(self, count: int, estimate: int) -> bytes:
        """The key of ``messages[:count]`` whose estimate (with the header) is ``estimate``: its
        shape (``input_shape``), then the digest of the header, the shape and the tail."""
        memo = self._memo
        shape = input_shape(count, estimate)
        h = self._header_hash().copy()
        h.update(shape)
        for message in self._messages[max(0, count - self.TAIL_MESSAGES):count]:
            h.update(remembered(memo, message, _DIGEST_KEY, lambda: _value_digest(message)))
        return shape + h.digest()

    def whole(self, estimate: int) -> bytes:
        return self.prefix(len(self._messages), estimate)


_DIGEST_KEY = "calibration-digest"


class SentLedger:
    """What this worker returned for the inputs it reduced: input digest -> estimate sent.

    Bounded (least recently used out, ``capacity`` records: each costs 1 in its ``ByteLRU``);
    shared by the calls of one process. Values are plain integers, so nothing a caller holds is
    shared. The shapes of the keys held (their first 16 bytes, ``input_shape``) are counted, so a
    lookup that cannot hit is answered unhashed; a record keeps its digest beside the estimate so
    that its shape can be uncounted when it leaves.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._entries: ByteLRU[bytes, tuple[bytes, int]] = ByteLRU(capacity, on_evict=self._left)
        self._shapes: dict[bytes, int] = {}
        self._lock = Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def holds_shape(self, shape: bytes) -> bool:
        """Whether some key held starts with ``shape`` (a 16-byte ``input_shape``)."""
        return shape in self._shapes

    def remember(self, digest: bytes, estimate: int) -> None:
        with self._lock:
            # A record replaced or evicted by this put leaves through ``_left`` first.
            self._entries.put(digest, (digest, estimate), 1)
            shape = digest[:16]
            self._shapes[shape] = self._shapes.get(shape, 0) + 1

    def forget(self, digest: bytes) -> None:
        with self._lock:
            if self._entries.pop(digest) is not None:
                self._dropped(digest)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._shapes.clear()

    def _left(self, record: tuple[bytes, int]) -> None:
        self._dropped(record[0])

    def _dropped(self, digest: bytes) -> None:
        shape = digest[:16]
        left = self._shapes[shape] - 1
        if left:
            self._shapes[shape] = left
        else:
            del self._shapes[shape]

    def recall(self, digest: bytes) -> int | None:
        with self._lock:
            record = self._entries.get(digest)
            if record is None:
                return None
            self._entries.move_to_end(digest)
            return record[1]

    def peek(self, digest: bytes) -> int | None:
        """``recall`` without marking the record as recently used."""
        with self._lock:
            record = self._entries.get(digest)
            return None if record is None else record[1]


SHARED_LEDGER = SentLedger()
