"""Chart builders over time: per-second throughput and queries per panel, latency percentile bands,
a timeline with marked windows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from pgfslab.analysis.charts.frames import downsample_time
from pgfslab.analysis.charts.layout import auto_detail, decade_axis, one_color_per_panel, titled
from pgfslab.analysis.charts.theme import PALETTE, TIME_TITLE, TPS_TITLE, WIDTH, alt, checked_color_scale
from pgfslab.analysis.scalar import number


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
    detail = auto_detail(df, detail)
    scale = checked_color_scale(df, color, color_scale)
    cols = list(dict.fromkeys(c for c in (facet, color, detail, time, value, smooth) if c))
    line_keys = list(dict.fromkeys(c for c in (facet, color, detail) if c))
    data = downsample_time(df.select(cols), time, [value, smooth], max_points_per_line, by=line_keys)
    legend = None if one_color_per_panel(data, facet, color) else alt.Legend(title=None)
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
    return titled(
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
    return titled(
        layered.facet(facet=alt.Facet(f"{facet}:N", title=None, sort="ascending"), columns=columns).resolve_scale(
            x="shared", y="shared"
        ),
        title,
    )


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
    scale = checked_color_scale(df, color, color_scale)
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
        decade_axis(
            number(base.select(p_cols).min_horizontal().min()), number(base.select(p_cols).max_horizontal().max())
        )
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
    return titled(
        layered.facet(facet=alt.Facet(f"{facet}:N", title=None, sort="ascending"), columns=columns).resolve_scale(
            x="shared", y="shared"
        ),
        title,
        subtitle or f"line: {median}",
    )


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
    if marks is not None and has_marks:
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
    return titled(
        layered.facet(facet=alt.Facet(f"{facet}:N", title=None, sort="ascending"), columns=columns).resolve_scale(
            x="shared", y="shared"
        ),
        title,
        sub,
    )
