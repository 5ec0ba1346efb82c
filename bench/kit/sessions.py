"""The sessions the suites replay: recorded ones (a folder of ``*.json`` / ``*.json.gz``) and the
generated ones shipped in ``bench/kit/sessions`` (written by ``python -m bench.kit.generate``).

A session document is ``{"system_prompt"?, "tools"?, "messages"}`` in the wire format; its name is
the file name without ``.json`` / ``.json.gz``.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

SESSIONS_DIR = Path(__file__).resolve().parent / "sessions"
# The recorded real sessions, beside the repository.
REAL_SESSIONS = (Path(__file__).resolve().parents[2] / ".." / "shared" / "realdata").resolve()


@dataclass(frozen=True)
class Session:
    name: str
    system_prompt: str | None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tool_rounds(self) -> int:
        return sum(1 for m in self.messages
                   if m["role"] == "assistant" and any(b["type"] == "function_call" for b in m["content"]))

    @property
    def model(self) -> tuple[str, str | None]:
        """The model and provider of the recorded replies (the turn's model options)."""
        for message in self.messages:
            if message["role"] == "assistant":
                return message["model"], message.get("provider") or None
        raise ValueError(f"{self.name}: no assistant message")

    @property
    def single_task(self) -> bool:
        """One task statement: the recording holds exactly one user message."""
        return sum(m["role"] == "user" for m in self.messages) == 1

    @property
    def task(self) -> list[str]:
        """The texts of the first user message."""
        for message in self.messages:
            if message["role"] == "user":
                return [b["text"] for b in message["content"] if b["type"] == "text" and b["text"]]
        return []

    @property
    def steps(self) -> int:
        return sum(m["role"] == "assistant" for m in self.messages)


def load_session(path: Path) -> Session:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    document = json.loads(raw)
    name = path.name.removesuffix(".gz").removesuffix(".json")
    return Session(name, document.get("system_prompt"), document["messages"], document.get("tools") or [])


def shipped_sessions(directory: Path = SESSIONS_DIR) -> list[Session]:
    """Every session of ``directory`` (the generated ones by default), ``*.json.gz`` first."""
    paths = sorted(directory.glob("*.json.gz")) + sorted(directory.glob("*.json"))
    return [load_session(path) for path in paths]


def pick_named(items: Sequence[T], names: str, kind: str, name: Callable[[T], str]) -> list[T] | None:
    """The items a comma-separated list of names picks, in its order; None, with the unknown
    names and the known ones printed to stderr, when a name is not among ``items``."""
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = {name(item): item for item in items}
    missing = [n for n in wanted if n not in known]
    if missing:
        print(f"unknown {kind}: {', '.join(missing)}; known: {', '.join(known)}", file=sys.stderr)
        return None
    return [known[n] for n in wanted]


def named_sessions(sessions: list[Session], names: str) -> list[Session] | None:
    return pick_named(sessions, names, "session(s)", lambda s: s.name)


def sessions_of(data: Path | None) -> list[Session] | None:
    """The sessions of ``--data`` (the generated ones when ``None``); None, with the reason printed
    to stderr, when the folder is missing or a file cannot be read."""
    if data is not None and not data.is_dir():
        print(f"no such directory: {data}", file=sys.stderr)
        return None
    try:
        return shipped_sessions(data) if data else shipped_sessions()
    except (OSError, ValueError, KeyError, TypeError) as exc:  # unreadable, not JSON, no messages
        print(f"cannot read the recorded sessions: {exc!r}", file=sys.stderr)
        return None


def real_sessions(directory: Path = REAL_SESSIONS) -> list[Session]:
    """The recorded real sessions (``../shared/realdata`` beside the repository by default)."""
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise FileNotFoundError(
            f"the recorded real sessions are missing: no *.json in {directory} "
            "(expected beside the repository as ../shared/realdata)")
    return [load_session(path) for path in paths]


def generated_sessions() -> list[Session]:
    paths = sorted(SESSIONS_DIR.glob("*.json.gz"))
    if not paths:
        raise FileNotFoundError(f"no generated sessions in {SESSIONS_DIR}")
    return [load_session(path) for path in paths]
