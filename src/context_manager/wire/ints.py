"""The fixed-width integer ranges of the wire types, and unsigned 64-bit saturating arithmetic.

Counts, sizes and budgets are unsigned 64-bit integers and timestamps signed 64-bit ones in the
reference; Python integers are unbounded, so range checks and saturation are spelled out here.
"""

from __future__ import annotations

U64_MAX = (1 << 64) - 1
I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1


def saturating_sub(a: int, b: int) -> int:
    """``a - b``, or 0 where an unsigned subtraction would wrap."""
    return a - b if a > b else 0


def saturating_mul(a: int, b: int) -> int:
    """``a * b``, or ``U64_MAX`` where it would overflow."""
    return min(a * b, U64_MAX)


def saturating_add(*terms: int) -> int:
    """The sum of ``terms``, or ``U64_MAX`` where it would overflow."""
    return min(sum(terms), U64_MAX)
