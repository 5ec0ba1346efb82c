"""The retention check every summary passes with ``summary_check: append``.

A deterministic must-keep list is derived from the head being summarised:

* every user message's own words (trimmed): whole up to :data:`USER_WORDS_CHARS` characters, a
  longer one as its first :data:`USER_HEAD_CHARS` and last :data:`USER_TAIL_CHARS` characters
  joined by :data:`CUT`;
* the file paths and URLs in user text and in function-call arguments;
* the first line of the latest failed function result (``is_error``) that no later success of the
  same function answered.

In update mode the items of the previous summary's :data:`USER_HEADING` and
:data:`RETAINED_HEADING` sections join the list, as older than every item of the head: the new
summary replaces the previous one, so what the check kept once stays kept until the appendix has
no room for it. Only each section's last bullets are read, as many as the appendix share has
tokens (no appendix of that share holds more).

Items the new summary does not contain (compared after collapsing whitespace and case) are
appended verbatim, one bullet each: the user's words under :data:`USER_HEADING`, the other items
under :data:`RETAINED_HEADING`; an item another appended item contains is not repeated. The
appendix may take half of the summary budget. The user's words are taken first, newest first
(the head's before the carried ones), each whole while it fits; the other items take what is left,
the head's before the carried ones and, within each, the most recent first.
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
USER_HEADING = "## The user's words"
# What the extractive summary keeps of a user message (its first characters).
USER_TEXT_CHARS = 300
# What the check keeps of a user message: whole up to USER_WORDS_CHARS, else its head and tail,
# as many characters as the first 300 the check kept before (a message that long is mostly a task
# statement or pasted output; the recorded sessions' bill stays where it was).
USER_WORDS_CHARS = 1000
USER_HEAD_CHARS = 200
USER_TAIL_CHARS = 100
CUT = " […] "
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
    user: bool = False  # the user's own words (taken first)


def normalize(text: str) -> str:
    """Whitespace runs collapsed to one space, case folded: what "contains" compares."""
    return " ".join(text.split()).casefold()


def user_text(message: Message) -> str:
    """A user message's own text, trimmed and cut to :data:`USER_TEXT_CHARS` characters."""
    return trim(text_of(message["content"]))[:USER_TEXT_CHARS]


def user_words(message: Message) -> str:
    """A user message's own text, trimmed: whole up to :data:`USER_WORDS_CHARS` characters, else
    its first :data:`USER_HEAD_CHARS` and last :data:`USER_TAIL_CHARS` joined by :data:`CUT`."""
    text = trim(text_of(message["content"]))
    if len(text) <= USER_WORDS_CHARS:
        return text
    return trim(text[:USER_HEAD_CHARS]) + CUT + trim(text[-USER_TAIL_CHARS:])


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
            yield index, user_words(message), False
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
    # normalized -> (position, text as first seen, the user's words)
    latest: dict[str, tuple[int, str, bool]] = {}

    def note(text: str, position: int, user: bool) -> None:
        key = normalize(text)
        if not key:
            return
        if key not in latest:
            order.append(key)
            latest[key] = (position, text, user)
        else:
            latest[key] = (position, latest[key][1], latest[key][2] or user)

    for index, text, is_path in head_texts(head):
        note(text, index, not is_path)
    error = open_error(head)
    if error is not None:
        note(error[2], error[0], False)
    return [Item(latest[key][1], latest[key][0], latest[key][2]) for key in order]


def bullet(text: str) -> str:
    """One Markdown bullet; continuation lines are indented so the list stays one list."""
    return "- " + text.replace("\n", "\n  ")


def retained_in(summary: str, heading: str = RETAINED_HEADING) -> list[str]:
    """The items of every ``heading`` section of ``summary``, in order.

    The inverse of the rendering: a bullet starts an item, an indented line continues it, a line
    that starts with ``#`` ends the section.
    """
    items: list[list[str]] = []
    inside = False
    for line in summary.split("\n"):
        if line.startswith("#"):
            inside = normalize(line) == normalize(heading)
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
    """The previous summary's user's words and retained items (as :data:`CARRIED`; the last
    ``carried_limit`` of each when given), then the head's; each text once."""
    head_items = must_keep(head)
    in_head = {normalize(item.text) for item in head_items}
    carried: dict[str, Item] = {}
    for heading, user in ((USER_HEADING, True), (RETAINED_HEADING, False)):
        previous = retained_in(previous_summary, heading) if previous_summary else []
        if carried_limit is not None:
            previous = previous[max(len(previous) - carried_limit, 0):]
        for text in previous:
            key = normalize(text)
            if key not in in_head and key not in carried:
                carried[key] = Item(text, CARRIED, user)
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

    The user's words are taken first, then the other items; within each the most recent first (a
    carried item is older than every head item). An item another taken item contains (a path
    inside a request's text, a directory inside a longer path) is not repeated: that one keeps it.
    """
    keys = [normalize(item.text) for item in missing]
    # The +1 per line keeps the running sum an upper bound of the appendix's estimate; a heading
    # is charged with the first item under it (and the blank line before the second heading).
    spent = 0
    opened: set[bool] = set()
    chosen: list[int] = []
    # The taken keys, one per line (a key holds no newline): one search tells containment.
    taken = ""
    for i in sorted(range(len(missing)), key=lambda i: (missing[i].user, missing[i].position, i), reverse=True):
        if spent >= share:
            break  # every bullet costs at least one token
        user = missing[i].user
        heading = 0 if user in opened else \
            estimator.text(USER_HEADING if user else RETAINED_HEADING) + 1 + (1 if opened else 0)
        cost = heading + estimator.text(bullet(missing[i].text)) + 1
        if spent + cost > share or keys[i] in taken:
            continue
        spent += cost
        opened.add(user)
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
    parts = []
    for heading, user in ((USER_HEADING, True), (RETAINED_HEADING, False)):
        bullets = [bullet(missing[i].text) for i in chosen if missing[i].user is user]
        if bullets:
            parts.append(heading + "\n" + "\n".join(bullets))
    return summary + "".join(f"\n\n{part}" for part in parts), len(chosen)
