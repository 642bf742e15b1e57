# %% [markdown]
# # Throughput against data-set size
#
# **Question.** How does throughput fall as the data set outgrows shared_buffers, then the memory the
# server may use (cgroup limit), then RAM (seeds 000 and 004)? Each run's throughput is placed at its
# database size, with the memory thresholds as labelled reference lines. A scale ladder needs several data
# set sizes (targets with different `dataset` overrides, or several studies); with one size, the figure
# shows throughput per target and the table says where that one size sits against the thresholds.

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

from pgfslab.analysis import charts, queries, report
from pgfslab.analysis.answers import scaling
from pgfslab.analysis.notebook import setup

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
runs = queries.require(
    queries.headline(db, study, targets).filter(
        pl.col("tool").is_in(["pgbench", "sysbench"]) & pl.col("value").is_not_null()
    ),
    "PostgreSQL runs (pgbench or sysbench) with a throughput",
)

# %%
pub = report.Publication(
    "scaling",
    "Throughput against data-set size",
    "Where does the data set sit against shared_buffers, the memory limit and RAM, and what does it cost?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)
runs = scaling.with_sizes(runs, queries.memory_facts(db, study, targets))
ladder = scaling.is_ladder(runs)
sc = scaling.scaling(runs)
sc = sc._replace(table=queries.in_config_order(sc.table, db, study, ["cell"], col="target_label"))

# %%
refs = [(float(r["size"]), r["threshold"]) for r in sc.thresholds.iter_rows(named=True) if r["size"] is not None]
if ladder:
    lines = [
        charts.scaling_curve(
            sc.table.filter(pl.col("cell") == c),
            "size_mib",
            "median",
            "target_label",
            reference_lines=refs,
            color_scale=colors,
            err_low="median_ci_low",
            err_high="median_ci_high",
            x_title="database size (MiB)",
            y_title="tps",
            title=f"{c}: throughput against database size",
            log_x=True,
        )
        for c in sc.table["cell"].unique(maintain_order=True).to_list()
    ]
    chart = charts.alt.vconcat(*lines)
    caption = (
        "Median throughput (with its interval over repeats) against the database size, one line per target, "
        "log x; dashed: shared_buffers, the cgroup memory limit (when applied) and RAM. Look for the drop where "
        "a line crosses a threshold."
    )
else:
    chart = charts.grouped_bars_with_error(
        sc.table,
        "cell",
        "median",
        "target_label",
        "median_ci_low",
        "median_ci_high",
        colors,
        x_title="workload / clients",
        y_title="median throughput (tps)",
        title="Throughput per target at this study's one data-set size",
    )
    caption = (
        "Median throughput per target and cell with its interval over repeats, at the study's single data-set "
        "size (see the table for where it sits against the memory thresholds). A scale ladder needs several "
        "data-set sizes: targets with different `dataset` overrides, or one study per scale."
    )
pub.figure(chart, "scaling", caption)

# %%
pub.save(sc.table)
sets = queries.in_config_order(scaling.data_sets(runs, sc.table), db, study, col="target_label")
pub.table(
    scaling.threshold_table(runs),
    caption="Memory thresholds of this study's runs (as in force: shared_buffers from pg_settings, the "
    "cgroup limit of PostgreSQL and its clients, page cache included, RAM from /proc/meminfo).",
)
pub.table(
    scaling.data_set_table(sets),
    caption="Data set of each target: its database size (median over runs, MiB) and "
    "where it sits against the thresholds.",
)
pub.table(
    scaling.scaling_cells_table(sc.table, ladder),
    caption="Median run throughput per target, cell and data-set size, with its distribution-free interval over "
    "repeats" + (", relative to the same target's smallest size." if ladder else "."),
    digits={"vs smallest": 2},
)
pub.text(
    (
        "Several data-set sizes: see how throughput falls across the thresholds. "
        if ladder
        else f"This study uses one data-set size per target ({', '.join(sorted(set(runs['dataset'])))}); "
        "a scale ladder needs several sizes. "
    )
    + "The data set of "
    + ", ".join(
        f"{r['target_label']} is {r['size_mib']:.0f} MiB ({r['regime'] or '–'})" for r in sets.iter_rows(named=True)
    )
    + "."
)
