"""The retention check every summary passes with ``summary_check: append``.

A deterministic must-keep list is derived from the head being summarised:

* every user message's text (trimmed, its first 300 characters);
* the file paths and URLs in user text and in function-call arguments;
* the first line of the latest failed function result (``is_error``) that no later success of the
  same function answered.

In update mode the items of the previous summary's :data:`RETAINED_HEADING` section join the
list, as older than every item of the head: the new summary replaces the previous one, so what
the check kept once stays kept until the appendix has no room for it. Only the section's last
bullets are read, as many as the appendix share has tokens (no appendix of that share holds more).

Items the new summary does not contain (compared after collapsing whitespace and case) are
appended verbatim, one bullet each, under :data:`RETAINED_HEADING`; an item another appended item
contains is not repeated. The appendix may take half of the summary budget; when the missing
items need more, the head's items go before the carried ones and, within each, the most recent
ones are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from context_manager.core.compaction.prompts import trim
from context_manager.core.counting.estimate import Estimator
from context_manager.wire.messages import resolve_inline_function_ids, text_of

Message = dict[str, Any]

RETAINED_HEADING = "## Retained details"
USER_TEXT_CHARS = 300
ERROR_LINE_CHARS = 300
# The appendix takes at most this share (1/n) of the summary budget.
APPENDIX_SHARE_DIVISOR = 2

_URL = re.compile(r"https?://[^\s\"'<>`()\[\]{}]+")
_PATH = re.compile(
    r"(?<![\w./~:-])(?:~|\.{1,2})?(?:/[\w.+@-]+)+/?"  # /abs, ~/home, ./rel, ../up
    r"|(?<![\w./~:-])[\w.+@-]+(?:/[\w.+@-]+)+"  # dir/file.ext
)
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")
_TRAILING = ".,;:!?"


# The position of an item carried from the previous summary: older than every head index.
CARRIED = -1


@dataclass(frozen=True, slots=True)
class Item:
    """One must-keep text and the head index of its latest appearance (its recency);
    :data:`CARRIED` for an item only the previous summary's appendix holds."""

    text: str
    position: int


def normalize(text: str) -> str:
    """Whitespace runs collapsed to one space, case folded: what "contains" compares."""
    return " ".join(text.split()).casefold()


def user_text(message: Message) -> str:
    """A user message's own text, trimmed and cut to :data:`USER_TEXT_CHARS` characters."""
    return trim(text_of(message["content"]))[:USER_TEXT_CHARS]


def first_line(blocks: list[dict[str, Any]], limit: int = ERROR_LINE_CHARS) -> str:
    """The first non-blank line of a result's text, trimmed and cut; ``""`` when it has none."""
    for line in text_of(blocks).splitlines():
        line = trim(line)
        if line:
            return line[:limit]
    return ""


def _is_path(candidate: str) -> bool:
    if not any(c.isalpha() for c in candidate):
        return False
    if candidate.startswith(("/", "~/", "./", "../")):
        return True
    # A relative path needs a file extension, so "and/or" and "1/2" are not paths.
    return _EXTENSION.search(candidate) is not None


def paths_in(text: str) -> list[str]:
    """URLs and file paths in ``text``, in order of appearance (repeats kept)."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for match in _URL.finditer(text):
        url = match.group().rstrip(_TRAILING + ")")
        if len(url) > len("https://"):
            found.append((match.start(), url))
            taken.append((match.start(), match.end()))
    for match in _PATH.finditer(text):
        if any(start <= match.start() < end for start, end in taken):
            continue
        path = match.group().rstrip(_TRAILING)
        if _is_path(path):
            found.append((match.start(), path))
    return [value for _start, value in sorted(found)]


def argument_strings(value: Any) -> Iterator[str]:
    """Every string inside a free-form argument value, depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from argument_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from argument_strings(item)


def _results(head: Sequence[Message]) -> Iterator[tuple[int, str | None, list[dict[str, Any]], bool]]:
    """(head index, function id or None, content, is_error) of every function result, in order."""
    inline_ids = resolve_inline_function_ids(list(head))
    for index, message in enumerate(head):
        role = message["role"]
        if role == "function_result":
            yield index, message["function_id"], message["content"], bool(message["is_error"])
        elif role in ("user", "assistant"):
            for block_index, block in enumerate(message["content"]):
                if block["type"] == "function_result":
                    yield (index, inline_ids.get((index, block_index)), block["content"],
                           bool(block.get("is_error")))


def open_error(head: Sequence[Message]) -> tuple[int, str | None, str] | None:
    """(index, function id, first line) of the latest failure no later success of its function cleared."""
    succeeded: set[str | None] = set()
    for index, function_id, content, is_error in reversed(list(_results(head))):
        if not is_error:
            succeeded.add(function_id)
            continue
        if function_id in succeeded:
            continue
        line = first_line(content)
        if line:
            return index, function_id, line
    return None


def head_texts(head: Sequence[Message]) -> Iterator[tuple[int, str, bool]]:
    """(head index, text, is a path or URL) of every user text and path, in order (repeats kept)."""
    for index, message in enumerate(head):
        role = message["role"]
        if role == "user":
            yield index, user_text(message), False
            for path in paths_in(text_of(message["content"])):
                yield index, path, True
        if role in ("user", "assistant"):
            for block in message["content"]:
                if block["type"] == "function_call":
                    for text in argument_strings(block["arguments"]):
                        for path in paths_in(text):
                            yield index, path, True


def must_keep(head: Sequence[Message]) -> list[Item]:
    """The must-keep list of ``head``: each text once, in order of first appearance."""
    order: list[str] = []
    latest: dict[str, tuple[int, str]] = {}  # normalized -> (position, text as first seen)

    def note(text: str, position: int) -> None:
        key = normalize(text)
        if not key:
            return
        if key not in latest:
            order.append(key)
            latest[key] = (position, text)
        else:
            latest[key] = (position, latest[key][1])

    for index, text, _is_path in head_texts(head):
        note(text, index)
    error = open_error(head)
    if error is not None:
        note(error[2], error[0])
    return [Item(latest[key][1], latest[key][0]) for key in order]


def bullet(text: str) -> str:
    """One Markdown bullet; continuation lines are indented so the list stays one list."""
    return "- " + text.replace("\n", "\n  ")


def retained_in(summary: str) -> list[str]:
    """The items of every :data:`RETAINED_HEADING` section of ``summary``, in order.

    The inverse of the rendering: a bullet starts an item, an indented line continues it, a line
    that starts with ``#`` ends the section.
    """
    items: list[list[str]] = []
    inside = False
    for line in summary.split("\n"):
        if line.startswith("#"):
            inside = normalize(line) == normalize(RETAINED_HEADING)
            continue
        if not inside:
            continue
        if line.startswith("- "):
            items.append([line[2:]])
        elif items:
            items[-1].append(line[2:] if line.startswith("  ") else line.lstrip())
    return [text for text in (trim("\n".join(lines)) for lines in items) if text]


def keep_list(head: Sequence[Message], previous_summary: str | None,
              carried_limit: int | None = None) -> list[Item]:
    """The previous summary's retained items (as :data:`CARRIED`; its last ``carried_limit``
    when given), then the head's; each text once."""
    head_items = must_keep(head)
    in_head = {normalize(item.text) for item in head_items}
    previous = retained_in(previous_summary) if previous_summary else []
    if carried_limit is not None:
        previous = previous[max(len(previous) - carried_limit, 0):]
    carried: dict[str, Item] = {}
    for text in previous:
        key = normalize(text)
        if key not in in_head and key not in carried:
            carried[key] = Item(text, CARRIED)
    return [*carried.values(), *head_items]


def missing_items(summary: str, head: Sequence[Message], previous_summary: str | None,
                  carried_limit: int | None = None) -> list[Item]:
    """The must-keep items the new summary lacks; the previous summary does not count, since the
    new one replaces it."""
    present = normalize(summary)
    return [item for item in keep_list(head, previous_summary, carried_limit)
            if normalize(item.text) not in present]


def choose(missing: Sequence[Item], share: int, estimator: Estimator) -> list[int]:
    """Indexes (in list order) of the items the appendix holds within ``share`` tokens.

    The most recent items are taken first. An item another taken item contains (a path inside a
    request's text, a directory inside a longer path) is not repeated: that one keeps it.
    """
    keys = [normalize(item.text) for item in missing]
    # The +1 per line keeps the running sum an upper bound of the appendix's estimate.
    spent = estimator.text(RETAINED_HEADING) + 1
    chosen: list[int] = []
    # The taken keys, one per line (a key holds no newline): one search tells containment.
    taken = ""
    for i in sorted(range(len(missing)), key=lambda i: (missing[i].position, i), reverse=True):
        if spent >= share:
            break  # every bullet costs at least one token
        cost = estimator.text(bullet(missing[i].text)) + 1
        if spent + cost > share or keys[i] in taken:
            continue
        spent += cost
        chosen.append(i)
        taken += keys[i] + "\n"
    # An item taken before an older item that contains it is now repeated: leave it out. Its own
    # line holds it once; another key that contains it makes a second, non-overlapping match.
    return sorted(i for i in chosen if taken.count(keys[i]) == 1)


def check_summary(
    summary: str,
    head: Sequence[Message],
    previous_summary: str | None,
    budget: int,
    estimator: Estimator,
) -> tuple[str, int]:
    """``summary`` with what it lacks appended, and how many items were appended."""
    share = budget // APPENDIX_SHARE_DIVISOR
    # Every bullet costs at least one token, so an appendix of ``share`` tokens never held more
    # items than that: older lines of a previous appendix are not read.
    missing = missing_items(summary, head, previous_summary, carried_limit=share)
    chosen = choose(missing, share, estimator) if missing else []
    if not chosen:
        return summary, 0
    appendix = RETAINED_HEADING + "\n" + "\n".join(bullet(missing[i].text) for i in chosen)
    return f"{summary}\n\n{appendix}", len(chosen)
