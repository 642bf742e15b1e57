# %% [markdown]
# # Dirty memory, write-back and checkpoints
#
# **Question.** How much dirty page cache does each storage target let build up, how fast is it written
# back, and do checkpoints line up with the dips in throughput (seeds 000 and 004)? `Dirty` and
# `Writeback` from /proc/meminfo are drawn over one run per cell (the repeat with the median throughput);
# checkpoints are shaded, from the server log's `checkpoint starting` to `checkpoint complete` lines (the
# `pg_checkpoints` table, ingested from each run's `postgresql.log`), or marked where the pg_stat sampler saw the checkpoint counters grow.
# The table gives, per run, the share of the throughput variance that falls in checkpoint windows next to
# the share of time they cover (`stats.checkpoint_attribution`).

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
from pgfslab.analysis.answers import dirty_memory
from pgfslab.analysis.notebook import setup

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
mem = queries.require(
    queries.meminfo(db, study, ["Dirty", "Writeback"], targets).filter(pl.col("tool").is_in(["pgbench", "sysbench"])),
    "/proc/meminfo samples of PostgreSQL runs",
)

# %%
pub = report.Publication(
    "dirty_memory_checkpoints",
    "Dirty memory, write-back and checkpoints",
    "How much dirty page cache builds up, and do checkpoints line up with throughput dips?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)
tps = queries.throughput_on_sampler_clock(db, study, targets)
pgs = queries.pgstat(db, study, targets)

# %%
# checkpoint windows per run, on the samplers' clock, within the benchmark (shutdown checkpoints left out)
logged, origin = queries.checkpoint_log(db, study, targets), queries.run_clock_origin(db, study)
windows = dirty_memory.checkpoint_windows(mem, tps, logged, origin, pgs)
ckpt_source = ", ".join(sorted(set(windows["from"].to_list())))

# %% [markdown]
# ## Dirty and Writeback over one run per cell

# %%
rep = dirty_memory.representative_runs(queries.headline(db, study, targets), mem["run_id"].unique())
shown, wins = dirty_memory.figure_data(mem, rep["run_id"], windows)
n_cells = shown.select("workload", "clients").n_unique()
chart = charts.timeline_with_windows(
    shown,
    "t_s",
    "MiB",
    "key",
    "panel",
    wins,
    y_title="MiB",
    title="Dirty and Writeback page cache",
    window_label="checkpoint",
    columns=min(4, n_cells),
    panel_height=70 if n_cells > 1 else 90,
)
pub.figure(
    chart,
    "dirty_memory_checkpoints",
    "Dirty and Writeback memory (/proc/meminfo, MiB) over one run per cell (the repeat with the median "
    "throughput), seconds since the samplers started; one row of panels per target; "
    + (
        f"grey: checkpoints (from the {ckpt_source}). "
        if ckpt_source
        else "no checkpoint started during these benchmarks (only at shutdown). "
    )
    + "All panels share "
    "one y scale: compare how high Dirty climbs before write-back drains it on each target.",
)

# %% [markdown]
# ## Throughput per second over the same runs
#
# The same representative runs, their throughput per second on the samplers' clock, one panel per cell side
# by side on one y scale (seed 000 drew its two `dirty_background_bytes` settings this way), checkpoints
# shaded as above and, on targets with a snapshot schedule, each snapshot's creation marked.

# %%
snaps = queries.snapshot_events(db, study, targets)
tps_shown, tps_wins, snap_marks = dirty_memory.throughput_figure_data(tps, rep["run_id"], windows, snaps, origin)
if tps_shown.height:
    pub.figure(
        charts.timeline_with_windows(
            tps_shown,
            "t_s",
            "tps",
            "target_label",
            "panel",
            tps_wins,
            series_scale=colors,
            y_title="transactions per second",
            title="Throughput per second",
            window_label="checkpoint",
            marks=snap_marks,
            mark_label="snapshot creation",
            columns=min(4, n_cells),
            panel_height=70 if n_cells > 1 else 90,
        ),
        "dirty_memory_checkpoints-tps",
        "Throughput per second (" + ", ".join(sorted(set(tps_shown["source"].to_list()))) + ") of the runs "
        "drawn above, seconds since the samplers started; one panel per cell, all on one y scale; grey: "
        "checkpoints"
        + (
            f"; red: the {snap_marks.height} snapshot creations of the snapshot schedule during these runs"
            if snap_marks.height
            else ""
        )
        + ". Compare how deep and how often throughput dips in each cell.",
    )
else:
    pub.text("No per-second throughput on the samplers' clock for these runs (no aggregate log, no pg_stat sampler).")

# %% [markdown]
# ## Per run: dirty memory, checkpoints and their share of the throughput variance

# %%
per_run = queries.in_config_order(dirty_memory.per_run(mem, tps, windows, pgs), db, study, ["workload", "clients"])
pub.save(per_run)
cells = dirty_memory.per_cell(per_run)
tps_sources = ", ".join(sorted(set(per_run["tps_source"].drop_nulls().to_list()))) or "none"
pub.table(
    dirty_memory.cell_table(cells),
    caption="Per cell (medians over runs; checkpoint counts summed): dirty and write-back memory (MiB); checkpoints that "
    "started during the benchmark (server log), and the pg_stat_bgwriter checkpoint counters' increase while the "
    "server ran (also after the benchmark, until shutdown); the share of time in checkpoint "
    "windows and the share of the throughput's variance (sum of squared deviations) that falls in them "
    f"(variance share well above the time share: checkpoints drive the variation); throughput in vs out of "
    f"checkpoints. Throughput on the samplers' clock: {tps_sources}.",
)

# %%
top = cells.sort("dirty_max_mib", descending=True).row(0, named=True)
text = (
    f"Dirty memory peaks highest on {top['target_label']} ({top['workload']}, {top['clients']} client(s)): "
    f"{top['dirty_max_mib']:.0f} MiB (median over runs). "
)
with_ckpt = per_run.filter(pl.col("n_in").fill_null(0) > 0)
if with_ckpt.height:
    text += (
        f"In the {with_ckpt.height} run(s) with checkpoints during the benchmark, they cover a median of "
        f"{report.pct(with_ckpt['time_share'].median())} of the seconds and hold "
        f"{report.pct(with_ckpt['variance_share'].median())} of the throughput variance."
    )
else:
    text += "No checkpoint started during any benchmark (only shutdown checkpoints): the runs are shorter than checkpoint_timeout and did not fill max_wal_size."
pub.text(text)
