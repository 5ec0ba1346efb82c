"""The working state of one assemble call: what would be returned now, and its sizes.

Every pass changes a :class:`WorkingContext` through its methods only, which keep three things
true: ``sizes[i]`` is the estimate of ``view[i]``, ``view_to_orig[i]`` is that message's request
index, and the cached resolution of inline function ids is dropped whenever positions move. So
``total()`` always equals a from-scratch count of what would be returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from context_manager.core.compaction.prompts import render_system_prompt, summary_message
from context_manager.core.explain import Explanation
from context_manager.ports import Estimator
from context_manager.wire.ints import saturating_add
from context_manager.wire.messages import Message, resolve_inline_function_ids


@dataclass(slots=True)
class WorkingContext:
    """The context of one call; ``total`` is the size of what would be returned now."""

    view: list[Message]
    sizes: list[int]
    view_to_orig: list[int]
    system_prompt: str
    prompt_tokens: int
    tools_tokens: int
    overhead_tokens: int
    # The pinned anchor ahead of ``view``: never changed, always returned first.
    anchor: list[Message] = field(default_factory=list)
    anchor_sizes: list[int] = field(default_factory=list)
    # ``summary_placement: message``: the summary as a message between the anchor and ``view``.
    summary_message: Message | None = None
    summary_size: int = 0
    anchor_to_orig: list[int] = field(default_factory=list)
    # The anchor's first ``restored`` messages came from the previous summary's anchor section
    # (``core.carried_anchor``), not from the request: no request index holds them.
    restored: int = 0
    # The model-facing messages as the request gave them (before any pass), for the ledger.
    original: list[Message] = field(default_factory=list)
    # resolve_inline_function_ids(view): cap and prune rewrite outputs, never calls or the
    # positions of inline results, so one resolution serves both passes.
    _function_ids: dict[tuple[int, int], str] | None = None
    # id(m) -> (m, result tokens) of message-level results measured by cap, reused by prune.
    result_tokens: dict[int, tuple[Message, int]] = field(default_factory=dict)
    # ``options.explain``: the changes made, else None (nothing gathered).
    explanation: Explanation | None = None

    def function_ids(self) -> dict[tuple[int, int], str]:
        if self._function_ids is None:
            self._function_ids = resolve_inline_function_ids(self.view)
        return self._function_ids

    def total(self) -> int:
        # Sums are unsigned 64-bit and saturate, as in the original.
        return saturating_add(sum(self.sizes), self.fixed_tokens())

    def fixed_tokens(self) -> int:
        """What no pass reduces: the anchor, the summary message, the system prompt, the tools
        and the overhead."""
        return saturating_add(sum(self.anchor_sizes), self.summary_size, self.prompt_tokens,
                              self.tools_tokens, self.overhead_tokens)

    def lead(self) -> list[Message]:
        """What precedes ``view`` in the answer: the anchor, then the summary message."""
        if self.summary_message is None:
            return self.anchor
        return [*self.anchor, self.summary_message]

    def lead_sizes(self) -> list[int]:
        if self.summary_message is None:
            return self.anchor_sizes
        return [*self.anchor_sizes, self.summary_size]

    def messages(self) -> list[Message]:
        lead = self.lead()
        return lead + self.view if lead else self.view

    # The changes a pass makes.

    def rewrite(self, messages: list[Message], sizes: list[int]) -> None:
        """Messages rewritten in place (same positions, same request indices)."""
        self.view, self.sizes = messages, sizes

    def drop(self, messages: list[Message], sizes: list[int], view_to_orig: list[int]) -> None:
        """Messages removed (or replaced by a note): positions move."""
        self.view, self.sizes, self.view_to_orig = messages, sizes, view_to_orig
        self._function_ids = None

    def summarize_head(self, head_len: int, summary: str, base_system_prompt: str | None,
                       placement: str, estimator: Estimator) -> None:
        """The first ``head_len`` messages of the view replaced by ``summary``: a section of the
        system prompt, or (``summary_placement: message``) a message after the anchor."""
        if placement == "message":
            # The system prompt stays as the request renders it without a summary.
            following = self.view[head_len] if head_len < len(self.view) else None
            self.summary_message = summary_message(summary, following)
            self.summary_size = estimator.message(self.summary_message)
        else:
            self.system_prompt = render_system_prompt(base_system_prompt, summary)
            self.prompt_tokens = estimator.text(self.system_prompt)
        self.view = self.view[head_len:]
        self._function_ids = None
        self.sizes = self.sizes[head_len:]
        self.view_to_orig = self.view_to_orig[head_len:]

    def unchanged(self, base_system_prompt: str | None, previous_summary: str | None) -> bool:
        """Whether the context returned is the model-facing request as given."""
        returned = self.messages()
        return (
            len(returned) == len(self.original)
            and all(a is b for a, b in zip(returned, self.original))
            and self.system_prompt == render_system_prompt(base_system_prompt, previous_summary)
        )
