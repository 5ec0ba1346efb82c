"""Strict parsing of the ``retention`` key into a ``RetentionPolicy``.

Every fault is reported as ``<path>: <what is wrong>``, the path written from the key down, e.g.
``retention.tools.rules[1].result.to: 600 is greater than over (500)``. Unknown members,
wrong types, negative or non-integer numbers, ``to`` above ``over`` and malformed patterns
are rejected; ``null`` for the whole key means no policy (the original's behaviour).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from context_manager.core.retention_policy import (
    KeepEnds,
    MediaPolicy,
    MediaRule,
    ReasoningPolicy,
    RetentionPolicy,
    TextPolicy,
    ToolRule,
    ToolsPolicy,
    ToolTreatment,
    Truncation,
)
from context_manager.wire.decode import object_fault, unexpected
from context_manager.wire.errors import DecodeError
from context_manager.wire.ints import U64_MAX

T = TypeVar("T")

KEY = "retention"
MODES = ("keep", "always", "over")
KEEP_ENDS: tuple[KeepEnds, ...] = ("head", "tail", "both")
# A MIME pattern: type and subtype of token characters, either of which may use glob characters.
_MIME_PART = r"[A-Za-z0-9!#$&^_.+\-*?\[\]]+"
_MIME_PATTERN = re.compile(rf"{_MIME_PART}/{_MIME_PART}")


class PolicyError(DecodeError):
    """A fault at ``path``; the configuration error's detail is ``<path>: <reason>``."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")


def parse_retention(value: Any, path: str = KEY) -> RetentionPolicy | None:
    if value is None:
        return None
    members = _members(value, path, ("tools", "verbatim_turns", "text", "reasoning", "media"))
    return RetentionPolicy(
        tools=_optional(members, "tools", path, _tools),
        verbatim_turns=_optional(members, "verbatim_turns", path, _count, RetentionPolicy().verbatim_turns),
        text=_optional(members, "text", path, _text),
        reasoning=_optional(members, "reasoning", path, _reasoning),
        media=_optional(members, "media", path, _media),
    )


def _members(value: Any, path: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    fault = object_fault(value, allowed)
    if fault is not None:
        raise PolicyError(path, fault)
    return value


def _optional(members: dict[str, Any], key: str, path: str, parse: Callable[[Any, str], T],
              default: Any = None) -> T:
    if key not in members:
        return default
    return parse(members[key], f"{path}.{key}")


def _count(value: Any, path: str) -> int:
    if type(value) is not int:
        raise PolicyError(path, f"expected a non-negative integer, got {unexpected(value)}")
    if not 0 <= value <= U64_MAX:
        raise PolicyError(path, f"expected a non-negative integer, got {value}")
    return value


def _boolean(value: Any, path: str) -> bool:
    if value is not True and value is not False:
        raise PolicyError(path, f"expected a boolean, got {unexpected(value)}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if type(value) is not list:
        raise PolicyError(path, f"expected an array, got {unexpected(value)}")
    return value


def truncation(value: Any, path: str) -> Truncation:
    if type(value) is not dict:
        raise PolicyError(path, f"expected an object, got {unexpected(value)}")
    if "mode" not in value:
        raise PolicyError(path, "missing member `mode`")
    mode = value["mode"]
    if type(mode) is not str or mode not in MODES:
        raise PolicyError(f"{path}.mode", f"expected one of `keep`, `always`, `over`, got {unexpected(mode)}")
    allowed = {"keep": ("mode",), "always": ("mode", "to", "keep"), "over": ("mode", "over", "to", "keep")}[mode]
    _members(value, path, allowed)
    if mode == "keep":
        return Truncation()
    for required in allowed[1:-1]:
        if required not in value:
            raise PolicyError(path, f"missing member `{required}` (mode `{mode}`)")
    to = _count(value["to"], f"{path}.to")
    over = _count(value["over"], f"{path}.over") if mode == "over" else to
    if to > over:
        raise PolicyError(f"{path}.to", f"{to} is greater than over ({over})")
    keep = value.get("keep", "both")
    if type(keep) is not str or keep not in KEEP_ENDS:
        raise PolicyError(f"{path}.keep", f"expected one of `head`, `tail`, `both`, got {unexpected(keep)}")
    return Truncation(mode=mode, to=to, over=over, keep=keep)  # type: ignore[arg-type]


def _optional_truncation(value: Any, path: str) -> Truncation | None:
    return None if value is None else truncation(value, path)


def _treatment(value: Any, path: str) -> ToolTreatment:
    return _treatment_of(_members(value, path, ("arguments", "result")), path)


def _treatment_of(members: dict[str, Any], path: str) -> ToolTreatment:
    """The argument and result truncations of an object whose members are already checked."""
    return ToolTreatment(
        arguments=_optional(members, "arguments", path, truncation),
        result=_optional(members, "result", path, truncation),
    )


def glob(value: Any, path: str) -> str:
    """A function-id glob: non-empty, every ``[`` closed by a later ``]`` with something between."""
    if type(value) is not str:
        raise PolicyError(path, f"expected a glob string, got {unexpected(value)}")
    if not value:
        raise PolicyError(path, "the glob is empty")
    index = 0
    while index < len(value):
        if value[index] == "[":
            close = value.find("]", index + 2)
            if close < 0:
                raise PolicyError(path, f"malformed glob {value!r}: `[` at {index} is never closed")
            index = close
        elif value[index] == "]":
            raise PolicyError(path, f"malformed glob {value!r}: `]` at {index} closes nothing")
        index += 1
    return value


def _tool_rule(value: Any, path: str) -> ToolRule:
    members = _members(value, path, ("function", "arguments", "result"))
    if "function" not in members:
        raise PolicyError(path, "missing member `function`")
    return ToolRule(
        function=glob(members["function"], f"{path}.function"),
        treatment=_treatment_of(members, path),
    )


def _tools(value: Any, path: str) -> ToolsPolicy:
    members = _members(value, path, ("default", "rules", "errors", "mark_truncations"))
    rules = _list(members.get("rules", []), f"{path}.rules")
    return ToolsPolicy(
        default=_optional(members, "default", path, _treatment),
        rules=tuple(_tool_rule(rule, f"{path}.rules[{i}]") for i, rule in enumerate(rules)),
        errors=_optional(members, "errors", path, _optional_truncation),
        mark_truncations=_optional(members, "mark_truncations", path, _boolean, True),
    )


def _text(value: Any, path: str) -> TextPolicy:
    members = _members(value, path, ("prompt", "message"))
    return TextPolicy(
        prompt=_optional(members, "prompt", path, truncation),
        message=_optional(members, "message", path, truncation),
    )


def _reasoning(value: Any, path: str) -> ReasoningPolicy:
    members = _members(value, path, ("keep_turns",))
    if "keep_turns" not in members:
        raise PolicyError(path, "missing member `keep_turns`")
    return ReasoningPolicy(keep_turns=_count(members["keep_turns"], f"{path}.keep_turns"))


def mime_pattern(value: Any, path: str) -> str:
    if type(value) is not str:
        raise PolicyError(path, f"expected a MIME pattern string, got {unexpected(value)}")
    if not _MIME_PATTERN.fullmatch(value):
        raise PolicyError(path, f"malformed MIME pattern {value!r}: expected type/subtype, e.g. \"image/*\"")
    glob(value, path)
    return value


def _media_rule(value: Any, path: str) -> MediaRule:
    members = _members(value, path, ("mime", "keep_turns"))
    for required in ("mime", "keep_turns"):
        if required not in members:
            raise PolicyError(path, f"missing member `{required}`")
    return MediaRule(mime=mime_pattern(members["mime"], f"{path}.mime"),
                     keep_turns=_count(members["keep_turns"], f"{path}.keep_turns"))


def _media(value: Any, path: str) -> MediaPolicy:
    members = _members(value, path, ("default_keep_turns", "rules"))
    rules = _list(members.get("rules", []), f"{path}.rules")
    return MediaPolicy(
        default_keep_turns=_optional(members, "default_keep_turns", path, _count),
        rules=tuple(_media_rule(rule, f"{path}.rules[{i}]") for i, rule in enumerate(rules)),
    )
