"""Pinned anchor messages: the leading model-facing messages no pass may touch.

``anchor_messages: N`` pins the first N messages of the model-facing view (the task statement of
an agent run). Every reducing pass works on what follows the anchor only, and the anchor is
returned first, verbatim. A function call inside the anchor keeps its results with it: the anchor
grows until every result answering one of its calls is inside, so a call is never separated from
its result at the anchor's edge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from context_manager.wire.messages import calls_answered, calls_made

Message = dict[str, Any]



def anchor_length(view: Sequence[Message], requested: int) -> int:
    """How many leading messages of ``view`` are pinned when ``requested`` are asked for.

    ``min(requested, len(view))``, extended past the last message that answers a call made
    inside the anchor (repeatedly, since an extension can bring further calls in).
    """
    end = min(requested, len(view))
    if end == 0:
        return 0
    # last_answer[i]: the last message answering a call made by view[i] (the latest call with an
    # id is the one an answer belongs to, as in selection and drop_oldest).
    last_answer: dict[int, int] = {}
    called_at: dict[str, int] = {}
    for index, message in enumerate(view):
        for call_id in calls_answered(message):
            origin = called_at.get(call_id)
            if origin is not None:
                last_answer[origin] = index
        for call_id in calls_made(message):
            called_at[call_id] = index
    scanned = 0
    while scanned < end:
        answer = last_answer.get(scanned)
        if answer is not None and answer >= end:
            end = answer + 1
        scanned += 1
    return end
