"""Long-range future-entity recall of the contexts a strategy sends: every strategy is scored on
the same calls and the same entities.

* **pressure calls**: calls whose raw history (the session's system prompt and every model-facing
  message recorded before the call) counts more than the worker's usable budget at the defaults
  (``window - max_output - min(20000, window // 10)``): where some reduction is due;
* **entities** of a message: file paths (``[\\w.-]*/[\\w./-]+`` or a name with a source extension),
  URLs, error and exception names (``\\w+(Error|Exception)``) and code identifiers (snake_case with
  an underscore, CamelCase with two capitals or more, a name directly followed by ``(``), from user
  texts, assistant texts and call arguments; tool results only make an entity *seen*;
* **long-range needs** of a pressure call: the entities the next 10 messages mention that appeared
  in the history before the call but not in its last 20 messages;
* **recall**: the share of those found (case-insensitive substring) in the text of the context sent
  (its system prompt, texts, call arguments and results); a call that overflowed sends nothing and
  finds none.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from bench.league.ledger import Ledger, Message, Sent, count

if TYPE_CHECKING:
    from bench.league.peers import Budget
    from bench.replay.replay import Session

HORIZON = 10
RECENT = 20
_PATH = re.compile(r"(?:[\w.-]*/[\w./-]+|\b[\w-]+\.(?:py|js|ts|rs|go|c|h|java|toml|yaml|yml|json|md|cfg|txt))\b")
_URL = re.compile(r"https?://[^\s\"'<>)]+")
_ERROR = re.compile(r"\b\w+(?:Error|Exception)\b")
_IDENT = re.compile(r"\b(?:[a-z][a-z0-9]*_[a-z0-9_]+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Za-z_]\w{2,}(?=\())")


def entities(text: str) -> set[str]:
    found = set(_URL.findall(text)) | set(_ERROR.findall(text)) | set(_IDENT.findall(text))
    found |= {p.strip("./") for p in _PATH.findall(text) if len(p.strip("./")) > 3}
    return {e for e in found if len(e) > 3}


def _said(m: Message) -> str:
    parts = []
    for b in m["content"]:
        if b["type"] == "text":
            parts.append(b["text"])
        elif b["type"] == "function_call":
            parts.append(json.dumps(b.get("arguments")))
    return "\n".join(parts)


def _all_text(m: Message) -> str:
    parts = [_said(m)]
    for b in m["content"]:
        if b["type"] in ("thinking",):
            parts.append(b["text"])
    return "\n".join(parts)


def sent_text(sent: Sent) -> str:
    system, messages = sent
    return "\n".join([system, *(_all_text(m) for m in messages)]).lower()


class RecallProbe:
    """The long-range needs of each pressure call of one session at one budget."""

    def __init__(self, session: Session, budget: Budget) -> None:
        messages = session.messages
        self.mentioned = [entities(_said(m)) if m["role"] in ("user", "assistant") else set()
                          for m in messages]
        self.seen = [entities(_all_text(m)) for m in messages]
        usable = budget.limit - min(20_000, budget.window // 10)
        system = session.system_prompt or ""
        facing = [m for m in messages if m["role"] != "custom"]
        self.pressure: set[int] = set()
        size, position = count(system, []), 0
        for index, m in enumerate(messages):
            if m["role"] == "assistant" and size > usable:
                self.pressure.add(index)
            if m["role"] != "custom":
                size += count("", [facing[position]])
                position += 1

    def needs(self, index: int) -> set[str]:
        if index not in self.pressure:
            return set()
        future: set[str] = set().union(*self.mentioned[index:index + HORIZON])
        earlier: set[str] = set().union(*self.seen[:max(0, index - RECENT)])
        recent: set[str] = set().union(*self.seen[max(0, index - RECENT):index])
        return {e for e in future if e in earlier and e not in recent}

    def score(self, ledger: Ledger, index: int, sent: Sent | None) -> None:
        needs = self.needs(index)
        if not needs:
            return
        ledger.recall_total += len(needs)
        if sent is not None:
            text = sent_text(sent)
            ledger.recall_found += sum(e.lower() in text for e in needs)


