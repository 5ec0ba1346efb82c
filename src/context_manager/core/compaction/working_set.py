"""The ``## Working set`` section (``working_set: true``): the artifact trail a summary carries.

Entries come from the summarised head (``artifacts.trail``) and from the working set section the
previous summary (or a dropped-history note) carried. Each entry has a kind, a key and a detail:

* ``Files``: ``- path (action)``, the last action on a path a call acted on (``read``,
  ``edited``, ``created``, ``ran``);
* ``Paths seen``: ``- path``, paths results surfaced or texts named, not acted on;
* ``Symbols``: one line, ``Symbols: a, b, c``;
* ``Errors``: ``- line (open)`` or ``- Name (cleared)``: an error is open until a later success
  on the same subject;
* ``URLs``: ``- url``;
* ``Commands``: ``- command (n×)``, only commands run at least :data:`RECUR` times.

Ranking: an entry's score is the head index of its latest sighting plus
:data:`FREQUENCY_WEIGHT` per further sighting (at most :data:`FREQUENCY_CAP`); the carried entries
the head does not touch again keep their previous order and take every
:data:`CARRIED_TURN`-th place of their kind, so stale entries leave first but over several
compactions. A symbol a longer one names at a dot is folded into it. Entries the summary text
already holds (the key found with word boundaries; the retained details are part of that text)
are left out. The section takes at most
``budget`` tokens (:func:`section_budget`: the summary budget over :data:`SHARE_DIVISOR`); the
kinds take turns in the order above, each its best remaining entry, until the next one does not
fit, so no kind crowds the others out. The same head and previous summary give the same bytes.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from context_manager.core.compaction.artifacts import (
    CLEARED,
    COMMAND,
    ERROR,
    FILE,
    OPEN,
    SEEN,
    SYMBOL,
    URL,
    Sighting,
    trail,
)
from context_manager.core.compaction.plan import Plan, current_plans, parse_plans, split_plan
from context_manager.core.compaction.plan import render as render_plans
from context_manager.core.counting.estimate import Estimator

Message = dict[str, Any]

HEADING = "## Working set"
# The section's share (1/n) of the summary budget.
SHARE_DIVISOR = 2
FREQUENCY_WEIGHT = 2
FREQUENCY_CAP = 5
RECUR = 2
# Every n-th place of a kind goes to a carried entry the head did not touch, while both remain.
CARRIED_TURN = 2
SYMBOLS_PREFIX = "Symbols: "

# Render order, which is also the order in which the kinds take turns.
KINDS = (FILE, SYMBOL, ERROR, SEEN, URL, COMMAND)
# Entries a kind takes per turn: symbols are the most numerous and the most often needed again,
# and three of them cost about one path line.
TURNS = {FILE: 1, SYMBOL: 3, ERROR: 1, SEEN: 1, URL: 1, COMMAND: 1}
LABELS = {FILE: "Files:", SEEN: "Paths seen:", ERROR: "Errors:", URL: "URLs:", COMMAND: "Commands:"}
_KIND_OF_LABEL = {label: kind for kind, label in LABELS.items()}
_DETAIL = re.compile(r"^(.*) \(([^()]*)\)$")
_TIMES = re.compile(r"^(\d+)×$")


@dataclass(slots=True)
class Entry:
    kind: str
    key: str
    detail: str
    score: int
    count: int


def section_budget(summary_budget: int) -> int:
    """The tokens the section may take of a summary budget."""
    return summary_budget // SHARE_DIVISOR


def split_section(summary: str) -> tuple[str, str]:
    """(``summary`` without its working set sections, their text): every section under
    :data:`HEADING` up to the next Markdown heading."""
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


def parse_section(section: str) -> list[Entry]:
    """The entries of a rendered section, in its order; scores are negative (older than any head
    entry), the first entry of each kind highest."""
    entries: list[Entry] = []
    kind: str | None = None
    rank = {name: 0 for name in KINDS}

    def take(entry_kind: str, key: str, detail: str, count: int = 1) -> None:
        rank[entry_kind] += 1
        entries.append(Entry(entry_kind, key, detail, -rank[entry_kind], count))

    for line in section.split("\n"):
        if line.startswith(SYMBOLS_PREFIX):
            kind = None
            for name in line[len(SYMBOLS_PREFIX):].split(", "):
                if name.strip():
                    take(SYMBOL, name.strip(), "")
            continue
        if line in _KIND_OF_LABEL:
            kind = _KIND_OF_LABEL[line]
            continue
        if kind is None or not line.startswith("- "):
            continue
        text, detail, count = line[2:], "", 1
        match = _DETAIL.match(text)
        if match and kind in (FILE, ERROR, COMMAND):
            text, detail = match.group(1), match.group(2)
            if kind == COMMAND:
                times = _TIMES.match(detail)
                count, detail = (int(times.group(1)) if times else 1), ""
        if text:
            take(kind, text, detail, count)
    return entries


def collect(head: Sequence[Message], carried: Sequence[Entry]) -> list[Entry]:
    """Every entry of the head merged over the carried ones, each (kind, key) once."""
    entries: dict[tuple[str, str], Entry] = {}
    for entry in carried:
        entries.setdefault((entry.kind, entry.key), Entry(entry.kind, entry.key, entry.detail,
                                                          entry.score, entry.count))
    known = {entry.key for entry in carried if entry.kind == FILE}
    in_head: set[tuple[str, str]] = set()
    # What the user named in words (the task, a later instruction) stays current: it ranks as
    # if sighted at the head's end.
    asked = {index for index, message in enumerate(head) if _user_words(message)}
    for sighting in _sightings(head, known):
        if sighting.position in asked:
            sighting = Sighting(sighting.kind, sighting.key, sighting.detail, len(head))
        ident = (sighting.kind, sighting.key)
        found = entries.get(ident)
        if found is None:
            entries[ident] = Entry(sighting.kind, sighting.key, _detail(sighting, None),
                                   sighting.position, 1)
            in_head.add(ident)
            continue
        entry = found
        if ident not in in_head:
            # A carried entry touched again: its carried sightings count once more.
            in_head.add(ident)
            entry.count = min(entry.count, FREQUENCY_CAP)
        entry.count += 1
        entry.score = max(entry.score, sighting.position)
        entry.detail = _detail(sighting, entry.detail)
    # A path acted on is listed under files only (also when written relative to another
    # directory); an error name is listed under errors only.
    files = {key for kind, key in entries if kind == FILE}
    suffixes = {key[key.index("/") + 1:] for key in files if "/" in key}
    tails = set()
    for key in suffixes:
        while True:
            tails.add(key)
            if "/" not in key:
                break
            key = key[key.index("/") + 1:]
    errors = {key for kind, key in entries if kind == ERROR}
    result = []
    for entry in entries.values():
        if entry.kind == SEEN and (entry.key in files or "/" in entry.key and entry.key in tails):
            continue
        if entry.kind == SYMBOL and entry.key in errors:
            continue
        if entry.score >= 0:
            entry.score += FREQUENCY_WEIGHT * min(entry.count - 1, FREQUENCY_CAP)
        result.append(entry)
    return result


def _user_words(message: Message) -> bool:
    """A user message of text only (one that carries function results is the harness's)."""
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, list) \
        and all(block.get("type") == "text" for block in content) and not is_note(message)


def _sightings(head: Sequence[Message], known: set[str]) -> list[Sighting]:
    return trail(head, known)


def _detail(sighting: Sighting, previous: str | None) -> str:
    if sighting.kind == ERROR:
        return CLEARED if sighting.detail == CLEARED else OPEN
    return sighting.detail


def _line(entry: Entry) -> str:
    if entry.kind == FILE:
        return f"- {entry.key} ({entry.detail})"
    if entry.kind == ERROR:
        return f"- {entry.key} ({entry.detail or OPEN})"
    if entry.kind == COMMAND:
        return f"- {entry.key} ({entry.count}×)"
    return f"- {entry.key}"


def _present(key: str, summary: str) -> bool:
    at = summary.find(key)
    while at >= 0:
        before = summary[at - 1] if at > 0 else " "
        end = at + len(key)
        after = summary[end] if end < len(summary) else " "
        if not (before.isalnum() or before in "_/.") and not (after.isalnum() or after in "_/"):
            return True
        at = summary.find(key, at + 1)
    return False


def _eligible(entry: Entry, summary: str) -> bool:
    if entry.kind == COMMAND and entry.count < RECUR:
        return False
    if "\n" in entry.key or not entry.key.strip():
        return False
    if entry.kind == SYMBOL and ", " in entry.key:
        return False
    return not _present(entry.key, summary)


def _cost(entry: Entry, first: bool, estimator: Estimator) -> int:
    """An upper bound of what the entry adds (with its kind's label when it is the first)."""
    if entry.kind == SYMBOL:
        return estimator.text(entry.key + ", ") + (estimator.text(SYMBOLS_PREFIX) + 1 if first else 0)
    return estimator.text(_line(entry)) + 1 + (estimator.text(LABELS[entry.kind]) + 1 if first else 0)


def _fold_prefixes(symbols: list[Entry]) -> list[Entry]:
    """Symbols without those a longer one names (``a.b`` in ``a.b.c``, ``items`` in
    ``items.append``): the longer one takes the higher score of the two."""
    by_key = {e.key: Entry(e.kind, e.key, e.detail, e.score, e.count) for e in symbols}
    keys = sorted(by_key)
    folded: set[str] = set()
    for key in sorted(keys, key=lambda k: (-len(k), k)):
        stem = key + "."
        at = bisect_left(keys, stem)
        best: Entry | None = None
        while at < len(keys) and keys[at].startswith(stem):
            longer = by_key[keys[at]]
            if keys[at] not in folded and (best is None or (longer.score, best.key) > (best.score, longer.key)):
                best = longer
            at += 1
        if best is not None:
            best.score = max(best.score, by_key[key].score)
            folded.add(key)
    return [entry for key, entry in by_key.items() if key not in folded]


def _with_carried_share(ranked: list[Entry]) -> list[Entry]:
    """``ranked`` with the carried entries the head did not touch (negative scores) taking every
    :data:`CARRIED_TURN`-th place while both remain: a long head cannot push the whole earlier
    trail out at once, so an entry leaves over several compactions, the least recent first."""
    fresh = [e for e in ranked if e.score >= 0]
    carried = [e for e in ranked if e.score < 0]
    merged: list[Entry] = []
    while fresh and carried:
        merged.extend(fresh[:CARRIED_TURN - 1])
        del fresh[:CARRIED_TURN - 1]
        merged.append(carried.pop(0))
    return merged + fresh + carried


def render(entries: Sequence[Entry], summary: str, budget: int, estimator: Estimator) -> str:
    """The section of the entries that fit ``budget`` tokens; ``""`` when none does."""
    eligible = [e for e in entries if _eligible(e, summary)]
    eligible = [e for e in eligible if e.kind != SYMBOL] \
        + _fold_prefixes([e for e in eligible if e.kind == SYMBOL])
    ranked = {kind: _with_carried_share(sorted((e for e in eligible if e.kind == kind),
                                               key=lambda e: (-e.score, e.key))) for kind in KINDS}
    chosen: dict[str, list[Entry]] = {kind: [] for kind in KINDS}
    # Every line costs its own count plus one (the newline), an upper bound of the whole's.
    spent = estimator.text(HEADING) + 1
    cursor = {kind: 0 for kind in KINDS}
    open_kinds = [kind for kind in KINDS if ranked[kind]]
    while open_kinds:
        still_open = []
        for kind in open_kinds:
            done = False
            for _turn in range(TURNS[kind]):
                entry = ranked[kind][cursor[kind]]
                cost = _cost(entry, not chosen[kind], estimator)
                if spent + cost > budget:
                    done = True  # this kind is done: its later entries rank lower
                    break
                spent += cost
                chosen[kind].append(entry)
                cursor[kind] += 1
                if cursor[kind] == len(ranked[kind]):
                    done = True
                    break
            if not done:
                still_open.append(kind)
        open_kinds = still_open
    lines = [HEADING]
    for kind in KINDS:
        if not chosen[kind]:
            continue
        if kind == SYMBOL:
            lines.append(SYMBOLS_PREFIX + ", ".join(e.key for e in chosen[kind]))
        else:
            lines.append(LABELS[kind])
            lines.extend(_line(e) for e in chosen[kind])
    return "\n".join(lines) if len(lines) > 1 else ""


def sections(head: Sequence[Message], carried: Sequence[Entry], plans: Sequence[Plan], summary: str,
             budget: int, estimator: Estimator, plan_functions: Collection[str] = ()) -> str:
    """The plan section (``plan.py``) and then the working set section, within ``budget`` tokens
    together: the plans take what they need first, the entries the rest."""
    plan, spent = render_plans(current_plans(head, plans, plan_functions), budget, estimator) \
        if plan_functions else ("", 0)
    rest = budget - spent - 1 if plan else budget
    section = render(collect(without_plan_calls(head, plan_functions), carried), summary, rest, estimator)
    return "\n\n".join(part for part in (plan, section) if part)


def without_plan_calls(head: Sequence[Message], plan_functions: Collection[str]) -> Sequence[Message]:
    """``head`` without the calls of the plan functions and their results: the plan section
    carries them, and their item texts and statuses are no artifacts of the work. ``head`` itself
    when it holds none."""
    if not plan_functions:
        return head

    def is_plan_block(block: dict[str, Any]) -> bool:
        return block.get("type") == "function_call" and block.get("function_id") in plan_functions

    calls = {block["id"] for message in head if message.get("role") in ("user", "assistant")
             and isinstance(message.get("content"), list) for block in message["content"]
             if is_plan_block(block)}
    if not calls:
        return head
    kept: list[Message] = []
    for message in head:
        if message.get("role") == "function_result":
            if message.get("function_call_id") not in calls:
                kept.append(message)
            continue
        content = message.get("content")
        if not isinstance(content, list):
            kept.append(message)
            continue
        blocks = [block for block in content if not is_plan_block(block)
                  and not (block.get("type") == "function_result" and block.get("function_call_id") in calls)]
        if len(blocks) == len(content):
            kept.append(message)
        elif blocks:
            kept.append({**message, "content": blocks})
    return kept


def working_set(head: Sequence[Message], previous: str | None, summary: str, budget: int,
                estimator: Estimator, plan_functions: Collection[str] = ()) -> str:
    """The sections for ``head`` over the working set and plans ``previous`` carried, without
    what ``summary`` holds, within ``budget`` tokens."""
    carried = parse_section(split_section(previous)[1]) if previous else []
    plans = parse_plans(split_plan(previous)[1]) if previous and plan_functions else []
    return sections(head, carried, plans, summary, budget, estimator, plan_functions)


def with_working_set(summary: str, head: Sequence[Message], previous_summary: str | None,
                     budget: int, estimator: Estimator, plan_functions: Collection[str] = ()) -> str:
    """``summary`` (without any working set or plan section of its own) and the sections appended."""
    text, _old = split_section(summary)
    if plan_functions:
        text = split_plan(text)[0]
    section = working_set(head, previous_summary, text, budget, estimator, plan_functions)
    return f"{text}\n\n{section}" if section else text


def without_working_set(summary: str | None) -> str | None:
    """A previous summary as a summariser should see it: the working set and the plan are
    carried apart."""
    if summary is None:
        return None
    return split_plan(split_section(summary)[0])[0]


NOTE_INTRO = "Earlier messages were left out here to fit the context window. What they worked with:"


def is_note(message: Message) -> bool:
    content = message.get("content")
    return (message.get("role") == "user" and isinstance(content, list) and len(content) == 1
            and content[0].get("type") == "text" and content[0]["text"].startswith(NOTE_INTRO))


def dropped_note(dropped: Sequence[Message], following: Message | None, budget: int,
                 estimator: Estimator, plan_functions: Collection[str] = ()) -> Message | None:
    """The note left in place of ``dropped`` messages (``overflow_fallback: drop_oldest``): a user
    message holding the working set of what was dropped, within ``budget`` tokens for the
    section; an earlier note among them is carried like a previous summary. ``None`` when the
    dropped messages hold no entry. Timestamped as ``following`` (0 without one) so the same drop
    gives the same message."""
    carried: list[Entry] = []
    plans: list[Plan] = []
    head: list[Message] = []
    for message in dropped:
        if is_note(message):
            text = message["content"][0]["text"]
            carried.extend(parse_section(split_section(text)[1]))
            if plan_functions:
                # A later note's plans supersede an earlier one's: each function keeps its latest.
                newer = parse_plans(split_plan(text)[1])
                names = {plan.function for plan in newer}
                plans = newer + [plan for plan in plans if plan.function not in names]
        else:
            head.append(message)
    plans = [Plan(plan.function, plan.arguments, -1 - i) for i, plan in enumerate(plans)]
    section = sections(head, carried, plans, "", budget, estimator, plan_functions)
    if not section:
        return None
    timestamp = following.get("timestamp") if following is not None else None
    return {"role": "user", "content": [{"type": "text", "text": f"{NOTE_INTRO}\n\n{section}"}],
            "timestamp": timestamp if type(timestamp) is int else 0}
