"""Counts and budgets in provider units: what ``context::count-tokens`` and ``context::assemble``
share once a ``Calibration`` (``core.counting.calibration``) converts estimates.

:class:`CalibratedCount` turns an estimated count and its parts into reported numbers: the total
scaled, the parts apportioned so that they still add up to it, the estimator named.
:class:`CalibratedBudget` adds the budget of one assemble call: the usable budget in provider
units, its limit in estimator units (the largest estimate whose calibrated count fits), and the
guard of a usage anchor, which may only ever help (:meth:`CalibratedBudget.for_anchor`,
:meth:`CalibratedBudget.over_budget`). The router's count is the provider's own and is not
guarded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from context_manager.core.counting.calibration import Calibration
from context_manager.ports import Estimator


def routed_calibration(counted: int | None, estimate: int) -> Calibration | None:
    """The router's count of a whole request as a calibration of it; None when either is empty."""
    if counted is None or counted <= 0 or estimate <= 0:
        return None
    return Calibration(-1, counted, estimate)


@dataclass(frozen=True, slots=True)
class CalibratedCount:
    """Reported numbers of one count: estimates as they are, or in provider units."""

    calibration: Calibration | None = None
    # The calibration is the router's count of the request (reported as the estimator).
    routed: bool = False

    def total(self, tokens: int) -> int:
        """A whole count as reported."""
        return tokens if self.calibration is None else self.calibration.scale(tokens)

    def amount(self, tokens: int) -> int:
        """An amount (freed, capped, ...) as reported."""
        return tokens if self.calibration is None else self.calibration.amount(tokens)

    def parts(self, prompt_tokens: int, tools_tokens: int,
              roles: dict[str, int]) -> tuple[int, int, dict[str, int]]:
        """(system prompt, tools, by role) as reported: apportioned so that they still add up to
        the calibrated total."""
        if self.calibration is None:
            return prompt_tokens, tools_tokens, roles
        names = list(roles)
        scaled = self.calibration.apportion([prompt_tokens, tools_tokens, *roles.values()])
        return scaled[0], scaled[1], dict(zip(names, scaled[2:]))

    def by_part(self, parts: Iterable[tuple[str, str]], estimator: Estimator) -> dict[str, int]:
        """The caller's named texts, each counted on its own."""
        if self.calibration is None:
            return {name: estimator.text(text) for name, text in parts}
        amount = self.calibration.amount
        return {name: amount(estimator.text(text)) for name, text in parts}

    def describe(self, record: dict[str, Any], estimator: Estimator) -> None:
        """Add ``estimator`` (and, for a usage anchor, ``calibration``) to ``record``."""
        record["estimator"] = "router" if self.routed else estimator.kind
        if self.calibration is not None and not self.routed:
            record["calibration"] = self.calibration.report()


class OverBudget(Enum):
    """What a context over its budget at the end of an assemble call comes to."""

    # Not guarded (no usage anchor, or the router's count): the overflow error.
    OVERFLOW = "overflow"
    # Over the calibrated budget but within ``usable``: answered uncalibrated.
    ANSWER_UNCALIBRATED = "answer_uncalibrated"
    # Over ``usable`` as well: the call run again without its anchor.
    RERUN_UNCALIBRATED = "rerun_uncalibrated"


@dataclass(frozen=True, slots=True)
class CalibratedBudget(CalibratedCount):
    """The budget of one assemble call.

    ``usable`` is in provider units; ``limit`` is what the passes compare estimates with. The
    request overhead is never scaled: it is outside the calibrated part on both sides.
    """

    usable: int = 0
    overhead: int = 0
    limit: int = 0
    # A usage anchor (not the router's count): whatever fits uncalibrated is never refused for it.
    guarded: bool = False

    @classmethod
    def of(cls, usable: int, overhead: int, calibration: Calibration | None = None,
           routed: bool = False) -> CalibratedBudget:
        if calibration is None:
            return cls(None, False, usable, overhead, usable, False)
        limit = calibration.unscale(usable - overhead) + overhead
        return cls(calibration, routed, usable, overhead, limit, not routed)

    def uncalibrated(self) -> CalibratedBudget:
        return CalibratedBudget.of(self.usable, self.overhead)

    def recalibrated(self, calibration: Calibration) -> CalibratedBudget:
        """The router's second count of the context as it stands."""
        return CalibratedBudget.of(self.usable, self.overhead, calibration, self.routed)

    def reported(self, total: int) -> int:
        """A total in estimator units as the response reports it."""
        if self.calibration is None:
            return total
        return self.calibration.scale(total - self.overhead) + self.overhead

    def for_anchor(self, fixed_tokens: int) -> CalibratedBudget | None:
        """The budget a pinned anchor of ``fixed_tokens`` (with everything no pass reduces) runs
        under: this one, the uncalibrated one when only the usage anchor refuses it, else None
        (the call overflows at once)."""
        if fixed_tokens <= self.limit:
            return self
        if self.guarded and fixed_tokens <= self.usable:
            return self.uncalibrated()
        return None

    def summarizer_budget(self) -> int | None:
        """The summariser's input budget when it differs from ``limit``: never below ``usable``."""
        return max(self.limit, self.usable) if self.guarded else None

    def over_budget(self, total: int) -> OverBudget:
        """A context of ``total`` over ``limit`` at the end of the call."""
        if not self.guarded:
            return OverBudget.OVERFLOW
        if total > self.usable:
            return OverBudget.RERUN_UNCALIBRATED
        return OverBudget.ANSWER_UNCALIBRATED
