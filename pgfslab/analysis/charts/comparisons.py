"""Chart builders that compare configurations: grouped bars with error bars, scaling curves,
dots with intervals per comparison."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import polars as pl

from pgfslab.analysis.charts.layout import decade_axis, titled
from pgfslab.analysis.charts.theme import PALETTE, WIDTH, alt, checked_color_scale
from pgfslab.analysis.scalar import number


def grouped_bars_with_error(
    df: pl.DataFrame,
    x: str,
    y: str,
    group: str,
    err_low: str | None = None,
    err_high: str | None = None,
    color_scale: alt.Scale | None = None,
    *,
    column: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    title: str | None = None,
    width: int = WIDTH,
    height: int = 200,
    resolve_y: Literal["shared", "independent"] = "shared",
    columns: int | None = None,
    log_y: bool = False,
    x_sort: str | None = "ascending",
) -> alt.TopLevelMixin:
    """Grouped bars: one group of bars per `x` value (e.g. client count), one bar per `group` value
    (e.g. target) coloured through `color_scale`, with error bars from `err_low` to `err_high`
    (e.g. a confidence interval); with x == group, one plain bar per value. Optional `column` facet
    (e.g. workload) with a shared y scale (`resolve_y="independent"`: each panel its own, for
    quantities of different magnitude), wrapped after `columns` panels (default: all in one row).
    `log_y`: a log y axis, with dots instead of bars (a log axis has no zero to stand on);
    `x_sort=None` keeps the frame's order of x values."""
    scale = checked_color_scale(df, group, color_scale)
    x_enc = alt.X(
        f"{x}:O" if df.schema[x].is_numeric() else f"{x}:N",
        title=x_title if x_title is not None else x,
        axis=alt.Axis(labelAngle=0),
        sort=x_sort,
    )
    enc: dict[str, Any] = {"x": x_enc}
    if group != x:
        enc["xOffset"] = alt.XOffset(f"{group}:N", scale=alt.Scale(paddingInner=0.08))
    y_title = y_title or y
    y_scale: Any = alt.Undefined
    mark = alt.Chart().mark_bar()
    y_axis: Any = alt.Undefined
    if log_y:  # a log axis has no zero for bars to stand on: dots instead
        y_scale = alt.Scale(type="log")
        positive = df.filter(pl.col(y) > 0)[y]
        y_axis = decade_axis(number(positive.min()), number(positive.max()))
        mark = alt.Chart().mark_point(filled=True, size=55, opacity=0.95)
    bars = mark.encode(
        **enc,
        y=alt.Y(f"{y}:Q", title=y_title, scale=y_scale, axis=y_axis),
        color=alt.Color(f"{group}:N", scale=scale, legend=alt.Legend(title=None)),
    )
    layers: list[alt.Chart] = [bars]
    if err_low and err_high:
        layers.append(
            alt.Chart()
            .mark_errorbar(ticks=alt.MarkConfig(size=10), thickness=1.1, color="#222222")
            .encode(**enc, y=alt.Y(f"{err_low}:Q", title=y_title, scale=y_scale), y2=alt.Y2(f"{err_high}:Q"))
        )
    cols = list(dict.fromkeys(c for c in (column, x, group, y, err_low, err_high) if c))
    n_cols = min(columns or 10**6, df[column].n_unique()) if column else 1
    gap = 12 if resolve_y == "shared" else 40
    chart = alt.layer(*layers, data=df.select(cols)).properties(
        width=(width - gap * (n_cols - 1)) // n_cols, height=height
    )
    if column:
        header = alt.Header(labelAnchor="middle")
        faceted = (
            chart.facet(facet=alt.Facet(f"{column}:N", title=None, header=header, sort=None), columns=n_cols)
            if columns
            else chart.facet(column=alt.Column(f"{column}:N", title=None, header=header, sort=None))
        )
        resolved = (  # one call: a second resolve_scale replaces the first
            faceted.resolve_scale(y=resolve_y, x="independent", xOffset="independent")
            if group != x
            else faceted.resolve_scale(y=resolve_y, x="independent")
        )
        return titled(resolved, title)
    return titled(chart, title)


def scaling_curve(
    df: pl.DataFrame,
    x: str,
    y: str,
    color: str,
    reference_lines: Sequence[tuple[float, str]] = (),
    *,
    color_scale: alt.Scale | None = None,
    err_low: str | None = None,
    err_high: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    title: str | None = None,
    log_x: bool = False,
    width: int = WIDTH,
    height: int = 240,
) -> alt.LayerChart:
    """Lines with points of `y` over `x` (e.g. tps over client count), one line per `color` value,
    optional error bars, and dashed vertical reference rules with labels (e.g. `[(2, "CPUs")]`)."""
    scale = checked_color_scale(df, color, color_scale)
    x_title, y_title = x_title or x, y_title or y
    x_scale = alt.Scale(type="log", base=2) if log_x else alt.Scale(zero=False)
    ticks = sorted({float(v) for v in df[x].drop_nulls().to_list()} | {float(v) for v, _ in reference_lines})
    x_enc = alt.X(
        f"{x}:Q", title=x_title, scale=x_scale, axis=alt.Axis(values=ticks) if len(ticks) <= 12 else alt.Undefined
    )
    cols = list(dict.fromkeys(c for c in (x, y, color, err_low, err_high) if c))
    data = df.select(cols).sort([color, x])
    layers: list[alt.Chart] = [
        alt.Chart(data)
        .mark_line(point=alt.OverlayMarkDef(size=36))
        .encode(
            x=x_enc,
            y=alt.Y(f"{y}:Q", title=y_title),
            color=alt.Color(f"{color}:N", scale=scale, legend=alt.Legend(title=None)),
        )
    ]
    if err_low and err_high:
        layers.append(
            alt.Chart(data)
            .mark_errorbar(ticks=True, thickness=1)
            .encode(
                x=x_enc,
                y=alt.Y(f"{err_low}:Q", title=y_title),
                y2=alt.Y2(f"{err_high}:Q"),
                color=alt.Color(f"{color}:N", scale=scale, legend=None),
            )
        )
    if reference_lines:
        refs = pl.DataFrame({x: [float(v) for v, _ in reference_lines], "_label": [lbl for _, lbl in reference_lines]})
        rule = alt.Chart(refs).encode(x=x_enc)
        layers.append(rule.mark_rule(strokeDash=[4, 3], color="#555555", strokeWidth=1))
        layers.append(
            rule.mark_text(align="left", baseline="top", dx=4, dy=2, fontSize=10, color="#333333").encode(
                y=alt.value(0), text="_label:N"
            )
        )
    return titled(alt.layer(*layers).properties(width=width, height=height), title)


def comparison_dots(
    df: pl.DataFrame,
    value: str,
    item: str,
    source: str,
    facet: str | None = None,
    *,
    source_scale: alt.Scale | None = None,
    x_title: str | None = None,
    title: str | None = None,
    log_x: bool = True,
    width: int = WIDTH,
    row_height: int = 15,
    label_width: int = 210,
) -> alt.TopLevelMixin:
    """Dot plot: one row per `item`, one dot per `source` (e.g. this lab vs published) at `value`;
    with `facet`, one panel per facet value stacked, each titled with it and with its own x scale
    and height (different metrics, different numbers of items); log x by default (published and
    local numbers can be orders of magnitude apart; values <= 0 are left out)."""
    cols = list(dict.fromkeys(c for c in (facet, item, source, value) if c))
    data = df.select(cols).filter(pl.col(value).is_not_null() & ((pl.col(value) > 0) if log_x else pl.lit(True)))
    scale = source_scale or alt.Scale(
        domain=data[source].unique(maintain_order=True).to_list(), range=PALETTE[: max(1, data[source].n_unique())]
    )

    def panel(part: pl.DataFrame, panel_title: str | None) -> alt.LayerChart | alt.FacetChart:
        enc = {
            "x": alt.X(
                f"{value}:Q", title=x_title or value, scale=alt.Scale(type="log") if log_x else alt.Scale(zero=False)
            ),
            "y": alt.Y(f"{item}:N", title=None, sort=None, axis=alt.Axis(labelLimit=label_width)),
            "color": alt.Color(f"{source}:N", scale=scale, legend=alt.Legend(title=None)),
            "shape": alt.Shape(f"{source}:N", legend=None),
        }
        dots = alt.Chart(part).mark_point(filled=True, size=55, opacity=0.9).encode(**enc)
        chart = alt.layer(dots).properties(
            width=width - label_width - 10, height=max(30, row_height * part[item].n_unique())
        )
        return chart.properties(title=alt.Title(panel_title, fontSize=11)) if panel_title else chart

    if not facet:
        return titled(panel(data, None), title)
    panels = [panel(data.filter(pl.col(facet) == f), str(f)) for f in data[facet].unique(maintain_order=True).to_list()]
    return titled(alt.vconcat(*panels, spacing=14).resolve_scale(x="independent", y="independent"), title)
