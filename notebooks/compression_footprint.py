# %% [markdown]
# # Footprint and compression
#
# **Question.** How much space does the same data take on each target: PostgreSQL's logical size against
# what the file system stores (seeds 002 and 004)? Logical: `pg_database_size` of the benchmark database
# and the sum of its relations (run.json's PostgreSQL facts). Physical: the target file system's used
# space (statvfs, WAL and metadata included; ZFS's `used` on zfs) and each file system's own compression
# accounting: on btrfs `compsize`'s on-disk bytes against the files' uncompressed bytes, on zfs the dataset's
# `used` against its `logicalused` (`zfs get -Hp`; zfs-fuse's pool version 23 has no `logicalused`, so
# there it is estimated as used × compressratio, and the table says so; ZFS's logical bytes include its own
# metadata, so they are not the files' apparent size). These give the compression ratio and the space savings
# 1 − physical / logical.
# A page-level estimate (`stats.page_compression_estimate`, each 8 kB page compressed on its own) would
# need the relation files, which the raw folder does not keep; the numbers here are what run.json holds.

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
from pgfslab.analysis.answers import footprint
from pgfslab.analysis.notebook import setup

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
st = queries.require(queries.storage(db, study, targets), "run.json footprint facts")

# %%
pub = report.Publication(
    "compression_footprint",
    "Footprint and compression",
    "How much space does the same data take on each target, and how well does it compress?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)
last = footprint.after_last_run(st, queries.targets(db, study, targets), queries.target_names(db, study))
# physical footprint relative to the first target holding the same data set (same dataset and fillfactor)
last = footprint.with_reference(last, queries.baseline_target(db, study, targets))
has_data = footprint.keeps_data(last)  # fsmicro removes its files: nothing stays
pub.save(last.select(footprint.SAVED_COLUMNS))

# %% [markdown]
# ## Logical and physical size per target

# %%
chart = charts.grouped_bars_with_error(
    footprint.sizes_long(last),
    "target",
    "MiB",
    "measure",
    x_title="target",
    y_title="MiB",
    title="Logical and physical size after each target's last run",
)
pub.figure(
    chart,
    "compression_footprint",
    "Size of the same data on each target after its last run: PostgreSQL's database size (logical), the file "
    "system's used space (physical, WAL and file-system metadata included), and where the file system accounts for "
    "compression, the bytes before and after it (btrfs: compsize over all files; zfs: the dataset's logicalused and "
    "used, or used × compressratio on zfs-fuse). A short 'physical' bar next to a tall 'logical' bar is compression "
    "at work.",
)
pub.table(
    # one column per target: a dozen measures side by side would not fit the page (up to eight targets of distinct
    # names; fs-compare has seven)
    report.transposed(footprint.footprint_table(last), "target", digits={"ratio": 2}, most=8),
    caption="Footprint per target after its last run (database size also right after the bulk load). ratio = "
    "logical / physical bytes as the file system accounts for them (`accounted by`: btrfs compsize, zfs "
    "logicalused / used, or on zfs-fuse, whose pool version has no logicalused, used × compressratio / used; ext4 and xfs do not compress), savings = "
    "1 − physical / logical; `fs used vs ref.`: 1 − used space / the used space of the first target holding "
    "the same data set and fillfactor (positive: smaller).",
    digits={"ratio": 2},
)

# %%
comp_rows = last.filter(pl.col("ratio") > 1.01)  # a ratio of 1.00 is a file system that stored everything as is
text = ""
if comp_rows.height:
    best = comp_rows.sort("ratio", descending=True).row(0, named=True)
    text += (
        f"Compression is best on {best['target']}: {best['ratio']:.2f}:1, space savings "
        f"{report.pct(best['space_savings'])} ({best['accounting']}, the whole file system or dataset). "
    )
else:
    text += "No target compresses (no btrfs compsize or zfs accounting above 1:1 in this study). "
if not has_data:
    text += (
        "This study keeps no data on its targets between runs (the file-system micro-benchmarks remove the files "
        "they make), so the used space is the file systems' own metadata and there is nothing to compress. "
    )
else:
    big = last.sort("database_bytes", descending=True).row(0, named=True)
    small = last.sort("database_bytes").row(0, named=True)
    text += (
        f"PostgreSQL's own database size ranges from {report.bytes_h(small['database_bytes'])} ({small['target']}) "
        f"to {report.bytes_h(big['database_bytes'])} ({big['target']})."
    )
text += (
    " The page-level estimate (each 8 kB page compressed alone, `stats.page_compression_estimate`) needs the "
    "relation files, which the raw folder does not keep."
)
pub.text(text)
