# %% [markdown]
# # File-system micro-benchmarks
#
# **Question.** Which file system is faster at the operations a database leans on: creating and syncing
# files, deleting them from small and large directories, writing with fsync, statfs (seed 003)? Per
# operation and target: ops/s and latency percentiles over the repeats, seed 003's benchstat table in its
# own form and statistics (mean ± largest deviation, unadjusted U test), and the lab's: median ops/s ± the
# interval as % of it, delta against the baseline target (the config's first) when the Mann-Whitney U test,
# Holm-adjusted over the grid, says so, else `~`. What is compared is the *timed* operations per second, the
# number seed 003's table holds: the loop rate where the loop is the timed operation alone (create_empty,
# deletes of pre-created files), else 1000 / the mean latency of the timed part (a delete in a small or
# large directory also creates and writes the file it deletes; write_sync writes before its timed sync).

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
from pgfslab.analysis.answers import micro
from pgfslab.analysis.notebook import setup

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
ops = queries.require(queries.fs_ops(db, study, targets), "fsmicro (file-system micro-benchmark) results")
op_lat = queries.fs_op_latencies(db, study, targets)
ops = micro.timed_rates(ops, op_lat)  # timed_ops_per_s: what seed 003's benchstat compares

# %%
pub = report.Publication(
    "fs_micro",
    "File-system micro-benchmarks",
    "Which file system is faster at the file operations a database leans on?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)
baseline = micro.baseline_label(ops, queries.baseline_target(db, study, targets))
per = queries.in_config_order(micro.per_operation(ops), db, study, ["benchmark"])

# %% [markdown]
# ## Operations per second

# %%
n_bench = per["benchmark"].n_unique()
chart = charts.grouped_bars_with_error(
    per,
    "target_label",
    "timed_med",
    "target_label",
    "timed_min",
    "timed_max",
    colors,
    column="benchmark",
    x_title="",
    y_title="timed ops/s",
    resolve_y="independent",
    columns=min(3, n_bench),
    height=120,
    title="Timed operations per second (median of repeats, bars: min–max)",
)
pub.figure(
    chart,
    "fs_micro-ops",
    "Timed operations per second per benchmark and target (the loop rate where the loop is the timed operation "
    "alone, else 1000 / the mean latency of the timed part, as seed 003's table): median over the repeats, error "
    "bars from the slowest to the fastest repeat. Each panel has its own y scale (the operations differ by orders "
    "of magnitude): compare targets within a panel.",
)

# %%
lat = micro.latencies(per, op_lat)
lat_how = (
    "exact percentiles of every timed operation (fsmicro_ops.csv, nearest rank) per run, median over repeats"
    if op_lat.height
    else "the runner's printed percentiles (0.1 ms resolution), median over repeats"
)
chart = charts.grouped_bars_with_error(
    lat.filter((pl.col("ms") > 0) & (pl.col("stat") != "mean")),
    "stat",
    "ms",
    "target_label",
    color_scale=colors,
    column="benchmark",
    x_title="",
    y_title="latency (ms, log)",
    x_sort=None,
    resolve_y="independent",
    columns=min(3, n_bench),
    height=120,
    log_y=True,
    title="Latency percentiles per operation (dots, log scale)",
)
pub.figure(
    chart,
    "fs_micro-latency",
    f"Latency per operation: p50, p95, p99 and the maximum per benchmark and target ({lat_how}); log scale, each "
    "panel its own y scale. Look at the tail (p99, max) as much as at the median.",
)

# %% [markdown]
# ## Seed 003's benchstat table, in its form
#
# The seed ran old benchstat on three runs per file system. The same computation on this lab's runs, one
# block per other target against the baseline: per benchmark the mean of the repeats left after benchstat's
# outlier rule ± their largest deviation from it, the exact two-sided Mann-Whitney p of that row alone (not
# adjusted for the other rows, as benchstat), `~` unless p < α. Set it beside the seed's table; the lab's
# own judgement is the Holm-adjusted table after it.

# %%
base_target = queries.baseline_target(db, study, targets)
seed_form = micro.seed_benchstat(ops, base_target, alpha)
named = ops.filter(pl.col("target") != pl.col("target_label")).unique("target", maintain_order=True)
pub.text(
    f"Seed 003's benchstat table in its form (timed ops/s; mean ± largest deviation, unadjusted exact U test, "
    f"α = {alpha}), against {base_target}"
    + "".join(f"; {r['target']} is {r['target_label']}" for r in named.iter_rows(named=True))
    + ":\n\n"
    + "\n\n".join(f"```\n{text}```" for text in seed_form.values())
)

# %% [markdown]
# ## The lab's benchstat table (seed 003's layout, medians, Holm-adjusted)

# %%
grid = stats.benchstat_grid(
    ops, "timed_ops_per_s", "benchmark", "target_label", baseline, alpha=alpha, adjust="holm", higher_is_better=True
)
rows = grid.filter(pl.col("benchmark") != "geomean")
pub.table(
    micro.benchstat_table(grid, baseline),
    caption=f"benchstat-style comparison with {baseline}: median timed ops/s ± the order-statistic 95 % interval as % of it "
    f"(± ∞: too few repeats for one), delta when the Mann-Whitney U test, Holm-adjusted over all "
    f"{rows.height} comparisons, is below α = {alpha} (else `~`); geomean rows summarise each target.",
)
per = micro.with_latencies(per, lat)
pub.table(
    micro.operation_table(per),
    caption=f"Per benchmark and target: repeats, median ops/s over the repeats (the loop's, and the timed ops/s "
    "compared above), and the latency's mean and "
    f"percentiles in ms ({lat_how}).",
    digits={"mean ms": 3, "p50 ms": 3, "p95 ms": 3, "p99 ms": 3, "max ms": 2},
)
pub.save(micro.summary(per, grid))

# %%
geo = grid.filter(pl.col("benchmark") == "geomean")
sig = rows.filter(pl.col("significant"))
pub.text(
    "Over all benchmarks (geometric mean of medians), "
    + "; ".join(f"{r['candidate']} is {r['delta_pct']:+.1f} % against {baseline}" for r in geo.iter_rows(named=True))
    + f". {sig.height} of {rows.height} per-benchmark differences are significant after the Holm adjustment"
    + (
        (": " + ", ".join(f"{r['benchmark']} on {r['candidate']} {r['delta']}" for r in sig.iter_rows(named=True)))
        if sig.height
        else f" (with {int(per['n'].min())} repeats per cell the U test's smallest p limits what can be shown)"
    )
    + "."
)
