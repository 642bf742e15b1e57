"""How steadily does each run deliver its throughput (notebook throughput_stability)?

Per run: the mean of the per-second throughput after the warm-up (a fixed floor, then MSER-5) with its
autocorrelation-aware interval, the spread within the run and whether MSER-5 found a steady state. Per
cell (the repeats of one target and client count): the median of the run means with its interval over
repeats, and medians of the per-run figures.
"""

from __future__ import annotations

import polars as pl

from pgfslab.analysis import report, stats
from pgfslab.analysis.scalar import number
from pgfslab.errors import LabError

RUN_KEYS = ["run_id", "target", "target_label", "workload", "clients", "repeat"]
RUN_COLUMNS = [
    *RUN_KEYS,
    "trim_s",
    "trim_method",
    "steady",
    "n",
    "mean",
    "ci_lo",
    "ci_hi",
    "confidence",
    "ci_method",
    "n_eff",
    "rho1",
    "stdev",
    "cv",
]
CELL = ["target_label", "clients"]


def steady_run_means(progress: pl.DataFrame, trim_s: float, value: str = "tps", time: str = "t_s") -> pl.DataFrame:
    """What does each run deliver once warmed up, and how steadily?

    `progress`: per-second samples (`value` at `time`) with the `RUN_KEYS` columns. Each run loses its
    first `trim_s` seconds, then its MSER-5 warm-up (`stats.apply_steady_state`); `trim_s` is the larger
    of the two cuts, `steady` False when MSER-5 hit its limit. The mean over the rest gets the
    autocorrelation-aware interval of `stats.run_mean_table` (`ci_lo`, `ci_hi`, `ci_method`, `n_eff`,
    `rho1`); `stdev` and `cv` (stdev / mean) are the spread of the samples within the run.
    One row per run that has samples after `trim_s`, ordered by repeat, columns `RUN_COLUMNS` (a run that
    ended within it is left out: `ended_in_warmup` names those); a LabError when every run ended within it."""
    floor = stats.trim_warmup(progress, trim_s, time)
    if floor.is_empty():
        last = number(progress[time].max()) or 0.0
        raise LabError(
            f"every run's per-second samples end by t = {last:g} s, within the fixed warm-up of "
            f"analysis.trim_s = {trim_s:g} s: nothing is left to judge; runs must last past it (a pgbench run "
            "of -T n may print its last progress line at n - 1 s)"
        )
    steady = stats.apply_steady_state(floor, value, time, by=["run_id"])  # MSER-5 per run
    trims = steady.group_by("run_id").agg(
        pl.max_horizontal(pl.lit(float(trim_s)), pl.col("trim_s").first()).alias("trim_s"), pl.col("steady").first()
    )
    spread = steady.group_by("run_id").agg(pl.col(value).std().alias("stdev"))
    return (
        stats.run_mean_table(steady, value, RUN_KEYS, time)
        .join(trims, on="run_id")
        .join(spread, on="run_id")
        .with_columns(
            (pl.col("stdev") / pl.col("mean")).alias("cv"),
            pl.lit(f"fixed {trim_s:g} s + MSER-5").alias("trim_method"),
        )
        .rename({"lo": "ci_lo", "hi": "ci_hi", "method": "ci_method"})
        .sort("repeat")
        .select(RUN_COLUMNS)
    )


def ended_in_warmup(progress: pl.DataFrame, per_run: pl.DataFrame) -> list[str]:
    """The runs of `progress` that `steady_run_means` left out (no sample after the fixed warm-up)."""
    return sorted(set(progress["run_id"].unique()) - set(per_run["run_id"]))


def ended_in_warmup_text(progress: pl.DataFrame, per_run: pl.DataFrame, trim_s: float) -> str:
    """A sentence naming the runs `ended_in_warmup` finds, or nothing when there are none."""
    gone = ended_in_warmup(progress, per_run)
    if not gone:
        return ""
    return (
        f" {len(gone)} run(s) ended within the fixed {trim_s:g} s warm-up and are not in the table: "
        + ", ".join(gone)
        + "."
    )


def cell_stability(per_run: pl.DataFrame) -> pl.DataFrame:
    """Per cell (target_label, clients): how fast and how steady are its repeats?

    `stats.cell_summary` of the run means (n, median with its distribution-free interval over repeats,
    `ci_coverage`, ...) joined with medians over the runs of: the relative half-width of the run's
    interval (`half_width`), `n_eff`, the within-run CV (`within_cv`), the warm-up cut (`trim_med`, and
    its maximum `trim_max`), and the count of runs that did not settle (`not_steady`)."""
    within = per_run.group_by(CELL).agg(
        ((pl.col("ci_hi") - pl.col("ci_lo")) / 2 / pl.col("mean")).median().alias("half_width"),
        pl.col("n_eff").median().alias("n_eff"),
        pl.col("cv").median().alias("within_cv"),
        pl.col("trim_s").median().alias("trim_med"),
        pl.col("trim_s").max().alias("trim_max"),
        (~pl.col("steady")).sum().alias("not_steady"),
    )
    return stats.cell_summary(per_run, "mean", CELL).join(within, on=CELL)


def cell_table(cells: pl.DataFrame) -> pl.DataFrame:
    """`cell_stability`'s rows as the reader sees them: named columns, CIs and CVs in %."""
    return cells.select(
        pl.col("target_label").alias("target"),
        "clients",
        pl.col("n").alias("runs"),
        pl.col("median").alias("median tps"),
        report.pair_expr("median_ci_low", "median_ci_high", brackets=True).alias("its CI"),
        (100 * pl.col("half_width")).alias("run CI ± %"),
        pl.col("n_eff").alias("n_eff"),
        (100 * pl.col("within_cv")).alias("CV in run %"),
        report.pair_expr("trim_med", "trim_max").alias("trim s median / max"),
        pl.col("not_steady").alias("not steady"),
    )
