"""The lab's charts: one altair theme, one colour per target for a whole study, chart builders that
take small, already aggregated polars frames, and offline export with vl-convert.

- `use_theme()` enables the print theme; `enable_pdf_renderer()` makes notebook charts survive every
  nbconvert export (SVG + PNG + PDF mime bundle instead of Vega JSON/HTML).
- Text is drawn in Liberation Sans, which vl-convert carries inside its own binary: the same text
  metrics on every machine, offline, and the font is embedded (subset) in every PDF, so the text stays
  real, searchable vector text.
- Builders never aggregate millions of rows in Vega: do it in polars (`moving_average`,
  `downsample_time`); the builders downsample per line themselves as a last guard.
- `save_chart` renders the spec once to SVG and derives PDF and PNG from that SVG: the same chart gives
  the same SVG and PNG bytes; the PDF has the same content and size, but vl-convert orders a few
  objects by a randomly seeded hash map, so its bytes can differ (the Typst paper built from it is
  byte-identical: Typst rewrites embedded PDFs).
- `figure(chart, caption)` displays a chart as a numbered, captioned figure for the PDF export
  (`pgfslab.paper.pdf_export`).
"""

from __future__ import annotations

import base64
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import altair as alt
import polars as pl
import vl_convert as vlc

THEME = "pgfs"
RENDERER = "pgfs"
FONT = "Liberation Sans"  # bundled in vl-convert; viewers without it fall back along the stack
FONT_STACK = f"{FONT}, Arial, Helvetica, sans-serif"
MAX_ROWS = 100_000  # altair's inline-data guard, raised from 5,000 (per-second lines of long runs)

# Okabe & Ito (2008), colour-blind safe; yellow last (weak on white). Tableau 10 after eight targets.
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442"]
TABLEAU10 = [
    "#4E79A7",
    "#F28E2B",
    "#E15759",
    "#76B7B2",
    "#59A14F",
    "#EDC948",
    "#B07AA1",
    "#FF9DA7",
    "#9C755F",
    "#BAB0AC",
]
PALETTE = OKABE_ITO + TABLEAU10

WIDTH = 440  # view width in px; with axes a chart is ~480 px, ~A4 text width, so 1 px ~ 1 pt in print
TIME_TITLE = "time since start (s)"
TPS_TITLE = "throughput (tps)"


# --------------------------------------------------------------------------- theme and colours


def _theme() -> alt.theme.ThemeConfig:
    axis = {
        "labelFontSize": 10,
        "titleFontSize": 11,
        "titleFontWeight": "normal",
        "titleColor": "#222222",
        "labelColor": "#333333",
        "domainColor": "#888888",
        "tickColor": "#888888",
        "gridColor": "#e6e6e6",
        "gridWidth": 0.6,
        "titlePadding": 6,
    }
    return {
        "config": {
            "font": FONT_STACK,
            "background": "white",
            "padding": 4,
            "view": {"stroke": None, "continuousWidth": WIDTH, "continuousHeight": 220},
            "title": {
                "fontSize": 13,
                "fontWeight": "bold",
                "anchor": "start",
                "offset": 8,
                "color": "#111111",
                "subtitleFontSize": 11,
                "subtitleColor": "#555555",
            },
            "axis": axis,  # type: ignore[typeddict-item]
            "header": {
                "labelFontSize": 11,
                "labelFontWeight": "bold",
                "labelColor": "#222222",
                "labelAnchor": "start",
                "labelPadding": 3,
                "titleFontSize": 11,
            },
            "legend": {
                "labelFontSize": 10,
                "titleFontSize": 10,
                "titleFontWeight": "normal",
                "orient": "bottom",
                "symbolStrokeWidth": 2.5,
                "labelLimit": 260,
            },
            "facet": {"spacing": 12},
            "line": {"strokeWidth": 1.6},
            "range": {"category": OKABE_ITO},
        }
    }


alt.theme.register(THEME, enable=False)(_theme)


def use_theme() -> None:
    """Enable the lab theme (print sizes, Liberation Sans, light grid, no view border) and raise
    altair's inline-row guard to MAX_ROWS (the builders downsample; see `downsample_time`)."""
    alt.theme.enable(THEME)
    alt.data_transformers.enable("default", max_rows=MAX_ROWS)


def target_colors(targets: Sequence[str], labels: dict[str, str] | None = None) -> alt.Scale:
    """One colour per target, the same in every figure of a study: the palette is assigned in sorted
    order of the study's distinct targets (not in order of appearance), so any subset of runs and any
    row order gives each target the same colour. Pass the full list of the study's targets. `labels`
    (target -> its label where that differs, e.g. 'zfs (zfs-fuse, userspace)') puts each label in the
    domain too, with its target's colour."""
    names = sorted({str(t) for t in targets})
    colour = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(names)}
    domain = list(names)
    for t, label in (labels or {}).items():
        if str(t) in colour and label not in colour:
            colour[label] = colour[str(t)]
            domain.append(label)
    return alt.Scale(domain=domain, range=[colour[d] for d in domain])


def _color_scale(df: pl.DataFrame, field: str, scale: alt.Scale | None) -> alt.Scale:
    """The given scale, checked to cover every value of `field` (else colours would silently shift)."""
    if scale is None:
        return target_colors(df[field].cast(pl.Utf8).unique().to_list())
    domain = scale.to_dict().get("domain")
    if isinstance(domain, list):
        missing = sorted(set(df[field].cast(pl.Utf8).unique().to_list()) - {str(d) for d in domain})
        if missing:
            raise ValueError(
                f"colour field {field!r} has values outside the colour scale's domain {domain}: "
                f"{missing} (build the scale from the same column with target_colors)"
            )
    return scale


# --------------------------------------------------------------------------- polars helpers


def _keys(by: str | Sequence[str] | None) -> list[str]:
    return [by] if isinstance(by, str) else list(by or [])


def _time_ints(time: str, dtype: pl.DataType) -> tuple[pl.Expr, int]:
    """The time column as an integer expression and the multiplier for seconds."""
    if dtype.is_temporal():
        return pl.col(time).dt.epoch("us"), 1_000_000
    return (pl.col(time).cast(pl.Float64) * 1_000_000).round().cast(pl.Int64), 1_000_000


def moving_average(
    df: pl.DataFrame,
    value: str,
    window_s: float = 15,
    by: str | Sequence[str] | None = None,
    *,
    time: str = "t_s",
    name: str | None = None,
) -> pl.DataFrame:
    """Add the **trailing** time-based moving average of `value` per group, `<value>_ma<window_s>`.

    At time t the mean covers the samples with t - window_s < time <= t of the same group (a window of
    `window_s` seconds ending at the sample, so 15 samples at 1 Hz). The first samples of a run average
    what exists so far (fewer than window_s samples); nulls are skipped; gaps in time shrink the
    window's sample count instead of reaching back further. `time` is seconds (numeric) or a
    datetime column. Rows come back sorted by group and time.
    """
    keys = _keys(by)
    t, per_s = _time_ints(time, df.schema[time])
    ma = pl.col(value).cast(pl.Float64).rolling_mean_by(t, window_size=f"{round(window_s * per_s)}i")
    out_name = name or f"{value}_ma{window_s:g}"
    return df.sort([*keys, time]).with_columns((ma.over(keys) if keys else ma).alias(out_name))


def downsample_time(
    df: pl.DataFrame,
    time_col: str,
    value_cols: str | Sequence[str],
    max_points: int,
    by: str | Sequence[str] | None = None,
) -> pl.DataFrame:
    """Keep at most `max_points` rows per group, preserving the shape of each value column.

    Groups with at most `max_points` rows are returned unchanged. Larger groups are cut into
    `max_points // (2 * len(value_cols))` equal-width time buckets, and in each bucket only the rows
    holding the minimum and the maximum of every value column are kept (min/max decimation): spikes
    and dips survive, which a mean per bucket would flatten. Other columns ride along with the kept
    rows. Rows come back sorted by group and time.
    """
    values = [value_cols] if isinstance(value_cols, str) else list(value_cols)
    if max_points < 2 * len(values):
        raise ValueError(f"max_points must be >= {2 * len(values)} (a min and a max per value column)")
    keys = _keys(by)
    n_buckets = max_points // (2 * len(values))
    t, _ = _time_ints(time_col, df.schema[time_col])

    def over(e: pl.Expr, extra: list[str] | None = None) -> pl.Expr:
        k = keys + (extra or [])
        return e.over(k) if k else e

    lo, span = over(t.min()), over(t.max()) - over(t.min())
    bucket = (
        pl.when(span > 0)
        .then(((t - lo).cast(pl.Float64) / span * n_buckets).floor())
        .otherwise(0)
        .clip(0, n_buckets - 1)
        .cast(pl.Int64)
    )
    work = (
        df.sort([*keys, time_col])
        .with_row_index("_row")
        .with_columns(over(pl.len()).alias("_n"), bucket.alias("_bucket"))
    )
    keep = pl.col("_n") <= max_points
    for v in values:
        for arg in (pl.col(v).arg_min(), pl.col(v).arg_max()):
            keep = keep | (pl.col("_row") == over(pl.col("_row").get(arg), ["_bucket"]))
    return work.filter(keep).drop("_row", "_n", "_bucket")


# --------------------------------------------------------------------------- builders


def _auto_detail(df: pl.DataFrame, detail: str | None) -> str | None:
    if detail != "auto":
        return detail
    return next((c for c in ("run_id", "repeat") if c in df.columns), None)


def _titled(chart: Any, title: str | None, subtitle: str | None = None) -> Any:
    if title is None:
        return chart
    return chart.properties(title=alt.Title(title, subtitle=subtitle) if subtitle else title)


def _one_color_per_panel(df: pl.DataFrame, facet: str, color: str) -> bool:
    return facet == color or int(df.group_by(facet).agg(pl.col(color).n_unique())[color].max() or 0) <= 1


def cell_panels(
    df: pl.DataFrame, row: str = "target_label", column: str = "clients", unit: str = "clients"
) -> tuple[pl.DataFrame, int]:
    """Label each row with its panel, `<row> · <column> <unit>`, so a wrapped facet lays out one row
    of panels per `row` value and one column per `column` value (runs of different client counts
    are different populations and must not share a panel). Returns the frame and the column count."""
    n_cols = max(1, df[column].n_unique())
    width = len(str(df[column].max()))
    count = pl.col(column).cast(pl.Utf8).str.pad_start(width, " ")  # so labels sort 1, 4, 16 (as facets do)
    noun = pl.when(pl.col(column) == 1).then(pl.lit(unit.removesuffix("s"))).otherwise(pl.lit(unit))
    return df.with_columns(pl.concat_str([pl.col(row), pl.lit(" · "), count, pl.lit(" "), noun]).alias("panel")), n_cols


def panel_labels(
    df: pl.DataFrame,
    parts: Sequence[tuple[str, str]] = (("target_label", ""), ("workload", ""), ("clients", " clients")),
    name: str = "panel",
    keep_first: bool = True,
) -> pl.DataFrame:
    """Label each row with its panel from the `(column, suffix)` parts that vary in the frame (the
    first part is always kept), joined by " · ": `ext4 · dirty-1gb` when the study varies targets and
    workloads but not clients. Numeric parts are padded so that labels sort numerically."""
    exprs = []
    for i, (col, suffix) in enumerate(parts):
        if col not in df.columns or (df[col].n_unique() <= 1 and not (keep_first and i == 0)):
            continue
        e = pl.col(col).cast(pl.Utf8)
        if df.schema[col].is_numeric():
            e = e.str.pad_start(len(str(df[col].max())), " ")
            if suffix.endswith("s"):  # 1 client, 4 clients
                suffix_e = pl.when(pl.col(col) == 1).then(pl.lit(suffix[:-1])).otherwise(pl.lit(suffix))
                exprs.append(pl.concat_str([e, suffix_e]))
                continue
        exprs.append(pl.concat_str([e, pl.lit(suffix)]) if suffix else e)
    return df.with_columns(pl.concat_str(exprs, separator=" · ").alias(name) if exprs else pl.lit("all").alias(name))


def throughput_small_multiples(
    df: pl.DataFrame,
    *,
    time: str = "t_s",
    value: str = "tps",
    smooth: str = "tps_ma15",
    facet: str = "target",
    color_scale: alt.Scale | None = None,
    title: str | None = None,
    color: str | None = None,
    detail: str | None = "auto",
    columns: int = 1,
    width: int = WIDTH,
    panel_height: int = 80,
    max_points_per_line: int = 1200,
    y_title: str = TPS_TITLE,
) -> alt.FacetChart:
    """Per-second throughput (thin, light) and its moving average (bold), one panel per `facet` value.

    All panels share one y scale (and x scale), so heights compare across targets. Each repeat is
    its own line (`detail`: "auto" picks `run_id`, else `repeat`, if present). The line colour comes
    from `color` (default: `target` if the frame has it, else `facet`) through `color_scale`
    (build it with `target_colors` from the study's targets). Panels wrap after `columns`.
    """
    color = color or ("target" if "target" in df.columns else facet)
    detail = _auto_detail(df, detail)
    scale = _color_scale(df, color, color_scale)
    cols = list(dict.fromkeys(c for c in (facet, color, detail, time, value, smooth) if c))
    line_keys = list(dict.fromkeys(c for c in (facet, color, detail) if c))
    data = downsample_time(df.select(cols), time, [value, smooth], max_points_per_line, by=line_keys)
    legend = None if _one_color_per_panel(data, facet, color) else alt.Legend(title=None)
    enc: dict[str, Any] = {
        "x": alt.X(f"{time}:Q", title=TIME_TITLE, scale=alt.Scale(nice=False)),
        "color": alt.Color(f"{color}:N", scale=scale, legend=legend),
    }
    if detail:
        enc["detail"] = alt.Detail(f"{detail}:N")
    thin = alt.Chart().mark_line(strokeWidth=0.7, opacity=0.4).encode(y=alt.Y(f"{value}:Q", title=y_title), **enc)
    bold = alt.Chart().mark_line(strokeWidth=2.2).encode(y=alt.Y(f"{smooth}:Q", title=y_title), **enc)
    panel_w = (width - 12 * (columns - 1)) // columns
    layered = alt.layer(thin, bold, data=data).properties(width=panel_w, height=panel_height)
    return _titled(
        layered.facet(facet=alt.Facet(f"{facet}:N", title=None, sort="ascending"), columns=columns).resolve_scale(
            x="shared", y="shared"
        ),
        title,
    )


# seed 002's gnuplot figures: total QPS and its read, write and other parts, one colour each
QPS_COLORS = {"QPS (total)": "#222222", "qps: read": "#1f77b4", "qps: write": "#d62728", "qps: other": "#2ca02c"}


def qps_small_multiples(
    df: pl.DataFrame,
    *,
    facet: str = "panel",
    columns: int = 1,
    title: str | None = None,
    width: int = WIDTH,
    panel_height: int = 90,
    max_points_per_line: int = 1200,
) -> alt.FacetChart:
    """Per-second queries of one run per panel, one line per `series` (QPS_COLORS: total, read, write,
    other), as seed 002 drew them. `df`: `facet`, `series`, t_s, qps. All panels share one y scale."""
    data = downsample_time(
        df.select(facet, "series", "t_s", "qps"), "t_s", ["qps"], max_points_per_line, by=[facet, "series"]
    )
    chart = (
        alt.Chart()
        .mark_line(strokeWidth=1.2)
        .encode(
            x=alt.X("t_s:Q", title=TIME_TITLE, scale=alt.Scale(nice=False)),
            y=alt.Y("qps:Q", title="queries per second"),
            color=alt.Color(
                "series:N",
                scale=alt.Scale(domain=list(QPS_COLORS), range=list(QPS_COLORS.values())),
                legend=alt.Legend(title=None, orient="top"),
            ),
        )
    )
    panel_w = (width - 12 * (columns - 1)) // columns
    layered = alt.layer(chart, data=data).properties(width=panel_w, height=panel_height)
    return _titled(
        layered.facet(facet=alt.Facet(f"{facet}:N", title=None, sort="ascending"), columns=columns).resolve_scale(
            x="shared", y="shared"
        ),
        title,
    )


def _decade_axis(lo: float | None, hi: float | None) -> Any:
    """A log axis labelled at powers of ten only (Vega's default crowds small panels with 2, 4, 20, 40...)."""
    import math

    if lo is None or hi is None or not lo > 0 or not hi > 0:
        return alt.Axis(format="~g")
    decades = [10.0**k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
    return alt.Axis(values=decades, format="~g")


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
    resolve_y: str = "shared",
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
    scale = _color_scale(df, group, color_scale)
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
        y_axis = _decade_axis(positive.min(), positive.max())
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
        facet = (
            alt.Facet(f"{column}:N", title=None, header=alt.Header(labelAnchor="middle"), sort=None)
            if columns
            else alt.Column(f"{column}:N", title=None, header=alt.Header(labelAnchor="middle"), sort=None)
        )
        faceted = chart.facet(facet=facet, columns=n_cols) if columns else chart.facet(column=facet)
        resolve = {"y": resolve_y, "x": "independent"} | ({"xOffset": "independent"} if group != x else {})
        return _titled(faceted.resolve_scale(**resolve), title)
    return _titled(chart, title)


def percentile_bands(
    df: pl.DataFrame,
    time: str,
    p_cols: Sequence[str] = ("p25", "p50", "p75", "p95", "p99"),
    facet: str = "target",
    *,
    color: str | None = None,
    color_scale: alt.Scale | None = None,
    median: str | None = None,
    y_title: str = "latency (ms)",
    title: str | None = None,
    log_y: bool = False,
    width: int = WIDTH,
    panel_height: int = 80,
    max_points: int = 1200,
    columns: int = 1,
    subtitle: str | None = None,
    band_title: str = "percentile band",
) -> alt.FacetChart:
    """Latency percentiles over time as a fan: a band between each pair of neighbouring percentile
    columns (`p_cols`, ascending), more opaque near the median, and the median (`median`, default
    "p50" or the middle column) as a line. One panel per `facet` value, sharing one y scale, wrapped
    after `columns` panels (1: stacked)."""
    p_cols = list(p_cols)
    if len(p_cols) < 2:
        raise ValueError("percentile_bands needs at least two percentile columns")
    median = median or ("p50" if "p50" in p_cols else p_cols[len(p_cols) // 2])
    color = color or ("target" if "target" in df.columns else facet)
    scale = _color_scale(df, color, color_scale)
    keys = list(dict.fromkeys([facet, color]))
    base = downsample_time(df.select(*keys, time, *p_cols), time, [p_cols[0], p_cols[-1]], max_points, by=keys)
    mid = p_cols.index(median) if median in p_cols else len(p_cols) // 2
    opacities = [0.45, 0.25, 0.13, 0.07]
    bands, band_names, band_opacity = [], [], []
    for i, (lo, hi) in enumerate(zip(p_cols, p_cols[1:])):
        name = f"{lo}–{hi}"
        band_names.append(name)
        band_opacity.append(opacities[min(min(abs(i - mid), abs(i + 1 - mid)), len(opacities) - 1)])
        bands.append(
            base.select(
                *keys,
                time,
                pl.col(lo).alias("_lo"),
                pl.col(hi).alias("_hi"),
                pl.lit(name).alias("_band"),
                pl.lit(None, pl.Float64).alias("_median"),
            )
        )
    line = base.select(
        *keys,
        time,
        pl.lit(None, pl.Float64).alias("_lo"),
        pl.lit(None, pl.Float64).alias("_hi"),
        pl.lit(None, pl.Utf8).alias("_band"),
        pl.col(median).cast(pl.Float64).alias("_median"),
    )
    data = pl.concat([*bands, line], how="vertical_relaxed")
    y_scale = alt.Scale(type="log") if log_y else alt.Scale(zero=True)
    y_axis = (
        _decade_axis(base.select(p_cols).min_horizontal().min(), base.select(p_cols).max_horizontal().max())
        if log_y
        else alt.Undefined
    )
    x = alt.X(f"{time}:Q", title=TIME_TITLE, scale=alt.Scale(nice=False))
    fill = alt.Color(f"{color}:N", scale=scale, legend=None)
    area = (
        alt.Chart()
        .mark_area(interpolate="linear")
        .encode(
            x=x,
            y=alt.Y("_lo:Q", title=y_title, scale=y_scale, axis=y_axis),
            y2="_hi:Q",
            color=fill,
            opacity=alt.Opacity(
                "_band:N",
                scale=alt.Scale(type="ordinal", domain=band_names, range=band_opacity),
                legend=alt.Legend(title=band_title, symbolType="square"),
            ),
        )
        .transform_filter("datum._band != null")
    )
    med = (
        alt.Chart()
        .mark_line(strokeWidth=1.8)
        .encode(
            x=x,
            y=alt.Y("_median:Q", title=y_title, scale=y_scale, axis=y_axis),
            color=fill,
        )
        .transform_filter("datum._median != null")
    )
    panel_w = (width - 12 * (columns - 1)) // columns
    layered = alt.layer(area, med, data=data).properties(width=panel_w, height=panel_height)
    return _titled(
        layered.facet(facet=alt.Facet(f"{facet}:N", title=None, sort="ascending"), columns=columns).resolve_scale(
            x="shared", y="shared"
        ),
        title,
        subtitle or f"line: {median}",
    )


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
    scale = _color_scale(df, color, color_scale)
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
    return _titled(alt.layer(*layers).properties(width=width, height=height), title)


def timeline_with_windows(
    df: pl.DataFrame,
    time: str,
    value: str,
    series: str,
    facet: str,
    windows: pl.DataFrame | None = None,
    *,
    series_scale: alt.Scale | None = None,
    detail: str | None = None,
    columns: int = 1,
    y_title: str | None = None,
    title: str | None = None,
    subtitle: str | None = None,
    width: int = WIDTH,
    panel_height: int = 90,
    max_points_per_line: int = 1200,
    window_label: str = "checkpoint",
    marks: pl.DataFrame | None = None,
    mark_label: str = "snapshot",
) -> alt.FacetChart:
    """Lines of `value` over `time`, one per `series` value (e.g. meminfo's Dirty and Writeback;
    `detail` splits lines further, e.g. per repeat), one panel per `facet` value, all panels on one
    y scale; `windows` (columns `facet`, start_s, end_s) are shaded behind the lines (e.g.
    checkpoints: from the server log's `checkpoint starting` to `complete`), and a window with
    end_s == start_s is drawn as a dashed rule (an event known only to the second). `marks` (columns
    `facet`, at_s) are instants drawn as thin red rules (e.g. the snapshot schedule's creations)."""
    keys = list(dict.fromkeys(c for c in (facet, series, detail) if c))
    lines = downsample_time(df.select(*keys, time, value), time, [value], max_points_per_line, by=keys)
    lines = lines.with_columns(
        pl.lit("line").alias("_kind"), pl.lit(None, pl.Float64).alias("_x0"), pl.lit(None, pl.Float64).alias("_x1")
    )
    parts = [lines]
    if windows is not None and windows.height:
        w = windows.select(
            pl.col(facet),
            pl.col("start_s").cast(pl.Float64).alias("_x0"),
            pl.col("end_s").cast(pl.Float64).alias("_x1"),
        )
        parts.append(w.with_columns(pl.lit("window").alias("_kind")))
    has_marks = marks is not None and marks.height > 0
    if has_marks:
        m = marks.select(pl.col(facet), pl.col("at_s").cast(pl.Float64).alias("_x0"))
        parts.append(m.with_columns(pl.lit("mark").alias("_kind")))
    data = pl.concat(parts, how="diagonal_relaxed")
    scale = series_scale or alt.Scale(
        domain=sorted(df[series].unique().to_list()), range=PALETTE[: df[series].n_unique()]
    )
    x = alt.X(f"{time}:Q", title=TIME_TITLE, scale=alt.Scale(nice=False))
    enc: dict[str, Any] = {"color": alt.Color(f"{series}:N", scale=scale, legend=alt.Legend(title=None))}
    if detail:
        enc["detail"] = alt.Detail(f"{detail}:N")
    layers = []
    if windows is not None and windows.height:
        layers.append(
            alt.Chart()
            .mark_rect(color="#999999", opacity=0.22)
            .encode(x=alt.X("_x0:Q", title=TIME_TITLE), x2="_x1:Q")
            .transform_filter("datum._kind == 'window' && datum._x1 > datum._x0")
        )
        layers.append(
            alt.Chart()
            .mark_rule(color="#777777", strokeDash=[3, 2], strokeWidth=1)
            .encode(x=alt.X("_x0:Q", title=TIME_TITLE))
            .transform_filter("datum._kind == 'window' && datum._x1 <= datum._x0")
        )
    if has_marks:
        layers.append(
            alt.Chart()
            .mark_rule(color="#d62728", strokeWidth=0.8, opacity=0.7)
            .encode(x=alt.X("_x0:Q", title=TIME_TITLE))
            .transform_filter("datum._kind == 'mark'")
        )
    layers.append(
        alt.Chart()
        .mark_line(strokeWidth=1.3)
        .encode(x=x, y=alt.Y(f"{value}:Q", title=y_title or value), **enc)
        .transform_filter("datum._kind == 'line'")
    )
    panel_w = (width - 12 * (columns - 1)) // columns
    layered = alt.layer(*layers, data=data).properties(width=panel_w, height=panel_height)
    said = [f"grey: {window_label} windows"] if windows is not None and windows.height else []
    said += [f"red: {mark_label}s"] if has_marks else []
    sub = subtitle if subtitle is not None else ("; ".join(said) or None)
    return _titled(
        layered.facet(facet=alt.Facet(f"{facet}:N", title=None, sort="ascending"), columns=columns).resolve_scale(
            x="shared", y="shared"
        ),
        title,
        sub,
    )


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

    def panel(part: pl.DataFrame, panel_title: str | None) -> alt.LayerChart:
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
        return _titled(panel(data, None), title)
    panels = [panel(data.filter(pl.col(facet) == f), str(f)) for f in data[facet].unique(maintain_order=True).to_list()]
    return _titled(alt.vconcat(*panels, spacing=14).resolve_scale(x="independent", y="independent"), title)


# --------------------------------------------------------------------------- rendering and export


def _vl_version() -> str:
    """The Vega-Lite version altair writes, in vl-convert's spelling (e.g. "6.4")."""
    major_minor = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    known = vlc.get_vegalite_versions()
    return major_minor if major_minor in known else known[-1]


@contextmanager
def _lab_theme(theme: str | None) -> Iterator[None]:
    if theme is None:
        yield
        return
    previous = alt.theme.active
    alt.theme.enable(theme)
    try:
        yield
    finally:
        alt.theme.enable(previous)


def chart_spec(chart: alt.TopLevelMixin, theme: str | None = THEME) -> dict[str, Any]:
    """The chart's Vega-Lite dict with the lab theme applied (None: whatever theme is active)."""
    with _lab_theme(theme), alt.data_transformers.enable("default", max_rows=MAX_ROWS):
        return chart.to_dict()


def _svg(spec: dict[str, Any]) -> str:
    """The spec's SVG, by vl-convert."""
    return vlc.vegalite_to_svg(spec, vl_version=_vl_version())


def _write(path: Path, data: bytes) -> None:
    """Atomic write: a half-written figure never has the final name."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, path)


def save_chart(
    chart: alt.TopLevelMixin,
    basepath: str | Path,
    formats: Sequence[str] = ("svg", "pdf", "png"),
    scale: float = 2,
    *,
    theme: str | None = THEME,
) -> dict[str, Path]:
    """Write `basepath.<fmt>` for each format ("svg", "pdf", "png", "json" = the Vega-Lite spec),
    offline with vl-convert, and return {format: path}. The chart is rendered once to SVG; PDF
    (vector, fonts embedded) and PNG (`scale` x pixel density) are converted from that SVG, so the
    same chart gives the same SVG and PNG bytes (PDF: same content; object order may vary). The lab theme is applied unless `theme` says otherwise."""
    import json

    basepath = Path(basepath)
    basepath.parent.mkdir(parents=True, exist_ok=True)
    spec = chart_spec(chart, theme)
    svg = _svg(spec)
    render = {
        "svg": lambda: svg.encode(),
        "pdf": lambda: vlc.svg_to_pdf(svg),
        "png": lambda: vlc.svg_to_png(svg, scale=scale),
        "json": lambda: json.dumps(spec, indent=1, sort_keys=True).encode(),
    }
    paths: dict[str, Path] = {}
    for fmt in formats:
        if fmt not in render:
            raise ValueError(f"unknown chart format {fmt!r}; use one of {sorted(render)}")
        path = basepath.with_name(f"{basepath.name}.{fmt}")
        _write(path, render[fmt]())
        paths[fmt] = path
    return paths


def _svg_size(svg: str) -> tuple[float, float] | None:
    m = re.search(r'<svg[^>]*\bwidth="([\d.]+)"[^>]*\bheight="([\d.]+)"', svg)
    return (float(m.group(1)), float(m.group(2))) if m else None


def mimebundle(
    spec: dict[str, Any], formats: Sequence[str] = ("svg", "png", "pdf"), scale: float = 2
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Jupyter mime bundle (data, metadata) with static renderings of a Vega-Lite spec."""
    svg = _svg(spec)
    data: dict[str, Any] = {"text/plain": "<altair chart>"}
    meta: dict[str, Any] = {}
    if "svg" in formats:
        data["image/svg+xml"] = svg
    if "png" in formats:
        data["image/png"] = base64.b64encode(vlc.svg_to_png(svg, scale=scale)).decode()
        size = _svg_size(svg)
        if size:  # show the 2x PNG at its natural size
            meta["image/png"] = {"width": round(size[0]), "height": round(size[1])}
    if "pdf" in formats:
        data["application/pdf"] = base64.b64encode(vlc.svg_to_pdf(svg)).decode()
    return data, meta


def _renderer(spec: dict[str, Any], **options: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return mimebundle(spec, formats=options.get("formats", ("svg", "png", "pdf")), scale=options.get("scale", 2))


alt.renderers.register(RENDERER, _renderer)


def enable_pdf_renderer(formats: Sequence[str] = ("svg", "png", "pdf"), scale: float = 2) -> None:
    """Display notebook charts as static SVG + PNG (+ PDF) made by vl-convert instead of Vega JSON/HTML,
    so they survive nbconvert's Markdown/HTML/LaTeX/Typst exports (the default renderer's output
    silently vanishes from a PDF). Not interactive."""
    alt.renderers.enable(RENDERER, formats=tuple(formats), scale=scale)


def figure(chart: alt.TopLevelMixin | str | Path, caption: str, label: str | None = None) -> None:
    """Display a numbered figure with a caption, for `pgfslab.paper.pdf_export` (Typst: "Figure N: caption").

    `chart` is an altair chart (rendered with the lab theme into the cell's output) or the path of a
    saved figure file (emitted as a Markdown image, `![caption](path){#label}`). `caption` is Markdown.
    `label` (e.g. "fig-throughput") lets the text refer to it as `@fig-throughput`.
    """
    from IPython.display import Markdown, display

    if isinstance(chart, (str, Path)):
        target = Path(chart).as_posix()
        target = f"<{target}>" if " " in target else target
        display(Markdown(f"![{caption}]({target})" + (f"{{#{label}}}" if label else "")))
        return
    data, meta = mimebundle(chart_spec(chart))
    meta["pgfs"] = {"caption": caption, **({"label": label} if label else {})}
    display(data, raw=True, metadata=meta)


def show_saved(paths: dict[str, Path], caption: str, label: str | None = None) -> None:
    """Display a figure written by `save_chart` (its SVG, PNG and PDF files, as one mime bundle) as a
    numbered figure with a caption, like `figure(chart, ...)` but without rendering the chart again."""
    from IPython.display import display

    data: dict[str, Any] = {"text/plain": f"<figure {Path(paths.get('svg') or next(iter(paths.values()))).name}>"}
    meta: dict[str, Any] = {"pgfs": {"caption": caption, **({"label": label} if label else {})}}
    if "svg" in paths:
        svg = Path(paths["svg"]).read_text()
        data["image/svg+xml"] = svg
        size = _svg_size(svg)
        if size and "png" in paths:
            meta["image/png"] = {"width": round(size[0]), "height": round(size[1])}
    if "png" in paths:
        data["image/png"] = base64.b64encode(Path(paths["png"]).read_bytes()).decode()
    if "pdf" in paths:
        data["application/pdf"] = base64.b64encode(Path(paths["pdf"]).read_bytes()).decode()
    display(data, raw=True, metadata=meta)
