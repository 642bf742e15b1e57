# %% [markdown]
# # How precise are the answers?
#
# **Question.** To what precision does this study know each cell's throughput, and what could its
# comparisons have detected? Per target and cell: the median of the runs' headline values (pgbench and
# sysbench tps) with its distribution-free interval over repeats, and that interval's half-width relative to
# the median, against the study's precision target when it set one (`precision` in the config: rounds are
# added until every target of a cell is within it, or the time budget is spent; never on a p-value). Then,
# for each comparison with the baseline target that is **not** significant, the smallest difference the
# runs could have detected: a non-significant result says "no difference larger than this".

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
power = 0.8  # the power at which the detectable difference is stated

# %%
import polars as pl

from pgfslab.analysis import queries, report
from pgfslab.analysis.answers import precision
from pgfslab.analysis.notebook import setup

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
runs = queries.require(
    queries.headline(db, study, targets).filter(pl.col("tool").is_in(["pgbench", "sysbench"])),
    "run summaries (pgbench or sysbench)",
)
goal = (cfg.get("precision") or {}).get("half_width")
confidence = (cfg.get("precision") or {}).get("confidence", 1 - alpha)
pub = report.Publication(
    "precision",
    "Precision of the answers",
    "How precisely is each cell known, and what could a comparison detect?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)

# %% [markdown]
# ## Each cell's median, with its interval

# %%
cells = queries.in_config_order(
    precision.cell_precision(runs, confidence, goal), db, study, ["clients"], col="target_label"
)
pub.figure(
    precision.precision_chart(cells, goal, colors),
    "precision",
    f"Interval of each target's median over repeats ({100 * confidence:g} % distribution-free, order statistics), "
    "as % of the median; one row per cell"
    + (f"; the band is the study's precision target, ±{100 * goal:g} %." if goal else "."),
)
pub.save(cells)
skipped = precision.skipped_rounds(queries.run_records(db, study, targets=targets, only_ok=False))

# %%
pub.table(
    cells.select(
        pl.col("target_label").alias("target"),
        "workload",
        "clients",
        pl.col("n").alias("runs"),
        pl.col("median").alias("median tps"),
        pl.col("median_ci_low").alias("CI low"),
        pl.col("median_ci_high").alias("CI high"),
        (100 * pl.col("ci_coverage")).alias("coverage %"),
        (100 * pl.col("half_width")).alias("± % of median"),
        pl.col("precise").alias("within target"),
    ),
    caption="Per target and cell: runs, median headline value with its distribution-free interval (its exact "
    "coverage; below the asked confidence when there are too few runs) and the interval's half-width in % of "
    "the median"
    + (f"; `within target`: at most ±{100 * goal:g} %." if goal else " (the study set no precision target)."),
    digits={"coverage %": 1},
)
if skipped.height:
    pub.table(skipped, caption="Optional rounds not measured, per cell, and why (precision reached or budget spent).")

# %% [markdown]
# ## What a non-significant comparison could have detected

# %%
baseline = queries.baseline_target(db, study, targets)
comparisons = precision.detectable_differences(runs, baseline, alpha, power)
quiet = comparisons.filter(~pl.col("significant")) if comparisons.height else comparisons
if quiet.height:
    pub.table(
        quiet.select(
            "workload",
            "clients",
            pl.col("target_label").alias("target"),
            pl.col("n_baseline").alias(f"n {baseline}"),
            "n",
            "delta_pct",
            "p",
            pl.col("detectable_pct").alias("detectable %"),
        ),
        caption=f"Comparisons with {baseline} that are not significant (Mann-Whitney U, exact, α = {alpha:g}, "
        f"unadjusted): the observed difference of medians, and the smallest difference the test finds with "
        f"{100 * power:g} % power for these run counts and the pooled run-to-run noise (normal model, simulated). "
        "An infinite value: these run counts cannot reach α at all.",
        digits={"delta_pct": 1, "detectable %": 1},
    )

# %%
n_precise = int(cells["precise"].sum()) if goal else None
widest = cells.sort("half_width", descending=True, nulls_last=True).row(0, named=True)
text = (
    f"The least precise cell is {widest['target_label']} at {widest['workload']}/c={widest['clients']}: "
    f"median {report.num(widest['median'])} tps, ± {report.pct(widest['half_width'])} ({widest['n']} runs). "
)
if goal:
    text += f"{n_precise} of {cells.height} target cells reached the study's target of ±{100 * goal:g} %. "
if quiet.height:
    finite = quiet.filter(pl.col("detectable_pct").is_finite())
    text += f"{quiet.height} comparison(s) with {baseline} are not significant" + (
        f"; the runs could have detected differences from {finite['detectable_pct'].min():.1f} % "
        f"to {finite['detectable_pct'].max():.1f} % (at {100 * power:g} % power)."
        if finite.height
        else ", and their run counts could not have detected any difference."
    )
pub.text(text)
