"""A polars scalar (what `Series.max()`, `.median()` or `.item()` give, typed as any Python literal) as the number
the code means: a float or an int, None where the column had nothing; anything else is a bug, said loudly."""

from __future__ import annotations

from decimal import Decimal


def number(value: object) -> float | None:
    """A numeric scalar as a float; None stays None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise TypeError(f"a number expected, got {type(value).__name__} {value!r}")
    return float(value)


def whole(value: object, default: int = 0) -> int:
    """A numeric scalar as an int (truncated as `int()` truncates); None is `default`."""
    n = number(value)
    return default if n is None else int(n)
