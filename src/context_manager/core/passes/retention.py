"""The retention pass: the configured ``retention`` policy applied to assemble's view.

It runs after media normalisation and before the cap, on the view without its pinned anchor.
Every decision depends on a message's age in turns and on the message itself, so consecutive
calls make the same cuts and applying the pass to its own output changes nothing.

Age: the number of turn starts after a message. Turns are those of the drop_oldest fallback: a
real user message starts one, and so does every assistant message after the newest real user
message (each round of the open request is a turn; in a window without user messages, every
round is). The newest turn is age 0.

* Tool payloads and prose older than ``verbatim_turns`` are cut by their ``Truncation``: a call's
  arguments and a result by the first rule whose glob matches the function id (else
  ``tools.default``), an error result by ``tools.errors`` when set; user text by
  ``text.prompt`` (never the newest real user message: the open request), assistant text by
  ``text.message``.
* Thinking blocks of assistant messages of age ``reasoning.keep_turns`` or more are removed,
  except in the newest assistant message, in a message whose calls are not all answered yet,
  and signed blocks of the model's own provider in the current tool round (the messages after
  the newest real user message, or the whole window without one).
* Images of age ``keep_turns`` (the first media rule matching the MIME type, else
  ``default_keep_turns``) or more become the image placeholders of media normalisation.

No message is removed or reordered, and a rewrite is kept only when it does not make its payload
longer. The warnings report what each kind of rule removed, in tokens of the estimator.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, NamedTuple

from context_manager.core.passes.media import TEXT_ONLY_MARKER, TOOL_IMAGE_MARKER, USER_IMAGE_MARKER
from context_manager.core.passes.truncate import (
    argument_marker,
    arguments_tokens,
    cut_arguments,
    cut_text,
    markers_for,
    result_marker,
    text_marker,
)
from context_manager.core.retention_policy import MediaPolicy, RetentionPolicy, ToolsPolicy, ToolTreatment, Truncation
from context_manager.ports import Estimator
from context_manager.wire import codec
from context_manager.wire.messages import (
    Block,
    Message,
    is_real_user_turn,
    resolve_inline_function_ids,
    text_block,
    with_content,
)

REASONING_PLACEHOLDER = "[reasoning omitted]"
# Text blocks that stand for an image: never merged into a cut, so a cut stays a fixed point.
_PLACEHOLDERS = frozenset((TEXT_ONLY_MARKER, TOOL_IMAGE_MARKER, USER_IMAGE_MARKER, REASONING_PLACEHOLDER))


def _is_prose(block: Block) -> bool:
    return block["type"] == "text" and block["text"] not in _PLACEHOLDERS


@dataclass(frozen=True, slots=True)
class RetentionResult:
    messages: list[Message]
    sizes: list[int]
    warnings: list[dict[str, Any]]
    # Every accepted rewrite in order, for ``options.explain``.
    changes: list[RetentionChange]


class RetentionChange(NamedTuple):
    """One accepted rewrite: the view index, the warning code it is charged to, the function
    (``truncated`` only) and the message's estimate before and after it."""

    view_index: int
    code: str
    function_id: str | None
    tokens_before: int
    tokens_after: int


def newest_user_index(view: list[Message]) -> int:
    """The index of the newest real user message, or -1 without one."""
    return next((i for i in range(len(view) - 1, -1, -1) if is_real_user_turn(view[i])), -1)


def turn_ages(view: list[Message]) -> list[int]:
    newest_user = newest_user_index(view)
    starts = [is_real_user_turn(m) or (m["role"] == "assistant" and i > newest_user) for i, m in enumerate(view)]
    ages = [0] * len(view)
    later = 0
    for index in range(len(view) - 1, -1, -1):
        ages[index] = later
        if starts[index]:
            later += 1
    return ages


class _Tally:
    """Tokens freed and counts per warning, accumulated as rewrites are accepted."""

    def __init__(self) -> None:
        self.truncated: dict[str | None, list[int]] = defaultdict(lambda: [0, 0])
        self.text: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.reasoning = [0, 0]
        self.media: dict[str, int] = defaultdict(int)
        self.changes: list[RetentionChange] = []

    def warnings(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for function_id in sorted(self.truncated, key=lambda f: (f is None, f or "")):
            count, freed = self.truncated[function_id]
            out.append({"code": "truncated", "function_id": function_id, "count": count, "tokens_freed": freed})
        for role in sorted(self.text):
            count, freed = self.text[role]
            out.append({"code": "text_truncated", "role": role, "count": count, "tokens_freed": freed})
        if self.reasoning[0]:
            out.append({"code": "reasoning_dropped", "count": self.reasoning[0], "tokens_freed": self.reasoning[1]})
        for mime in sorted(self.media):
            out.append({"code": "media_dropped", "mime": mime, "count": self.media[mime]})
        return out


class _Rewriter:
    """One message's rewrites; each accepted one is measured and charged to its warning."""

    def __init__(self, index: int, message: Message, size: int, estimator: Estimator, tally: _Tally) -> None:
        self.index = index
        self.message = message
        self.estimator = estimator
        self.tally = tally
        self.size = size

    def _accept(self, rewritten: Message, code: str, function_id: str | None = None) -> int:
        size = self.estimator.message(rewritten)
        freed = max(0, self.size - size)
        self.tally.changes.append(RetentionChange(self.index, code, function_id, self.size, size))
        self.message, self.size = rewritten, size
        return freed

    def truncated(self, rewritten: Message, function_id: str | None) -> None:
        entry = self.tally.truncated[function_id]
        entry[0] += 1
        entry[1] += self._accept(rewritten, "truncated", function_id)

    def text(self, rewritten: Message, role: str) -> None:
        entry = self.tally.text[role]
        entry[0] += 1
        entry[1] += self._accept(rewritten, "text_truncated")

    def reasoning(self, rewritten: Message, dropped: int) -> None:
        self.tally.reasoning[0] += dropped
        self.tally.reasoning[1] += self._accept(rewritten, "reasoning_dropped")

    def media(self, rewritten: Message, dropped: dict[str, int]) -> None:
        for mime, count in dropped.items():
            self.tally.media[mime] += count
        self._accept(rewritten, "media_dropped")


def apply_retention(view: list[Message], sizes: list[int], policy: RetentionPolicy, estimator: Estimator,
                    model_provider: str | None) -> RetentionResult:
    """Apply ``policy`` to ``view``; new lists, the input untouched; ``sizes`` kept exact."""
    ages = turn_ages(view)
    tally = _Tally()
    messages = list(view)
    new_sizes = list(sizes)
    inline_ids = resolve_inline_function_ids(view) if policy.tools is not None else {}
    protected_reasoning = _reasoning_protected(view, model_provider) if policy.reasoning is not None else None
    newest_user = newest_user_index(view)
    for index, message in enumerate(view):
        age = ages[index]
        rewriter = _Rewriter(index, message, sizes[index], estimator, tally)
        if age >= policy.verbatim_turns:
            if policy.tools is not None:
                _truncate_tools(rewriter, policy.tools, index, inline_ids)
            if policy.text is not None:
                rule = policy.text.prompt if message["role"] == "user" and index != newest_user else (
                    policy.text.message if message["role"] == "assistant" else None)
                if rule is not None:
                    _truncate_prose(rewriter, rule, message["role"])
        if policy.reasoning is not None and age >= policy.reasoning.keep_turns:
            assert protected_reasoning is not None
            _drop_reasoning(rewriter, protected_reasoning[index])
        if policy.media is not None:
            _drop_media(rewriter, policy.media, age)
        if rewriter.message is not message:
            messages[index] = rewriter.message
            new_sizes[index] = rewriter.size
    return RetentionResult(messages, new_sizes, tally.warnings(), tally.changes)


# --- tool payloads ---------------------------------------------------------------------------


def _treatment_for(tools: ToolsPolicy, function_id: str | None) -> ToolTreatment | None:
    if function_id is not None:
        for rule in tools.rules:
            if fnmatchcase(function_id, rule.function):
                return rule.treatment
    return tools.default


def _result_rule(tools: ToolsPolicy, function_id: str | None, is_error: bool) -> Truncation | None:
    if is_error and tools.errors is not None:
        return tools.errors
    treatment = _treatment_for(tools, function_id)
    return treatment.result if treatment is not None else None


def _cut_blocks(content: list[Block], rule: Truncation, estimator: Estimator,
                full_marker: Callable[[int, int], str], marked: bool) -> list[Block] | None:
    """``content`` with its text blocks cut to ``rule`` as one text, or None when it stays."""
    threshold = rule.threshold()
    texts = [block["text"] for block in content if _is_prose(block)]
    if threshold is None or not texts:
        return None
    text = "\n".join(texts)
    tokens = estimator.text(text)
    if tokens <= threshold:
        return None
    to = rule.to
    cut = cut_text(text, rule.keep, markers_for(full_marker(max(0, tokens - to), tokens), marked),
                   lambda candidate: estimator.text(candidate) <= to)
    if cut is None:
        return None
    # The cut text takes the place of the first prose block; the other blocks stay in order.
    rewritten: list[Block] = []
    placed = False
    for block in content:
        if not _is_prose(block):
            rewritten.append(block)
        elif not placed:
            rewritten.append(text_block(cut))
            placed = True
    if len(codec.dumps(rewritten)) >= len(codec.dumps(content)):
        return None
    return rewritten


def _truncate_tools(rewriter: _Rewriter, tools: ToolsPolicy, index: int,
                    inline_ids: dict[tuple[int, int], str]) -> None:
    message = rewriter.message
    estimator = rewriter.estimator
    marked = tools.mark_truncations
    if message["role"] == "function_result":
        function_id = message["function_id"]
        rule = _result_rule(tools, function_id, message["is_error"])
        if rule is not None:
            content = _cut_blocks(message["content"], rule, estimator,
                                  lambda elided, tokens: result_marker(elided, tokens, function_id), marked)
            if content is not None:
                rewriter.truncated(with_content(message, content), function_id)
        return
    for block_index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "function_call":
            treatment = _treatment_for(tools, block["function_id"])
            rule = treatment.arguments if treatment is not None else None
            arguments = _cut_call_arguments(block, rule, estimator, marked)
            if arguments is not None:
                rewriter.truncated(_with_block(rewriter.message, block_index, {**block, "arguments": arguments}),
                                   block["function_id"])
        elif kind == "function_result":
            function_id = inline_ids.get((index, block_index))
            rule = _result_rule(tools, function_id, block.get("is_error") is True)
            if rule is None:
                continue
            content = _cut_blocks(block["content"], rule, estimator,
                                  lambda elided, tokens: result_marker(elided, tokens, function_id), marked)
            if content is not None:
                rewriter.truncated(_with_block(rewriter.message, block_index, with_content(block, content)),
                                   function_id)


def _cut_call_arguments(block: Block, rule: Truncation | None, estimator: Estimator, marked: bool) -> Any | None:
    arguments = block["arguments"]
    threshold = rule.threshold() if rule is not None else None
    if threshold is None or arguments is None or arguments_tokens(arguments, estimator) <= threshold:
        return None
    assert rule is not None
    function_id = block["function_id"]
    cut = cut_arguments(arguments, rule.to, rule.keep, lambda elided: argument_marker(elided, function_id),
                        marked, estimator)
    if cut is None or len(codec.dumps(cut)) >= len(codec.dumps(arguments)):
        return None
    return cut


def _with_block(message: Message, block_index: int, block: Block) -> Message:
    content = list(message["content"])
    content[block_index] = block
    return with_content(message, content)


# --- prose ------------------------------------------------------------------------------------


def _truncate_prose(rewriter: _Rewriter, rule: Truncation, role: str) -> None:
    content = _cut_blocks(rewriter.message["content"], rule, rewriter.estimator, text_marker, True)
    if content is not None:
        rewriter.text(with_content(rewriter.message, content), role)


# --- reasoning --------------------------------------------------------------------------------


def _reasoning_protected(view: list[Message], model_provider: str | None) -> list[str]:
    """Per message: "all" (keep every thinking block), "signed" (keep signed ones) or ""."""
    protected = [""] * len(view)
    answered: set[str] = set()
    for message in view:
        if message["role"] == "function_result":
            answered.add(message["function_call_id"])
        for block in message["content"]:
            if block["type"] == "function_result":
                answered.add(block["function_call_id"])
    latest_assistant = next((i for i in range(len(view) - 1, -1, -1) if view[i]["role"] == "assistant"), None)
    newest_user = newest_user_index(view)
    for index, message in enumerate(view):
        if message["role"] != "assistant":
            continue
        calls = [b["id"] for b in message["content"] if b["type"] == "function_call"]
        if index == latest_assistant or any(call not in answered for call in calls):
            protected[index] = "all"
        elif index > newest_user and model_provider is not None and message.get("provider") == model_provider:
            protected[index] = "signed"
    return protected


def _drop_reasoning(rewriter: _Rewriter, protected: str) -> None:
    message = rewriter.message
    if message["role"] != "assistant" or protected == "all":
        return
    content = message["content"]
    kept = [b for b in content if b["type"] != "thinking" or (protected == "signed" and "signature" in b)]
    if len(kept) == len(content):
        return
    if not kept:
        # An assistant message may not be empty: a short placeholder, when it is shorter.
        kept = [text_block(REASONING_PLACEHOLDER)]
        if len(codec.dumps(kept)) >= len(codec.dumps(content)):
            return
    dropped = sum(1 for b in content if b["type"] == "thinking") - sum(1 for b in kept if b["type"] == "thinking")
    rewriter.reasoning(with_content(message, kept), dropped)


# --- media ------------------------------------------------------------------------------------


def _keep_turns(media: MediaPolicy, mime: str) -> int | None:
    for rule in media.rules:
        if fnmatchcase(mime, rule.mime):
            return rule.keep_turns
    return media.default_keep_turns


def _drop_media(rewriter: _Rewriter, media: MediaPolicy, age: int) -> None:
    message = rewriter.message
    dropped: dict[str, int] = defaultdict(int)
    direct = USER_IMAGE_MARKER if message["role"] == "user" else TOOL_IMAGE_MARKER
    content = _replace_images(message["content"], media, age, direct, dropped)
    if content is not None:
        rewriter.media(with_content(message, content), dropped)


def _replace_images(blocks: list[Block], media: MediaPolicy, age: int, marker: str,
                    dropped: dict[str, int]) -> list[Block] | None:
    changed = False
    out: list[Block] = []
    for block in blocks:
        kind = block["type"]
        if kind == "image":
            keep_turns = _keep_turns(media, block["mime"])
            if keep_turns is not None and age >= keep_turns:
                out.append(text_block(marker))
                dropped[block["mime"]] += 1
                changed = True
                continue
        elif kind == "function_result":
            inner = _replace_images(block["content"], media, age, TOOL_IMAGE_MARKER, dropped)
            if inner is not None:
                out.append(with_content(block, inner))
                changed = True
                continue
        out.append(block)
    return out if changed else None
