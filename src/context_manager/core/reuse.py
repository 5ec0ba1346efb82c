"""What one call may reuse, decided once per call and passed to every step that needs it.

Decoding, estimation, cap and prune can each reuse work: messages decoded (and measured) by an
earlier call, kept in the cross-call memo; and, for a payload parsed here, a parsed message
that already is its canonical form, used as it is. Whether they may is the call's
``CallReuse``, made by ``decoding_policy`` and handed on explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass

from context_manager.core.memo import MessageMemo


@dataclass(frozen=True, slots=True)
class CallReuse:
    """One call's reuse (see ``decoding_policy`` for when each member is set).

    ``memo``: the cross-call memo, or None (every message decoded and measured afresh).
    ``owned``: the payload was parsed here from JSON text and is handed to no one else.
    ``as_is``: id of a parsed message used as it is -> its heuristic estimate, filled while the
    call's history is decoded; None: every message is decoded into a new dict (or served by the
    memo).
    """

    memo: MessageMemo | None
    owned: bool
    as_is: dict[int, int] | None


# Reuse nothing: fresh dicts, fresh estimates.
NO_REUSE = CallReuse(memo=None, owned=False, as_is=None)


def decoding_policy(memo: MessageMemo | None, payload_from_json: bool, heuristic_counts: bool) -> CallReuse:
    """The reuse of one call: the decoding policy.

    * The memo is used as given: None for callers that keep the returned dicts (library calls),
      whose messages must never be shared with another call.
    * The payload is owned when it was parsed here from JSON text: only then may a memo entry
      remember the very parsed object it was found as (the object cannot change afterwards).
    * Parsed messages are used as they are only in an owned payload counted with the heuristic:
      a caller's objects may hold what JSON cannot (tuples, NaN, enums), and exact tokenizer
      counts gain nothing from the estimate that checking a message yields. The map is new for
      every call.
    """
    return CallReuse(memo, payload_from_json, {} if payload_from_json and heuristic_counts else None)
