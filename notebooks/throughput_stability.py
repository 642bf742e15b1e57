# %% [markdown]
# # Throughput stability over time
#
# **Question.** Does a file system change not only how fast PostgreSQL runs, but how *steadily*?
# Every run's per-second throughput (pgbench `-P 1`, sysbench `--report-interval=1`) is drawn thin, one
# line per repeat, and its trailing moving average bold; one row of panels per target and one column per
# client count, all panels on one y scale so heights compare. The table gives each run's mean after its
# warm-up (MSER-5, after a fixed `trim_s`) with a confidence interval that accounts for the
# autocorrelation of per-second samples, and per cell the median over repeats.

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
workload = "tpcb"
moving_average_s = 15

# %%
from pgfslab.analysis import charts, queries, report
from pgfslab.analysis.answers import stability
from pgfslab.analysis.notebook import setup

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
progress = queries.require(
    queries.throughput(db, study, workload, targets), f"per-second throughput for workload {workload!r}"
)

# %%
label = report.cell_workload_label(queries.study_of(db), workload)
pub = report.Publication(
    f"throughput_stability-{workload}",
    f"Throughput stability: {label}",
    "Does the storage change how steadily PostgreSQL runs, not only how fast?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)

# %% [markdown]
# ## Per-second throughput, with the moving average

# %%
smoothed = charts.moving_average(progress, value="tps", window_s=moving_average_s, by=["run_id"])
panels, n_cols = charts.cell_panels(smoothed)  # one row per target, one column per client count
chart = charts.throughput_small_multiples(
    panels,
    time="t_s",
    value="tps",
    smooth=f"tps_ma{moving_average_s}",
    facet="panel",
    columns=n_cols,
    color_scale=colors,
    title=f"{workload}: throughput per second ({moving_average_s} s moving average bold)",
)
pub.figure(
    chart,
    f"throughput_stability-{workload}",
    f"{label}: throughput per second of every run (thin, one line per repeat) and its {moving_average_s} s "
    "moving average (bold); one row of panels per target, one column per client count, all on one y scale. "
    "Look for the height of the bold line and how far the thin lines scatter around it.",
)

# %% [markdown]
# ## Warm-up, run means with autocorrelation-aware intervals, and cells
#
# Per run: the first `trim_s` seconds are dropped, then the MSER-5 truncation point of the rest (White
# 1997: the batch-means cut that minimises the standard error of the remaining mean) ends the warm-up.
# The run's mean throughput after that gets a 95 % interval from the effective sample size of its
# autocorrelated samples (`stats.mean_ci_autocorr`, Geyer's initial positive sequence), not the naive
# iid interval, which would be several times too narrow. Per cell (the repeats of one target and client
# count): the median of the run means with its distribution-free interval over repeats.

# %%
per_run = queries.in_config_order(stability.steady_run_means(progress, trim_s), db, study, ["clients"])
pub.save(per_run)
cells = queries.in_config_order(stability.cell_stability(per_run), db, study, ["clients"], col="target_label")
pub.table(
    stability.cell_table(cells),
    caption=f"{label}: median of the run means per cell with its distribution-free confidence interval over repeats "
    f"(coverage at least {100 * cells['ci_coverage'].min():.1f} %); median half-width of the runs' "
    "autocorrelation-aware 95 % intervals of the mean and their effective sample size n_eff; median "
    f"coefficient of variation within a run; warm-up dropped per run (fixed {trim_s:g} s, then MSER-5), "
    "and runs whose MSER-5 cut hit its limit (not steady).",
    digits={"n_eff": 0},
)

# %%
best = cells.sort("median", descending=True).row(0, named=True)
steadiest = cells.sort("within_cv").row(0, named=True)
pub.text(
    f"The highest median throughput is {best['target_label']}'s at {best['clients']} client(s), "
    f"{report.num(best['median'])} tps; the steadiest cell is {steadiest['target_label']} at {steadiest['clients']} "
    f"client(s), with a within-run CV of {report.pct(steadiest['within_cv'])}. MSER-5 dropped a median of "
    f"{per_run['trim_s'].median():g} s per run; {int((~per_run['steady']).sum())} of {per_run.height} runs did not "
    f"settle by its criterion. A run's mean is known to a median ± {report.pct(cells['half_width'].median())} "
    f"(n_eff median {per_run['n_eff'].median():.0f} of {per_run['n'].median():.0f} samples)."
    + stability.ended_in_warmup_text(progress, per_run, trim_s)
)
