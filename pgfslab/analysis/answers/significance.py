"""Which differences between targets are real, and which target is steadier (notebook variance_significance)?

Targets are compared within each workload and client count against the baseline target (the config's
first); a study with one target compares its workloads instead (`design`). Steadiness is the variance of
the per-second throughput within runs (each run's samples around its own mean, so repeats that ran at
different levels do not count as instability); speed is the benchstat comparison of the runs' throughput,
Holm-adjusted over the grid, next to the error rate (goodput).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import polars as pl

from pgfslab.analysis import report, stats


class Design(NamedTuple):
    """What is compared with what: levels of `group` within each `cell`, against `baseline`."""

    group: str  # "target_label" (several targets) or "workload" (one target)
    cell: list[str]
    baseline: str

    @property
    def noun(self) -> str:
        """The compared thing in text: target or workload."""
        return self.group.replace("_label", "")


def design(progress: pl.DataFrame, baseline_target: str, workloads: Sequence[str]) -> Design:
    """Which comparison does this study support? Several targets: targets within (workload, clients),
    against `baseline_target`'s label. One target: its workloads within (target_label, clients), against
    the config's first workload (`workloads` in config order) when it ran, else the first that ran."""
    if progress["target"].n_unique() > 1:
        baseline = progress.filter(pl.col("target") == baseline_target)["target_label"][0]
        return Design("target_label", ["workload", "clients"], baseline)
    ran = progress["workload"]
    baseline = workloads[0] if workloads and workloads[0] in ran.to_list() else ran[0]
    return Design("workload", ["target_label", "clients"], baseline)


def with_within_run(steady: pl.DataFrame, d: Design, value: str = "tps") -> pl.DataFrame:
    """`steady` with `<value>_within`: each sample minus its run's mean plus its cell level's mean (the
    cell and the compared level), so only the variation within runs remains."""
    v = pl.col(value)
    return steady.with_columns(
        (v - v.mean().over("run_id") + v.mean().over([*d.cell, d.group])).alias(f"{value}_within")
    )


def variance_cells(steady: pl.DataFrame, d: Design, value: str = "tps") -> pl.DataFrame:
    """Seed 002's table per cell and level: `stats.stability_table` of the per-second samples (n, mean,
    variance, stdev, min, max, cv: all seconds of all repeats) with `variance_within` and `cv_within` from
    the within-run samples (`with_within_run`)."""
    keys = [*d.cell, d.group]
    within = stats.stability_table(steady, f"{value}_within", keys).select(
        *keys, pl.col("variance").alias("variance_within"), pl.col("cv").alias("cv_within")
    )
    return stats.stability_table(steady, value, keys).join(within, on=keys)


def _cell_columns(d: Design) -> list[pl.Expr]:
    return [
        *[pl.col(c).alias(c.replace("_label", "")) for c in d.cell],
        pl.col(d.group).alias(d.noun),
    ]


def variance_cells_table(stab: pl.DataFrame, d: Design) -> pl.DataFrame:
    """`variance_cells` as the reader sees it (seed 002's columns, CV in %)."""
    return stab.select(
        *_cell_columns(d),
        pl.col("n").alias("seconds"),
        pl.col("mean").alias("avg tps"),
        pl.col("variance_within").alias("σ² within runs"),
        (100 * pl.col("cv_within")).alias("CV within %"),
        pl.col("variance").alias("σ² total"),
        pl.col("min").alias("min"),
        pl.col("max").alias("max"),
    )


def variance_ratios(steady: pl.DataFrame, d: Design, value: str = "tps_within", n_boot: int = 999) -> pl.DataFrame:
    """Is a level's within-run variance different from the baseline's? Per cell and level:
    `stats.variance_comparison` (ratio level / baseline, F and circular block-bootstrap intervals,
    Brown-Forsythe p of the pair `bf_p`) with the Brown-Forsythe p over all levels of the cell
    (`bf_p_all`). Empty when no cell has a second level."""
    vc = stats.variance_comparison(steady, value, d.group, d.baseline, d.cell, n_boot=n_boot, block=True)
    if not vc.height:
        return pl.DataFrame()
    bf = stats.variance_test(steady, value, d.group, d.cell)
    return vc.join(bf.select(*d.cell, pl.col("p").alias("bf_p_all")), on=d.cell, how="left").sort(*d.cell, d.group)


def variance_ratio_table(vtab: pl.DataFrame, d: Design) -> pl.DataFrame:
    """`variance_ratios` as the reader sees it (p-values as text)."""
    return vtab.select(
        *_cell_columns(d),
        pl.col("ratio").alias(f"σ² / σ² {d.baseline}"),
        pl.col("f_lo").alias("F CI low"),
        pl.col("f_hi").alias("F CI high"),
        pl.col("boot_lo").alias("boot CI low"),
        pl.col("boot_hi").alias("boot CI high"),
        pl.col("bf_p").map_elements(report.pvalue, return_dtype=pl.Utf8).alias("BF p (pair)"),
        pl.col("bf_p_all").map_elements(report.pvalue, return_dtype=pl.Utf8).alias("BF p (all)"),
    )


def with_cell_label(runs: pl.DataFrame, cell: Sequence[str]) -> pl.DataFrame:
    """`runs` with `cell`: the cell's values joined by "/", clients written `c=<n>` (`tpcb/c=4`)."""
    parts = [pl.format("c={}", pl.col(c)) if c == "clients" else pl.col(c).cast(pl.Utf8) for c in cell]
    return runs.with_columns(pl.concat_str(parts, separator="/").alias("cell"))


class RunComparison(NamedTuple):
    table: pl.DataFrame  # benchstat rows (no geomean) with err, flagged, err_base, flag_base
    goodput: pl.DataFrame  # stats.goodput per cell and level


def compare_runs(runs: pl.DataFrame, d: Design, alpha: float) -> RunComparison:
    """Is a level's run throughput different from the baseline's, and does it lose attempts to errors?

    `runs`: one row per run (`value` = its throughput, `transactions`, `failed`, `elapsed_s`, `duration_s`)
    with the `cell` label (`with_cell_label`). `stats.benchstat_grid` per cell, Holm-adjusted over the
    whole grid, each comparison joined with the candidate's and the baseline's error rate (`err`,
    `err_base`) and goodput flag (`flagged`, `flag_base`: error rate above 1 %)."""
    grid = stats.benchstat_grid(
        runs, "value", "cell", d.group, d.baseline, alpha=alpha, adjust="holm", higher_is_better=True
    )
    good = stats.goodput(
        runs.drop("duration_s").rename(
            {
                "value": "tps",
                "transactions": "transactions_processed",
                "failed": "failed_transactions",
                "elapsed_s": "duration_s",
            }
        ),
        by=["cell", d.group],
    )
    gp = good.select("cell", pl.col(d.group).alias("candidate"), pl.col("error_rate").alias("err"), "flagged")
    base = gp.filter(pl.col("candidate") == d.baseline).select(
        "cell", pl.col("err").alias("err_base"), pl.col("flagged").alias("flag_base")
    )
    table = (
        grid.filter(pl.col("benchmark") != "geomean")
        .join(gp, left_on=["benchmark", "candidate"], right_on=["cell", "candidate"], how="left")
        .join(base, left_on="benchmark", right_on="cell", how="left")
    )
    return RunComparison(table, good)


def run_comparison_table(cmp: pl.DataFrame, d: Design) -> pl.DataFrame:
    """`compare_runs`' table as the reader sees it: benchstat's `median ± %` columns, Holm p, errors %,
    and FAILS where either side loses more than 1 % of its attempts."""
    return cmp.select(
        pl.col("benchmark").alias("cell"),
        pl.col("candidate").alias(d.noun),
        report.pm_expr("center_baseline", "pm_baseline").alias(f"{d.baseline} tps"),
        report.pm_expr("center_candidate", "pm_candidate").alias("tps"),
        pl.col("delta"),
        pl.col("p_adjusted").map_elements(report.pvalue, return_dtype=pl.Utf8).alias("p (Holm)"),
        pl.format("{}+{}", "n_baseline", "n_candidate").alias("n"),
        (100 * pl.col("err")).alias("errors %"),
        pl.when(pl.col("flagged") | pl.col("flag_base")).then(pl.lit("FAILS")).otherwise(pl.lit("ok")).alias("goodput"),
    )


def summary(stab: pl.DataFrame, vtab: pl.DataFrame, runs: pl.DataFrame, d: Design, trim_s: float) -> pl.DataFrame:
    """The notebook's saved table: per cell and level (`level`, `compared` says of what) the variance
    table, the variance ratio against `baseline` (when there is one), the runs' median throughput
    (`run_median`) and count (`runs`), and the warm-up cut `trim_s`."""
    out = stab.rename({d.group: "level"}).with_columns(
        pl.lit(d.group).alias("compared"), pl.lit(d.baseline).alias("baseline")
    )
    if vtab.height:
        out = out.join(
            vtab.select(
                *d.cell,
                pl.col(d.group).alias("level"),
                "ratio",
                "f_lo",
                "f_hi",
                "boot_lo",
                "boot_hi",
                "bf_p",
                "bf_p_all",
            ),
            on=[*d.cell, "level"],
            how="left",
        )
    runs_cell = runs.group_by(*d.cell, d.group).agg(
        pl.col("value").median().alias("run_median"), pl.len().alias("runs")
    )
    out = out.join(runs_cell.rename({d.group: "level"}), on=[*d.cell, "level"], how="left")
    return out.with_columns(pl.lit(float(trim_s)).alias("trim_s"))
