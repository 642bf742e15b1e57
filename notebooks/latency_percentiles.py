# %% [markdown]
# # Latency percentiles over time
#
# **Question.** Does the storage change the latency distribution, and when: a shifted median, or a
# fatter tail at some moments (checkpoints, write-back)? Per target (and client count) the
# p25/p50/p75/p95/p99 bands of transaction latency are drawn per second over the run, pooled over the
# repeats, all rows on one y scale (seed 000). How exact the bands are depends on what the workload
# logged, and the caption says which:
#
# * **exact**: pgbench's per-transaction log (`log: transactions`): every latency is known;
# * **aggregate**: pgbench's aggregate log (one line per second: count, sum, min, max): percentiles are
#   not recoverable per second, so the band is min to max with the exact mean; the table bounds each
#   percentile over the run (`stats.aggregate_latency_summary`);
# * **sysbench**: sysbench reports one percentile (`--percentile`, 95 by default) per interval: the band
#   spans the repeats; the table uses the end-of-run histogram when `--histogram` was on.

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

# %%
import polars as pl

from pgfslab.analysis import charts, queries, report, stats
from pgfslab.analysis.answers import percentiles
from pgfslab.analysis.notebook import setup

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
method = queries.latency_source(db, study, workload, targets)
if method == "exact":
    lat = queries.require(
        queries.txlog_latency(db, study, workload, targets), f"per-transaction latencies for {workload!r}"
    )
elif method == "aggregate":
    lat = queries.require(
        queries.aggregate_latency(db, study, workload, targets), f"aggregate latency logs for {workload!r}"
    )
else:
    lat = queries.require(
        queries.sysbench_latency(db, study, workload, targets), f"sysbench interval latencies for {workload!r}"
    )

# %%
label = report.cell_workload_label(queries.study_of(db), workload)
pub = report.Publication(
    f"latency_percentiles-{workload}",
    f"Latency percentiles: {label}",
    "Does the storage shift the latency distribution, and when does the tail grow?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)
cell = ["target", "target_label", "clients"]
steady = stats.trim_warmup(lat, trim_s)  # the table: whole runs after the first trim_s seconds

# %% [markdown]
# ## Percentile bands per second

# %%
pct = percentiles.sysbench_percentile(lat) if method not in ("exact", "aggregate") else None
band_title, how = {
    "exact": (
        "percentile band",
        "exact percentiles of every logged transaction in each second, pooled over the repeats "
        "(pgbench per-transaction log); bands p25–p50–p75–p95–p99, line: median",
    ),
    "aggregate": (
        "per second",
        "pgbench aggregate log (per second only count, sum, min and max survive, so percentiles cannot be "
        "drawn): band from the minimum to the maximum latency of each second over the repeats, line: the exact "
        "mean; the table bounds the percentiles",
    ),
}.get(
    method,
    (
        f"p{pct} over repeats",
        f"sysbench's {pct}th percentile per one-second interval (the only percentile it reports per interval): "
        f"band from the lowest to the highest p{pct} over the repeats, line: their median",
    ),
)
bands = percentiles.per_second_bands(lat, method, cell)
frame, n_cols = charts.cell_panels(bands.frame.sort(*cell, "t_s"))
chart = charts.percentile_bands(
    frame,
    "t_s",
    bands.columns,
    facet="panel",
    color="target",
    color_scale=colors,
    median=bands.median,
    columns=n_cols,
    title=f"{workload}: latency per second",
    log_y=True,
    subtitle=f"method: {method}",
    band_title=band_title,
)
pub.figure(
    chart,
    f"latency_percentiles-{workload}",
    f"{label}: transaction latency over time (log scale), one row of panels per target and one column per "
    f"client count, all on one y scale. Method {method}: {how}. Look for a band that widens at moments, not only for a "
    "higher line.",
)

# %% [markdown]
# ## Latency over the whole run

# %%
by = ["target_label", "clients"]
hist = queries.sysbench_histogram(db, study, workload, targets) if pct is not None else None
summary = queries.in_config_order(
    percentiles.run_summary(steady, method, by, hist, pct), db, study, ["clients"], col="target_label"
)
pub.save(summary.with_columns(pl.lit(workload).alias("workload"), pl.lit(float(trim_s)).alias("trim_s")))
pub.table(
    queries.in_config_order(percentiles.summary_table(summary, by), db, study, ["clients"]),
    caption=f"{label}: latency (ms) over each cell's runs after the first {trim_s:g} s. Method "
    "`exact`: every transaction; `aggregate-bounds`: pgbench aggregate log, a percentile shown as lo–hi is only "
    "known to lie in that range (exact mean, min, max); `histogram`: sysbench --histogram, the bucket's value "
    "(known to within about ±1 %) "
    "(end-of-run histogram: warm-up included).",
    align={"transactions": "right"},
)

# %%
stat = "mean" if "mean" in summary["stat"].to_list() else "p50"  # exact in every method that has it
mid_rows = summary.filter(pl.col("stat") == stat).sort("value")
if mid_rows.height:
    lo, hi = mid_rows.row(0, named=True), mid_rows.row(-1, named=True)
    text = (
        f"The {'mean' if stat == 'mean' else 'median'} latency ranges from {lo['value']:.2f} ms "
        f"({lo['target_label']}, {lo['clients']} client(s)) to {hi['value']:.2f} ms ({hi['target_label']}, "
        f"{hi['clients']} client(s)); method: {method}."
    )
    tail = summary.filter(pl.col("stat") == "p99").sort("hi")
    if tail.height:
        worst = tail.row(-1, named=True)
        known = (
            f"{worst['value']:.2f} ms"
            if worst["method"] != "aggregate-bounds"
            else f"between {worst['lo']:.2f} and {worst['hi']:.2f} ms (bounds from the aggregate log)"
        )
        text += f" The largest p99 is {known}: {worst['target_label']} at {worst['clients']} client(s)."
    pub.text(text)
