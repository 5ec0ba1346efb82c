"""Long-range future-entity recall of replayed sessions (``python -m bench.recall``).

For another replay (a peer strategy, say): build a :class:`SessionIndex` per recording, find the
pressure calls (:func:`pressure_calls`, or any other rule), and call :func:`recall_at_call` with
each pressure call's returned context; :class:`Recall` sums them. :class:`RecallObserver` does
all of it as an observer of the round trip, ``bench.kit.loop.round_trip``.
"""

# (``entities``, the function, stays in its module: re-exported it would hide the module here.)
from bench.kit.entities import context_text, full_text, mentions
from bench.kit.recall import (
    HORIZON,
    WINDOW,
    CallRecall,
    Recall,
    RecallObserver,
    SessionIndex,
    future_entities,
    long_range_needs,
    pressure_calls,
    recall_at_call,
)

__all__ = ["HORIZON", "WINDOW", "CallRecall", "Recall", "RecallObserver", "SessionIndex",
           "context_text", "full_text", "future_entities", "long_range_needs",
           "mentions", "pressure_calls", "recall_at_call"]
