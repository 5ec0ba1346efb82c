"""How many of the items a measure checked the context kept: one record for every such share."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Share:
    """``found`` of ``total`` checked items were kept."""

    found: int = 0
    total: int = 0

    def count(self, kept: bool) -> None:
        self.total += 1
        self.found += kept

    def add(self, other: Share) -> None:
        self.found += other.found
        self.total += other.total

    @property
    def ratio(self) -> float | None:
        """``found / total``; None when nothing was checked."""
        return self.found / self.total if self.total else None
