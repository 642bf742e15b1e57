"""Small pieces the chart builders share: titles, axes, which column separates lines."""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from pgfslab.analysis.charts.theme import alt


def auto_detail(df: pl.DataFrame, detail: str | None) -> str | None:
    """The column that makes each repeat its own line: `detail` as given, or for "auto" `run_id`, else `repeat`."""
    if detail != "auto":
        return detail
    return next((c for c in ("run_id", "repeat") if c in df.columns), None)


def titled(chart: Any, title: str | None, subtitle: str | None = None) -> Any:
    """The chart with its title (and subtitle), or unchanged without one."""
    if title is None:
        return chart
    return chart.properties(title=alt.Title(title, subtitle=subtitle) if subtitle else title)


def one_color_per_panel(df: pl.DataFrame, facet: str, color: str) -> bool:
    """Whether each panel holds one colour only (then the panel's title names it and no legend is needed)."""
    return facet == color or bool((df.group_by(facet).agg(pl.col(color).n_unique())[color] <= 1).all())


def decade_axis(lo: float | None, hi: float | None) -> Any:
    """A log axis labelled at powers of ten only (Vega's default crowds small panels with 2, 4, 20, 40...)."""
    if lo is None or hi is None or not lo > 0 or not hi > 0:
        return alt.Axis(format="~g")
    decades = [10.0**k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
    return alt.Axis(values=decades, format="~g")
