"""Scope keys and version ids.

A scope is one surface at one level (a namespace, or none: org-global) with one model tag or
none; its key is ``surface|namespace|model`` with the empty string for none. A version's id is
``surface:namespace:version`` or, tagged, ``surface:namespace:version:model`` (``budget:acme:3``,
``budget::1:gpt-4o`` at the org-global level): a namespace holds no ``:``, so any model id can
follow the third.
"""

from __future__ import annotations

from dataclasses import dataclass

SURFACES = ("budget", "retention", "settings")
# The surfaces a model tag applies to.
TAGGED_SURFACES = ("budget", "settings")


@dataclass(frozen=True, slots=True)
class Scope:
    surface: str
    namespace: str | None
    model_id: str | None

    @property
    def key(self) -> str:
        return f"{self.surface}|{self.namespace or ''}|{self.model_id or ''}"

    def version_id(self, version: int) -> str:
        tagged = "" if self.model_id is None else f":{self.model_id}"
        return f"{self.surface}:{self.namespace or ''}:{version}{tagged}"


def parse_version_id(value: str) -> tuple[Scope, int] | None:
    """The scope and version an id names, or ``None`` when it is not an id."""
    parts = value.split(":", 3)
    if len(parts) < 3 or parts[0] not in SURFACES:
        return None
    number = parts[2]
    if not number.isascii() or not number.isdigit() or len(number) > 12 or int(number) < 1:
        return None
    model = parts[3] if len(parts) == 4 else None
    if model == "" or (model is not None and parts[0] not in TAGGED_SURFACES):
        return None
    return Scope(parts[0], parts[1] or None, model), int(number)


def parse_scope_key(key: str) -> Scope | None:
    """The scope a store key names (``surface|namespace|model``), or ``None`` when it names none."""
    parts = key.split("|", 2)
    if len(parts) != 3 or parts[0] not in SURFACES:
        return None
    if parts[2] and parts[0] not in TAGGED_SURFACES:
        return None
    return Scope(parts[0], parts[1] or None, parts[2] or None)
