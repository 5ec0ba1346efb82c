"""A summary built from the head itself, for when no summariser answers (``summarizer_fallback``).

The summary is Markdown under the section headings the summariser prompt asks for
(``prompts.SUMMARY_TEMPLATE``), filled without any model:

* ``## Goal``: the first user message's text (first 300 characters);
* ``## Constraints & Preferences``: every later user message's text, the same way;
* ``### In Progress``: the last assistant text (first 300 characters);
* ``### Blocked``: the open error (``retention_check.open_error``) as ``function_id: first line``;
* ``## Actions Taken``: each function call as ``function_id(short arguments)``, then ``->`` and
  the first line of its result, ``failed:`` before it when the result is an error;
* ``## Relevant Files``: the paths and URLs seen in user text and call arguments;
* every other section ``(none)``.

With a previous summary the new one updates it: its bullets are read back per section (an
unknown heading, such as the retention appendix, reads into ``Critical Context``); the goal stays
and the head's first request joins the constraints; ``In Progress`` and ``Blocked`` take the new
value when the head has one; the other sections keep their bullets and add the new ones, each
text once except actions (a repeated action is information). The result fits ``budget`` tokens:
the oldest bullets go first, actions before user messages before the rest, the goal last.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from context_manager.core.compaction.prompts import trim
from context_manager.core.compaction.retention_check import (
    USER_TEXT_CHARS,
    argument_strings,
    bullet,
    first_line,
    normalize,
    open_error,
    paths_in,
    user_text,
)
from context_manager.core.counting.estimate import Estimator
from context_manager.wire.codec import canonical_free_form, dumps
from context_manager.wire.messages import text_of

Message = dict[str, Any]

GOAL = "## Goal"
CONSTRAINTS = "## Constraints & Preferences"
PROGRESS = "## Progress"
DONE = "### Done"
IN_PROGRESS = "### In Progress"
BLOCKED = "### Blocked"
DECISIONS = "## Key Decisions"
ACTIONS = "## Actions Taken"
NEXT_STEPS = "## Next Steps"
CRITICAL = "## Critical Context"
FILES = "## Relevant Files"

# Template order; PROGRESS only groups its three subsections and holds no bullets itself.
SECTIONS = (GOAL, CONSTRAINTS, PROGRESS, DONE, IN_PROGRESS, BLOCKED, DECISIONS, ACTIONS,
            NEXT_STEPS, CRITICAL, FILES)
BULLET_SECTIONS = tuple(s for s in SECTIONS if s != PROGRESS)
# Which section loses its oldest bullet first when the summary is over budget.
DROP_ORDER = (ACTIONS, CONSTRAINTS, CRITICAL, DONE, DECISIONS, NEXT_STEPS, FILES, IN_PROGRESS,
              BLOCKED, GOAL)
NONE_BULLET = "(none)"
ARGUMENT_CHARS = 100
RESULT_CHARS = 120
ELLIPSIS = "…"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def short_arguments(arguments: Any) -> str:
    """``key=value, ...`` of an object (values as compact JSON), else its JSON; cut to 100 chars."""
    if isinstance(arguments, dict):
        # Sorted as a free-form object always is: the engine's history reader may hand over the
        # keys in the order they were sent, the decoder in sorted order; the summary is the same.
        text = ", ".join(
            f"{key}={dumps(canonical_free_form(arguments[key])).decode('utf-8')}"
            for key in sorted(arguments)
        )
    elif arguments is None:
        text = ""
    else:
        text = dumps(canonical_free_form(arguments)).decode("utf-8")
    return _cut(text, ARGUMENT_CHARS)


def _result_lines(head: Sequence[Message]) -> dict[str, tuple[str, bool]]:
    """call id -> (first line of its latest result, is_error)."""
    answers: dict[str, tuple[str, bool]] = {}
    for message in head:
        role = message["role"]
        if role == "function_result":
            answers[message["function_call_id"]] = (
                first_line(message["content"], RESULT_CHARS), bool(message["is_error"]))
        elif role in ("user", "assistant"):
            for block in message["content"]:
                if block["type"] == "function_result":
                    answers[block["function_call_id"]] = (
                        first_line(block["content"], RESULT_CHARS), bool(block.get("is_error")))
    return answers


def head_sections(head: Sequence[Message]) -> dict[str, list[str]]:
    """The bullets this head contributes, per section (empty lists where it has nothing)."""
    sections: dict[str, list[str]] = {name: [] for name in BULLET_SECTIONS}
    answers = _result_lines(head)
    users: list[str] = []
    paths: list[str] = []
    last_assistant = ""
    for message in head:
        role = message["role"]
        if role == "user":
            text = user_text(message)
            if text:
                users.append(text)
            paths.extend(paths_in(text_of(message["content"])))
        if role == "assistant":
            text = trim(text_of(message["content"]))
            if text:
                last_assistant = text[:USER_TEXT_CHARS]
        if role not in ("user", "assistant"):
            continue
        for block in message["content"]:
            if block["type"] != "function_call":
                continue
            for text in argument_strings(block["arguments"]):
                paths.extend(paths_in(text))
            action = f"{block['function_id']}({short_arguments(block['arguments'])})"
            answer = answers.get(block["id"])
            if answer is not None and answer[0]:
                line, failed = answer
                action += f" -> failed: {line}" if failed else f" -> {line}"
            sections[ACTIONS].append(action)
    if users:
        sections[GOAL].append(users[0])
        sections[CONSTRAINTS].extend(users[1:])
    if last_assistant:
        sections[IN_PROGRESS].append(last_assistant)
    error = open_error(head)
    if error is not None:
        _index, function_id, line = error
        sections[BLOCKED].append(f"{function_id}: {line}" if function_id else line)
    sections[FILES].extend(paths)
    return sections


def parse_sections(summary: str) -> dict[str, list[str]]:
    """A summary's bullets per known section; text elsewhere reads into ``Critical Context``."""
    sections: dict[str, list[str]] = {name: [] for name in BULLET_SECTIONS}
    current: str | None = None
    last: list[str] | None = None  # the list whose last bullet a continuation line extends
    for line in summary.splitlines():
        if line in SECTIONS:
            current = None if line == PROGRESS else line
            last = None
            continue
        if line.startswith("#"):
            current, last = CRITICAL, None
            continue
        if not trim(line):
            continue
        target = sections[current or CRITICAL]
        if line.startswith("  ") and last is not None and last:
            last[-1] += "\n" + line[2:]
            continue
        text = line[2:] if line.startswith("- ") else trim(line)
        if trim(text) == NONE_BULLET:
            last = None
            continue
        target.append(text)
        last = target
    return sections


def _merge(previous: dict[str, list[str]], new: dict[str, list[str]]) -> dict[str, list[str]]:
    if previous[GOAL]:
        # The goal stays; this head's first request becomes one more constraint.
        new = {**new, CONSTRAINTS: new[GOAL] + new[CONSTRAINTS]}
    merged: dict[str, list[str]] = {}
    for name in BULLET_SECTIONS:
        if name == GOAL and previous[GOAL]:
            merged[name] = list(previous[GOAL])
        elif name in (IN_PROGRESS, BLOCKED) and new[name]:
            merged[name] = list(new[name])
        else:
            merged[name] = previous[name] + new[name]
        if name == ACTIONS:
            continue  # a repeated action is worth seeing twice
        # Each text once: files at their latest sighting (so recent ones are dropped last),
        # everything else at its first.
        merged[name] = _unique(merged[name], keep_last=name == FILES)
    return merged


def _unique(texts: list[str], *, keep_last: bool) -> list[str]:
    ordered = reversed(texts) if keep_last else iter(texts)
    seen: set[str] = set()
    unique = []
    for text in ordered:
        key = normalize(text)
        if key and key not in seen:
            seen.add(key)
            unique.append(text)
    return unique[::-1] if keep_last else unique


def render(sections: dict[str, list[str]]) -> str:
    """The template's layout: a blank line between sections, none under ``## Progress``."""
    parts = []
    for name in SECTIONS:
        if name == PROGRESS:
            parts.append(name + "\n")
            continue
        bullets = sections[name] or [NONE_BULLET]
        parts.append(name + "\n" + "\n".join(bullet(text) for text in bullets)
                     + ("" if name == FILES else "\n\n"))
    return "".join(parts)


def _fit(sections: dict[str, list[str]], budget: int, estimator: Estimator) -> None:
    """Drop the oldest bullets, in :data:`DROP_ORDER`, until the rendering fits ``budget``."""
    # An upper bound per line (estimate + 1) so that dropping can be counted without re-rendering.
    cost = {name: [estimator.text(bullet(text)) + 1 for text in sections[name]]
            for name in BULLET_SECTIONS}
    frame = sum(estimator.text(name) + 1 for name in SECTIONS) + sum(
        estimator.text(bullet(NONE_BULLET)) + 1 for name in BULLET_SECTIONS)
    total = frame + sum(sum(costs) for costs in cost.values())
    for name in DROP_ORDER:
        while total > budget and sections[name]:
            sections[name].pop(0)
            total -= cost[name].pop(0)
    while estimator.text(render(sections)) > budget and any(sections.values()):
        name = next(n for n in DROP_ORDER if sections[n])
        sections[name].pop(0)


def extractive_summary(
    head: Sequence[Message],
    previous_summary: str | None,
    budget: int,
    estimator: Estimator,
) -> str:
    """The summary of ``head`` (updating ``previous_summary`` when given) within ``budget`` tokens."""
    sections = head_sections(head)
    if previous_summary is not None:
        sections = _merge(parse_sections(previous_summary), sections)
    else:
        sections = _merge({name: [] for name in BULLET_SECTIONS}, sections)
    _fit(sections, budget, estimator)
    return render(sections)
