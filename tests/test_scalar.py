"""pgfslab.analysis.scalar: polars scalars as the numbers the code means."""

from __future__ import annotations

from decimal import Decimal

import polars as pl
import pytest

from pgfslab.analysis.scalar import number, whole


def test_numbers_from_a_column() -> None:
    s = pl.Series([3, 1, None, 7])
    assert number(s.max()) == 7.0 and whole(s.min()) == 1
    assert number(pl.Series([], dtype=pl.Float64).max()) is None
    assert whole(pl.Series([], dtype=pl.Int64).max(), default=-1) == -1
    assert number(Decimal("2.5")) == 2.5 and whole(2.9) == 2


@pytest.mark.parametrize("value", ["7", True, [1], b"1"])
def test_what_is_not_a_number_is_refused(value: object) -> None:
    with pytest.raises(TypeError, match="a number expected"):
        number(value)
