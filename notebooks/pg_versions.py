# %% [markdown]
# # PostgreSQL majors on each file system
#
# **Question.** Does a file-system choice still hold on the PostgreSQL a user will run next year? The study
# crosses every file system with several PostgreSQL majors (`postgres.versions`: one cluster per file system
# and major, interleaved in the plan like any targets). Two readings per cell (workload, data set, clients):
# each newer major against the oldest on the same file system, and each file system against the first one
# on the same major, with how that ratio changed from the oldest major to each newer one. A run's major is
# the one its server reported. Beside the tps: how busy the CPUs were, how long they waited on I/O and what
# the data device read per second.

# %% tags=["parameters"]
# Paths are relative to the repository (or absolute), wherever the kernel runs. The defaults read the
# pg-versions study (`make run CONFIG=config/pg-versions.yaml` first); papermill and `pgfslab notebook`
# pass another study's.
db = "data/pg-versions.duckdb"
study = "pg-versions"
targets = None  # a list of target names to keep, or None for every target
alpha = 0.05
trim_s = 2.0
figures_dir = "figures/pg-versions"
tables_dir = "build/pg-versions/tables"

# %%
from pgfslab.analysis import queries, report
from pgfslab.analysis.answers import pg_versions as pv
from pgfslab.analysis.notebook import setup
from pgfslab.analysis.verdicts.regime import run_measures

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
typed = queries.study_of(db)
runs = pv.runs_by_major(
    queries.require(queries.headline(db, study, targets), "successful runs"),
    queries.runs(db, study, only_ok=True),
    run_measures(str(db), study, trim_s),
)
if runs["pg_major"].n_unique() < 2:
    raise queries.MissingData(f"{db}: study {study!r} has no successful runs on more than one PostgreSQL major")
fs_order = list(dict.fromkeys(pv.fs_of(t, typed.pg_version_of(t)) for t in typed.targets))
comp = pv.compare(runs, fs_order, alpha)
pub = report.Publication(
    "pg_versions",
    "PostgreSQL majors on each file system",
    "Does a file-system choice still hold on a newer PostgreSQL, and what did each major change on each file system?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)
pub.save(comp)

# %%
pub.figure(
    pv.chart(comp, typed),
    "pg_versions",
    "Each newer major's throughput over the oldest major's on the same file system (Hodges-Lehmann ratio with "
    "its exact Mann-Whitney interval, log scale; dashed: 1, no difference). One panel per cell, one row per "
    "file system, one colour per major.",
)

# %%
for cell, table in pv.tables(comp, typed):
    pub.table(
        table,
        caption=f"{cell}: per file system and major, runs and median tps; the major's tps over the oldest "
        "major's on the same file system, the file system's over the first file system's on the same major, and "
        "how that ratio changed from the oldest major (a ratio of ratios, Welch t interval), each with its "
        "interval; medians over the runs of the CPUs' busy and I/O wait shares of all CPU time (/proc/stat) and "
        "the data device's reads per second (diskstats).",
        digits={"tps": 1, "CPU busy %": 0, "I/O wait %": 0, "device reads/s": 0},
    )

# %%
pub.text(pv.summary(comp, typed))
