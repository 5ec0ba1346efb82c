"""The ``## Current plan`` section (``working_set: true`` with ``plan_functions``): the agent's plan
carried whole.

Agent harnesses keep the plan as a function call: a todo or plan tool whose latest arguments are
the whole plan (the default ``plan_functions`` name those of Claude Code, Codex, LangChain Deep
Agents, OpenHands and Qwen Code). A summary that paraphrases the plan, or a drop that removes it,
loses which items are done; this section keeps, for each named function, its latest call in the
summarised (or dropped) history, the arguments written as the worker holds them (compact JSON,
the canonical form of the wire), one line each::

    ## Current plan
    <INTRO>
    - TodoWrite: {"todos":[{"activeForm":"Running the tests","content":"Run the tests","status":"in_progress"}]}

Rules:

* Only a call whose arguments hold a list (at the top level, or as the value of a top-level key)
  is a plan; another call of the function (OpenHands' ``task_tracker`` ``view``) reads the plan
  and leaves it as it was.
* The plans of the previous summary's section (or of an earlier dropped-history note) are carried:
  a function the head calls again takes the head's latest call, the superseded one is gone; the
  others keep their line, as older than every head call.
* Newest first: the head's plans by their latest call, then the carried ones in their previous
  order. Each line is taken whole while it fits ``budget`` tokens, or left out (never cut); the
  working set's entries take what the plans leave of the section's share.
* The calls of the named functions and their results are left out of the working set's trail
  (``working_set.without_plan_calls``): the items' texts and statuses are no artifacts.
* The same head and previous section give the same bytes.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from context_manager.core.counting.estimate import Estimator
from context_manager.wire.codec import dumps

Message = dict[str, Any]

HEADING = "## Current plan"
INTRO = ("The latest call of each plan function, its arguments exactly as sent, newest first; a later "
         "call of the same function in the conversation supersedes its line.")
_SEPARATOR = ": "


@dataclass(frozen=True, slots=True)
class Plan:
    """One function's latest plan: its name, its arguments as JSON text, and the head index of the
    call (negative for a carried plan: older than every head call, the first carried highest)."""

    function: str
    arguments: str
    position: int

    @property
    def line(self) -> str:
        return f"- {self.function}{_SEPARATOR}{self.arguments}"


def is_plan(arguments: Any) -> bool:
    """Arguments that hold a list: the whole plan (not a read of it)."""
    if isinstance(arguments, list):
        return True
    return isinstance(arguments, dict) and any(isinstance(value, list) for value in arguments.values())


def head_plans(head: Sequence[Message], functions: Collection[str]) -> dict[str, Plan]:
    """The latest plan call of each function of ``functions`` in ``head``."""
    found: dict[str, Plan] = {}
    if not functions:
        return found
    for index, message in enumerate(head):
        if message.get("role") not in ("user", "assistant"):
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") != "function_call" or block.get("function_id") not in functions:
                continue
            arguments = block.get("arguments")
            if is_plan(arguments):
                name = block["function_id"]
                found[name] = Plan(name, dumps(arguments).decode("utf-8"), index)
    return found


def split_plan(summary: str) -> tuple[str, str]:
    """(``summary`` without its plan sections, their lines): every section under :data:`HEADING`
    up to the next Markdown heading."""
    kept: list[str] = []
    section: list[str] = []
    inside = False
    for line in summary.split("\n"):
        if line.startswith("#"):
            inside = line.strip() == HEADING
            if inside:
                continue
        (section if inside else kept).append(line)
    return "\n".join(kept).strip("\n"), "\n".join(section)


def parse_plans(section: str) -> list[Plan]:
    """The plans of a rendered section, in its order (positions -1, -2, ...); each function once."""
    plans: list[Plan] = []
    seen: set[str] = set()
    for line in section.split("\n"):
        if not line.startswith("- ") or _SEPARATOR not in line:
            continue
        function, arguments = line[2:].split(_SEPARATOR, 1)
        if function and arguments and function not in seen:
            seen.add(function)
            plans.append(Plan(function, arguments, -1 - len(plans)))
    return plans


def current_plans(head: Sequence[Message], carried: Sequence[Plan], functions: Collection[str]) -> list[Plan]:
    """Each function's latest plan, newest first: the head's, then the carried ones it did not
    supersede. A carried plan of a function no longer named is dropped."""
    fresh = head_plans(head, functions)
    older = [plan for plan in carried if plan.function in functions and plan.function not in fresh]
    return sorted(fresh.values(), key=lambda plan: -plan.position) + older


def render(plans: Sequence[Plan], budget: int, estimator: Estimator) -> tuple[str, int]:
    """The section of the plans that fit ``budget`` tokens whole, newest first, and an upper bound
    of its tokens; ``("", 0)`` when none fits."""
    if not plans:
        return "", 0
    # Every line costs its own count plus one (the newline), an upper bound of the whole's.
    spent = estimator.text(HEADING) + 1 + estimator.text(INTRO) + 1
    lines: list[str] = []
    for plan in plans:
        cost = estimator.text(plan.line) + 1
        if spent + cost > budget:
            continue
        spent += cost
        lines.append(plan.line)
    return ("\n".join([HEADING, INTRO, *lines]), spent) if lines else ("", 0)
