"""How much space does the same data take on each target, and how well does it compress (notebook
compression_footprint)?

Logical size: PostgreSQL's `pg_database_size` and the sum of its relations (run.json). Physical: the
target file system's used space (statvfs, WAL and metadata included) and, on btrfs, compsize's on-disk
bytes against the files' uncompressed bytes, which give the compression ratio and space savings.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pgfslab.analysis import report, stats

SAVED_COLUMNS = [
    "target",
    "fs",
    "mount_options",
    "fillfactor",
    "dataset",
    "run_id",
    "database_bytes",
    "relations_bytes",
    "all_databases_bytes",
    "fs_used_bytes",
    "compsize_uncompressed_bytes",
    "compsize_disk_bytes",
    "ratio",
    "space_savings",
    "load_database_bytes",
    "load_fs_used_bytes",
    "reference",
    "used_vs_reference",
]
# the figure's bars: what each measure is called -> its column
MEASURES = {
    "PostgreSQL database": "database_bytes",
    "file system used": "fs_used_bytes",
    "files, uncompressed (compsize)": "compsize_uncompressed_bytes",
    "on disk (compsize)": "compsize_disk_bytes",
}


def after_last_run(storage: pl.DataFrame, targets: pl.DataFrame, order: Sequence[str]) -> pl.DataFrame:
    """What does each target hold after its last run? `storage` (`queries.storage`: one row per run) cut
    to each target's last run (by `plan_index`), with the sizes right after the bulk load from `targets`
    (`queries.targets`: `load_database_bytes`, `load_fs_used_bytes`), compsize's `ratio` and
    `space_savings` (`stats.compression_exprs`); targets in `order` (the config's), unknown ones last."""
    loaded = targets.select(
        "target",
        pl.col("database_bytes").alias("load_database_bytes"),
        pl.col("fs_used_bytes").alias("load_fs_used_bytes"),
    )
    rank = {t: i for i, t in enumerate(order)}
    return (
        storage.sort("plan_index")
        .group_by("target", maintain_order=True)
        .last()
        .join(loaded, on="target", how="left")
        .with_columns(*stats.compression_exprs("compsize_uncompressed_bytes", "compsize_disk_bytes"))
        .sort(pl.col("target").replace_strict(rank, default=len(rank), return_dtype=pl.Int64))
    )


def keeps_data(last: pl.DataFrame) -> bool:
    """Does the study keep data on its targets? (The fs micro-benchmarks remove the files they make.)"""
    return bool(last["database_bytes"].is_not_null().any())


def with_reference(last: pl.DataFrame, baseline: str) -> pl.DataFrame:
    """`last` with `reference` (the first target holding the same dataset and fillfactor, `baseline`
    first) and `used_vs_reference` = 1 - used space / the reference's used space (positive: smaller;
    null when the study keeps no data)."""
    ref = (
        last.sort(pl.col("target") != baseline)
        .group_by("dataset", "fillfactor", maintain_order=True)
        .agg(pl.col("target").first().alias("reference"), pl.col("fs_used_bytes").first().alias("ref_used"))
    )
    return last.join(ref, on=["dataset", "fillfactor"], how="left").with_columns(
        pl.when(pl.lit(keeps_data(last)))
        .then(1 - pl.col("fs_used_bytes") / pl.col("ref_used"))
        .alias("used_vs_reference")
    )


def sizes_long(last: pl.DataFrame) -> pl.DataFrame:
    """The figure's data: one row per target and measure (`MEASURES`) that is known, in MiB."""
    long = pl.concat(
        [
            last.select("target", pl.lit(k).alias("measure"), (pl.col(v) / 2**20).alias("MiB"))
            for k, v in MEASURES.items()
        ]
    )
    return long.filter(pl.col("MiB").is_not_null())


def footprint_table(last: pl.DataFrame) -> pl.DataFrame:
    """`with_reference`'s rows as the reader sees them: sizes in human units, savings in %."""

    def size(c: str) -> pl.Expr:
        return pl.col(c).map_elements(report.bytes_h, return_dtype=pl.Utf8)

    return last.select(
        "target",
        "fs",
        pl.col("fillfactor"),
        pl.col("dataset"),
        size("load_database_bytes").alias("database after load"),
        size("database_bytes").alias("database"),
        size("fs_used_bytes").alias("fs used"),
        size("compsize_uncompressed_bytes").alias("files (uncompr.)"),
        size("compsize_disk_bytes").alias("on disk"),
        pl.col("ratio").alias("ratio"),
        (100 * pl.col("space_savings")).alias("savings %"),
        (100 * pl.col("used_vs_reference")).alias("fs used vs ref. %"),
    )
