"""How precise a study's answers are: per cell, the interval of the median over repeats and its width
relative to the median (against the study's precision target, when it has one); per comparison with the
baseline target that is not significant, the smallest difference the runs could have detected.

Input is one headline value per run (`queries.headline`: pgbench tps, sysbench tps, fsmicro ops/s).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from pgfslab.analysis.charts import alt
from pgfslab.analysis.stats import compare_to_baseline, power
from pgfslab.analysis.stats.cells import cell_summary
from pgfslab.records.run_record import RunRecord

CELL = ["workload", "rung", "clients"]  # rung: the data-set ladder's (null without one)


def cell_precision(headline: pl.DataFrame, confidence: float = 0.95, goal: float | None = None) -> pl.DataFrame:
    """Per target and cell: runs, median, its distribution-free interval (and the coverage reached),
    the interval's half-width relative to the median, and whether it meets `goal` (null without one).
    An interval whose coverage falls short of `confidence` (too few runs) never meets the goal."""
    by = ["target_label", *CELL]
    cells = cell_summary(headline, "value", by, confidence)
    half = (pl.col("median_ci_high") - pl.col("median_ci_low")) / 2 / pl.col("median").abs()
    return cells.select(
        *by,
        "n",
        "median",
        "median_ci_low",
        "median_ci_high",
        "ci_coverage",
        half.alias("half_width"),
        (
            pl.when(pl.lit(goal).is_null())
            .then(None)
            .otherwise((half <= (goal or 0.0)) & (pl.col("ci_coverage") >= confidence))
            .alias("precise")
        ),
    )


def skipped_rounds(records: dict[str, RunRecord]) -> pl.DataFrame:
    """Per cell: optional rounds that were not measured, and why, from the run records (every status:
    `queries.run_records(..., only_ok=False)`)."""
    rows = [
        {
            "workload": r.workload,
            "rung": r.rung,
            "clients": r.clients,
            "repeat": r.repeat,
            "reason": str(r.skip_reason or ""),
        }
        for r in records.values()
        if r.status == "skipped"
    ]  # one record per run of the study: a few hundred at most
    schema = {"workload": pl.Utf8, "rung": pl.Int64, "clients": pl.Int64, "repeat": pl.Int64, "reason": pl.Utf8}
    return (
        pl.DataFrame(rows, schema=schema)
        .group_by(CELL, maintain_order=True)
        .agg(pl.col("repeat").n_unique().cast(pl.UInt32).alias("rounds_skipped"), pl.col("reason").first())
    )


def detectable_differences(
    headline: pl.DataFrame, baseline: str, alpha: float = 0.05, target_power: float = 0.8
) -> pl.DataFrame:
    """Every cell's comparison of each target with `baseline` (Mann-Whitney, as the significance table
    makes it), and with it the smallest difference, in % of the baseline's median, that the test would
    have detected with `target_power` given these run counts and the pooled run-to-run noise (normal
    model; infinite where the run counts cannot reach `alpha` at all)."""
    comp = compare_to_baseline(headline, "value", CELL, "target_label", baseline, alpha)
    if comp.is_empty():
        return comp
    noise = headline.filter(pl.col("value").is_not_null()).group_by([*CELL, "target_label"]).agg(pl.col("value"))
    values: dict[tuple[Any, ...], np.ndarray] = {
        tuple(r[k] for k in [*CELL, "target_label"]): np.asarray(r["value"], float) for r in noise.iter_rows(named=True)
    }  # one entry per target and cell: a few dozen at most
    shifts = []
    for row in comp.iter_rows(named=True):
        key = tuple(row[k] for k in CELL)
        a, b = values[(*key, baseline)], values[(*key, row["target_label"])]
        sd = power.pooled_sd(a, b)
        k = power.detectable_shift_sd(len(a), len(b), alpha, target_power)
        mb = row["median_baseline"]
        shifts.append(100 * k * sd / abs(mb) if mb and math.isfinite(k) and math.isfinite(sd) else math.inf)
    return comp.with_columns(
        pl.Series("detectable_pct", shifts, dtype=pl.Float64),
        pl.lit(target_power).alias("power"),
    )


def precision_chart(cells: pl.DataFrame, goal: float | None, color_scale: Any = None) -> Any:
    """Each target's median per cell with its interval, as % of the median (so cells of different
    throughput share one axis), the precision goal as a band: a reader sees at once which cells are
    known to within the goal and which are not."""
    df = cells.with_columns(
        pl.concat_str(
            pl.col("workload"),
            pl.when(pl.col("rung").is_not_null())
            .then(pl.lit("/d") + pl.col("rung").cast(pl.Utf8))
            .otherwise(pl.lit("")),
            pl.lit("/c="),
            pl.col("clients").cast(pl.Utf8),
        ).alias("cell"),
        (100 * (pl.col("median_ci_low") / pl.col("median") - 1)).alias("lo_pct"),
        (100 * (pl.col("median_ci_high") / pl.col("median") - 1)).alias("hi_pct"),
        pl.lit(0.0).alias("zero"),
    )
    base = alt.Chart(df).encode(
        y=alt.Y("target_label:N", title=None),
        color=alt.Color("target_label:N", scale=color_scale, legend=None),
    )
    bars = base.mark_rule(strokeWidth=3).encode(
        x=alt.X("lo_pct:Q", title="interval of the median, % of the median"), x2="hi_pct:Q"
    )
    dots = base.mark_point(filled=True, size=50).encode(
        x="zero:Q",
        tooltip=["cell", "target_label", "n", "median", "median_ci_low", "median_ci_high", "ci_coverage"],
    )
    layers = [bars, dots]
    if goal is not None:
        band = (
            alt.Chart(pl.DataFrame({"lo": [-100 * goal], "hi": [100 * goal]}))
            .mark_rect(opacity=0.12, color="#2a9d8f")
            .encode(x="lo:Q", x2="hi:Q")
        )
        layers.insert(0, band)
    return alt.layer(*layers, data=df).facet(row=alt.Row("cell:N", title=None)).resolve_scale(y="independent")
