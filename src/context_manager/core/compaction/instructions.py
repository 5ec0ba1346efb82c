"""``compaction_instructions``: standing instructions for every summariser prompt.

They go to every summary a compaction asks for, inline in ``context::assemble`` as well as in
``context::compact``, whose ``options.instructions`` follow them (both present: both in the
prompt, the standing ones first). The result is the caller guidance of ``prompts.
build_system_prompt``, trimmed and capped there like ``options.instructions`` alone. Without the
key (``null``) the prompts are unchanged.
"""

from __future__ import annotations

SEPARATOR = "\n\n"


def combined(standing: str | None, per_call: str | None) -> str | None:
    """The guidance of one summary: the standing instructions, then the call's."""
    if standing is None:
        return per_call
    if per_call is None:
        return standing
    return standing + SEPARATOR + per_call
