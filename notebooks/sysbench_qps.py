# %% [markdown]
# # sysbench queries per second, and the whitepaper's average/variance table
#
# **Question.** What does sysbench do each second on each target, reads, writes and the rest, and how large
# and how steady is its throughput per thread count (seed 002)? The whitepaper drew, per device and thread
# count, the per-second queries (total, read, write, other: sysbench's `qps (r/w/o)`), and tabulated per
# thread count the average and variance σ² of the per-second TPS, one row per device. Here one panel per
# target and thread count (the run whose average TPS is its cell's median), and the table with one row per
# target, after each run's first `trim_s` seconds.

# %% tags=["parameters"]
# Paths are relative to the repository (or absolute), wherever the kernel runs. The defaults read the
# default study (`make run` first); papermill and `pgfslab notebook` pass another study's.
db = "data/sysbench-fillfactor.duckdb"
study = "sysbench-fillfactor"
targets = None  # a list of target names to keep, or None for every target
alpha = 0.05
trim_s = 2.0
figures_dir = "figures/sysbench-fillfactor"
tables_dir = "build/sysbench-fillfactor/tables"
workload = "read-write"

# %%
import polars as pl

from pgfslab.analysis import charts, queries, report
from pgfslab.analysis.answers import sysbench_qps as sq
from pgfslab.analysis.notebook import setup

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
qps = queries.require(
    queries.sysbench_qps(db, study, workload, targets), f"sysbench per-second report lines for workload {workload!r}"
)

# %%
label = report.cell_workload_label(queries.study_of(db), workload)
pub = report.Publication(
    f"sysbench_qps-{workload}",
    f"Queries per second and the whitepaper's table: {label}",
    "What does sysbench do each second on each target, and how large and steady is its throughput per thread count?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)
runs = sq.per_run(qps, trim_s)
pub.save(runs)

# %% [markdown]
# ## Queries per second: total, read, write, other

# %%
shown = sq.representative_runs(runs)
panels, n_cols = charts.cell_panels(sq.series(qps, shown["run_id"]), unit="threads")
chart = charts.qps_small_multiples(
    panels, columns=n_cols, title=f"{workload}: queries per second, total and read / write / other"
)
pub.figure(
    chart,
    f"sysbench_qps-{workload}",
    f"{label}: sysbench's queries per second each second (`--report-interval=1`), the total and its read, write "
    "and other parts (other: BEGIN/COMMIT and the like), as seed 002 drew them; one row of panels per target, one "
    "column per thread count, one run per panel (the run whose average TPS is its cell's median), all panels on one "
    "y scale.",
)

# %% [markdown]
# ## Average and variance of per-second TPS per thread count (the whitepaper's table)

# %%
table = sq.whitepaper_table(runs, queries.target_names(db, study))
counts = sq.runs_per_cell(runs)
n_text = ", ".join(
    f"{r['clients']} thr: {r['min']}" + (f"–{r['max']}" if r["max"] != r["min"] else "")
    for r in counts.iter_rows(named=True)
)
pub.table(
    table,
    caption=f"{label}: average (avg) and variance (σ², n − 1) of the per-second TPS per thread count, one row per "
    f"target, after each run's first {trim_s:g} s, in the form of seed 002's tables (which gave one 30-minute run "
    f"per cell). With several runs per cell, the medians over them of each run's average and variance; runs per "
    f"cell: {n_text}.",
    digits={c: 0 for c in table.columns if c != "target"},
)

# %%
top = int(runs["clients"].max())
at_top = (
    runs.filter(pl.col("clients") == top)
    .group_by("target_label")
    .agg(
        pl.col("tps_avg").median(),
        pl.col("tps_var").median(),
        pl.col("qps_read_avg").median(),
        pl.col("qps_write_avg").median(),
        pl.col("qps_other_avg").median(),
    )
    .sort("tps_var")
)
steadiest, least = at_top.row(0, named=True), at_top.row(-1, named=True)
pub.text(
    f"At {top} threads the steadiest target is {steadiest['target_label']} (σ² {report.num(steadiest['tps_var'])}, "
    f"average {report.num(steadiest['tps_avg'])} tps) and the least steady {least['target_label']} "
    f"(σ² {report.num(least['tps_var'])}, average {report.num(least['tps_avg'])} tps). Per second, "
    f"{steadiest['target_label']} ran {report.num(steadiest['qps_read_avg'])} reads, "
    f"{report.num(steadiest['qps_write_avg'])} writes and {report.num(steadiest['qps_other_avg'])} other queries. "
    "Whether the differences in variance and average are more than run-to-run noise is the verdict section's "
    "and the variance notebook's question (this table, like the whitepaper's, has no interval)."
)
