"""Per-cell summaries over repeats: n, mean, median with its distribution-free interval, spread."""

from __future__ import annotations

import polars as pl

from pgfslab.analysis.stats.median_ci import median_ci_ranks


def cell_summary(df: pl.DataFrame, value: str, by: list[str], confidence: float = 0.95) -> pl.DataFrame:
    """n, mean, median (with a distribution-free CI), stdev, variance, CV, min and max of `value`
    per group of `by`.

    Per run: by = the run's id (and its cell columns) over per-second samples; per cell: by = the
    cell's columns over one value per run (e.g. each run's mean tps), since repeats, not seconds,
    are independent. The CI is `median_ci_ranks` (its actual coverage in `ci_coverage`).
    """
    agg = (
        df.filter(pl.col(value).is_not_null())
        .group_by(by, maintain_order=True)
        .agg(
            pl.len().alias("n"),
            pl.col(value).mean().alias("mean"),
            pl.col(value).median().alias("median"),
            pl.col(value).std().alias("stdev"),
            pl.col(value).var().alias("variance"),
            pl.col(value).min().alias("min"),
            pl.col(value).max().alias("max"),
            pl.col(value).sort().alias("_sorted"),
        )
    )
    ranks = pl.DataFrame(
        [
            {"n": n, "_lo": lo - 1, "_hi": hi - 1, "ci_coverage": cov}
            for n in agg["n"].unique().to_list()
            for lo, hi, cov in [median_ci_ranks(int(n), confidence)]
        ],
        schema={"n": pl.UInt32, "_lo": pl.Int64, "_hi": pl.Int64, "ci_coverage": pl.Float64},
    )
    return (
        agg.with_columns(pl.col("n").cast(pl.UInt32))
        .join(ranks, on="n", how="left")
        .with_columns(
            pl.col("_sorted").list.get(pl.col("_lo")).alias("median_ci_low"),
            pl.col("_sorted").list.get(pl.col("_hi")).alias("median_ci_high"),
            (pl.col("stdev") / pl.col("mean")).alias("cv"),
        )
        .drop("_sorted", "_lo", "_hi")
    )
