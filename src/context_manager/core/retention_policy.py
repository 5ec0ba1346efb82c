"""The retention policy record (configuration key ``retention``): what the retention pass cuts.

Every member is immutable and hashable, so a policy can sit in the frozen configuration record
and key caches. ``config/retention.py`` builds it from JSON and names the offending path of a
bad value; ``core/passes/retention.py`` applies it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

TruncationMode = Literal["keep", "always", "over"]
KeepEnds = Literal["head", "tail", "both"]


class _JsonMember(Protocol):
    def to_json(self) -> Any: ...


def _present_members(**members: _JsonMember | None) -> dict[str, Any]:
    """The JSON of each member that is set, in the order given; an unset (None) member is omitted."""
    return {name: member.to_json() for name, member in members.items() if member is not None}


@dataclass(frozen=True, slots=True)
class Truncation:
    """``keep``: never cut; ``always``: cut to ``to`` tokens; ``over``: past ``over``, cut to ``to``."""

    mode: TruncationMode = "keep"
    to: int = 0
    over: int = 0
    keep: KeepEnds = "both"

    def threshold(self) -> int | None:
        """The size above which a payload is cut, or None for ``keep``."""
        if self.mode == "keep":
            return None
        return self.to if self.mode == "always" else self.over

    def to_json(self) -> dict[str, Any]:
        if self.mode == "keep":
            return {"mode": "keep"}
        if self.mode == "always":
            return {"mode": "always", "to": self.to, "keep": self.keep}
        return {"mode": "over", "over": self.over, "to": self.to, "keep": self.keep}


@dataclass(frozen=True, slots=True)
class ToolTreatment:
    arguments: Truncation | None = None
    result: Truncation | None = None

    def to_json(self) -> dict[str, Any]:
        return _present_members(arguments=self.arguments, result=self.result)


@dataclass(frozen=True, slots=True)
class ToolRule:
    function: str  # a glob over function ids, e.g. "fs::*"
    treatment: ToolTreatment = field(default_factory=ToolTreatment)

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, **self.treatment.to_json()}


@dataclass(frozen=True, slots=True)
class ToolsPolicy:
    default: ToolTreatment | None = None
    rules: tuple[ToolRule, ...] = ()
    errors: Truncation | None = None  # replaces the result rule of a result with is_error
    mark_truncations: bool = True

    def to_json(self) -> dict[str, Any]:
        out = _present_members(default=self.default)
        out["rules"] = [rule.to_json() for rule in self.rules]
        out["errors"] = self.errors.to_json() if self.errors is not None else None
        out["mark_truncations"] = self.mark_truncations
        return out


@dataclass(frozen=True, slots=True)
class TextPolicy:
    prompt: Truncation | None = None  # user text
    message: Truncation | None = None  # assistant text

    def to_json(self) -> dict[str, Any]:
        return _present_members(prompt=self.prompt, message=self.message)


@dataclass(frozen=True, slots=True)
class ReasoningPolicy:
    keep_turns: int

    def to_json(self) -> dict[str, Any]:
        return {"keep_turns": self.keep_turns}


@dataclass(frozen=True, slots=True)
class MediaRule:
    mime: str  # a glob over MIME types, e.g. "image/*"
    keep_turns: int

    def to_json(self) -> dict[str, Any]:
        return {"mime": self.mime, "keep_turns": self.keep_turns}


@dataclass(frozen=True, slots=True)
class MediaPolicy:
    default_keep_turns: int | None = None
    rules: tuple[MediaRule, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.default_keep_turns is not None:
            out["default_keep_turns"] = self.default_keep_turns
        out["rules"] = [rule.to_json() for rule in self.rules]
        return out


DEFAULT_VERBATIM_TURNS = 1


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    tools: ToolsPolicy | None = None
    verbatim_turns: int = DEFAULT_VERBATIM_TURNS
    text: TextPolicy | None = None
    reasoning: ReasoningPolicy | None = None
    media: MediaPolicy | None = None

    def to_json(self) -> dict[str, Any]:
        """The policy as the configuration worker stores it (members sorted, optional ones omitted)."""
        out = _present_members(media=self.media, reasoning=self.reasoning, text=self.text, tools=self.tools)
        out["verbatim_turns"] = self.verbatim_turns
        return out
