# %% [markdown]
# # Asynchronous I/O on each file system: io_method against sync
#
# **Question.** PostgreSQL 18 reads through `io_method` = sync (every read done by the backend that needs
# it), worker (the default: `io_workers` processes read ahead of the backends) or io_uring. Buffered
# asynchronous reads depend on the file system's read path: which file systems gain from them, and which do
# not? The study's workloads that differ only in their `postgres_settings` form a family; each variant is
# compared with the family's io_method sync variant on the same target (Hodges-Lehmann ratio, exact
# Mann-Whitney interval), beside what the data device read per second, what pg_stat_io counted, and how busy
# the CPUs were and how long they waited on I/O.

# %% tags=["parameters"]
# Paths are relative to the repository (or absolute), wherever the kernel runs. The defaults read the aio
# study (`make run STUDY=aio` first); papermill and `pgfslab notebook` pass another study's.
db = "data/aio.duckdb"
study = "aio"
targets = None  # a list of target names to keep, or None for every target
alpha = 0.05
trim_s = 2.0
figures_dir = "figures/aio"
tables_dir = "build/aio/tables"

# %%
import polars as pl

from pgfslab.analysis import queries, report
from pgfslab.analysis.answers import io_methods as io
from pgfslab.analysis.notebook import setup
from pgfslab.analysis.verdicts.regime import run_measures

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
typed = queries.study_of(db)
fam = queries.require(io.families(typed), "PostgreSQL workloads that set io_method (their postgres_settings)")
runs = io.with_measures(
    queries.require(
        queries.headline(db, study, targets).filter(
            pl.col("base_workload").is_in(fam["workload"].to_list()) & pl.col("value").is_not_null()
        ),
        "runs of the workloads that set io_method",
    ),
    run_measures(str(db), study, trim_s),
    queries.pg_io_reads(db, study, targets),
)
comp = io.compare(runs, fam, io.cells(typed, fam, targets), alpha)
pub = report.Publication(
    "io_methods",
    "Asynchronous I/O on each file system",
    "Which file systems gain from PostgreSQL 18's asynchronous reads (io_method worker) over sync, and which do not?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)
pub.save(comp)

# %%
pub.figure(
    io.chart(comp, colors),
    "io_methods",
    "Each variant's throughput over its family's io_method sync variant on the same target (Hodges-Lehmann "
    "ratio with its exact Mann-Whitney interval, log scale; dashed: 1, no difference). One panel per family "
    "(workloads that differ only in postgres_settings), one row per variant, one colour per target.",
)

# %%
pub.table(
    io.table(comp),
    caption="Per family, target and variant: runs, median tps, tps over the sync variant's with its interval, "
    "what the interval says (gained: above 1; lost: below 1; else the precision it had), and medians over the "
    "variant's runs of the data device's reads per second (diskstats), pg_stat_io's read operations per second "
    "(PostgreSQL 18 combines several blocks into one read), and the CPUs' busy and I/O wait shares of all CPU "
    "time (/proc/stat, machine-wide: server, clients and io workers).",
    digits={"tps": 1, "device reads/s": 0, "pg_stat_io reads/s": 0, "CPU busy %": 0, "I/O wait %": 0},
)

# %%
pub.text(io.summary(comp))
