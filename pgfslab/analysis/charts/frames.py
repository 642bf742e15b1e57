"""Polars helpers that prepare small frames for the chart builders: moving averages, min/max
decimation of long time series, panel labels."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl


def group_keys(by: str | Sequence[str] | None) -> list[str]:
    """`by` as a list of column names (none for None)."""
    return [by] if isinstance(by, str) else list(by or [])


def time_ints(time: str, dtype: pl.DataType) -> tuple[pl.Expr, int]:
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
    keys = group_keys(by)
    t, per_s = time_ints(time, df.schema[time])
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
    keys = group_keys(by)
    n_buckets = max_points // (2 * len(values))
    t, _ = time_ints(time_col, df.schema[time_col])

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
