# %% [markdown]
# # Variance and significance
#
# **Question.** Is one storage target's throughput not only faster or slower but *steadier*, and which
# differences are real? Seed 002 reported the average and variance σ² of per-second TPS per thread count
# and device; here the same table per cell, the Brown-Forsythe test of equal variances, and the variance
# ratio against the baseline target (the config's first) with an F interval and a block-bootstrap interval
# (per-second samples are autocorrelated, which makes F intervals and p-values optimistic). Then the
# benchstat-style comparison of the runs' throughput against the baseline per cell, with the p-values
# Holm-adjusted over the whole grid (every cell x target), and goodput columns: a run that is fast
# because its transactions fail is flagged.

# %% tags=["parameters"]
# Paths are relative to the repository (or absolute), wherever the kernel runs. The defaults read the
# default study (`make run` first); papermill and `pgfslab notebook` pass another study's.
db = "data/default.duckdb"
study = "default"
targets = None  # a list of target names to keep, or None for every target
alpha = 0.05
trim_s = 2.0
figures_dir = "figures/default"
tables_dir = "build/default/tables"

# %%
import polars as pl

from pgfslab.analysis import charts, queries, report, stats
from pgfslab.analysis.answers import significance
from pgfslab.analysis.notebook import setup

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
progress = queries.require(queries.throughput(db, study, None, targets), "per-second throughput (pgbench or sysbench)")
runs = queries.require(
    queries.headline(db, study, targets).filter(
        pl.col("tool").is_in(["pgbench", "sysbench"]) & pl.col("value").is_not_null()
    ),
    "run summaries (pgbench or sysbench)",
)

# %%
pub = report.Publication(
    "variance_significance",
    "Variance and significance",
    "Which differences between targets are real, and which target is steadier?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)
# compare targets within each workload and client count; a study with one target compares its workloads
d = significance.design(progress, queries.baseline_target(db, study, targets), list(cfg["workloads"]))
# within-run variation: each run's samples around its own mean (plus the cell's mean), so that repeats
# that ran at different levels do not count as instability
steady = significance.with_within_run(stats.trim_warmup(progress, trim_s), d)

# %% [markdown]
# ## Stability: average and variance of per-second throughput (seed 002's table)
#
# σ² within runs is the variance of each run's per-second samples around that run's own mean, pooled over
# the repeats: how unsteady a run is. σ² total also counts the differences between repeats. The tests
# and ratios below use the within-run samples.

# %%
stab = significance.variance_cells(steady, d)
by_target = d.group == "target_label"
stab = queries.in_config_order(stab, db, study, d.cell, col=d.group) if by_target else stab.sort(*d.cell, d.group)
chart = charts.grouped_bars_with_error(
    stab.with_columns((100 * pl.col("cv_within")).alias("cv_pct")),
    "clients",
    "cv_pct",
    d.group,
    color_scale=colors if by_target else None,
    column=d.cell[0],
    x_title="clients (threads)",
    y_title="CV within runs (%)",
    title="Variation of per-second throughput per cell",
)
pub.figure(
    chart,
    "variance_significance",
    f"Coefficient of variation (σ / mean) of the per-second throughput within runs (each run around its own "
    f"mean, after the first {trim_s:g} s, pooled over the repeats); one panel per {d.cell[0].replace('_label', '')}, "
    f"one bar per {d.noun}. Lower is steadier; compare bars within a group.",
)
pub.table(
    significance.variance_cells_table(stab, d),
    caption=f"Average and variance σ² of per-second throughput per cell (seed 002's table), after the first "
    f"{trim_s:g} s of every run: within runs (around each run's mean, pooled over the repeats) and total "
    "(all seconds of all repeats).",
)

# %% [markdown]
# ## Are the variances different?

# %%
vtab = significance.variance_ratios(steady, d)
if vtab.height:
    pub.table(
        significance.variance_ratio_table(vtab, d),
        caption=f"Within-run variance of per-second throughput relative to {d.baseline} per cell: the ratio with its "
        "F interval (exact only for independent normal samples) and a circular block-bootstrap interval (blocks of "
        "Politis-White length: respects autocorrelation), and Brown-Forsythe p-values for the pair and "
        "for all levels of the cell. Per-second samples are autocorrelated: read the p-values as optimistic.",
        digits={f"σ² / σ² {d.baseline}": 2, "F CI low": 2, "F CI high": 2, "boot CI low": 2, "boot CI high": 2},
    )
else:
    pub.text(f"Only one {d.noun} per cell: no variance comparison.")

# %% [markdown]
# ## benchstat-style comparison of the runs, with goodput

# %%
runs = significance.with_cell_label(runs, d.cell)
cmp, good = significance.compare_runs(runs, d, alpha)
if cmp.height:
    pub.table(
        significance.run_comparison_table(cmp, d),
        caption=f"Run throughput (median ± the order-statistic 95 % interval as % of it; ± ∞ when n is too small "
        f"for one) of each {d.noun} against {d.baseline} per cell. `delta` is `~` unless "
        f"the Mann-Whitney U test, Holm-adjusted over all {int(cmp['p'].is_not_nan().sum())} comparisons of "
        f"the grid, is below α = {alpha}. errors %: failed transactions (pgbench) or ignored errors "
        "(sysbench) per attempt; FAILS marks a side above 1 %.",
        digits={"errors %": 2},
    )
    sig = cmp.filter(pl.col("significant"))
    flagged = good.filter(pl.col("flagged"))
    which = "; ".join(f"{r['candidate']} {r['benchmark']} {r['delta']}" for r in sig.iter_rows(named=True))
    failing = ", ".join(
        f"{r[d.group]} {r['cell']} ({report.pct(r['error_rate'], 2)})" for r in flagged.iter_rows(named=True)
    )
    pub.text(
        f"{sig.height} of {cmp.height} comparisons with {d.baseline} are significant after the Holm adjustment"
        + (f": {which}" if sig.height else "")
        + ". "
        + (
            f"{flagged.height} cell(s) lose more than 1 % of their attempts to errors: {failing}."
            if flagged.height
            else "No cell loses more than 1 % of its attempts to errors."
        )
    )

# %%
pub.save(significance.summary(stab, vtab, runs, d, trim_s))
