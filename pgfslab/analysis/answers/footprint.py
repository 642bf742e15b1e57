"""How much space does the same data take on each target, and how well does it compress (notebook
compression_footprint)?

Logical size: PostgreSQL's `pg_database_size` and the sum of its relations (run.json). Physical: the
target file system's used space (statvfs, WAL and metadata included; ZFS's `used` on zfs). Compression, as
each file system accounts for it (`logical_bytes` before and `physical_bytes` after compression, with
`accounting` naming the source), which give the compression ratio and space savings:

* btrfs: compsize's uncompressed against its on-disk bytes of every file of the target;
* zfs: the dataset's `logicalused` against its `used` (`zfs get -Hp`, run.json `zfs_footprint`). Pools
  without `logicalused` (zfs-fuse's pool version 23) give `logicalused_est` = used x compressratio instead
  (compressratio has two decimals: about 0.5 % of rounding), and the accounting says so. Both are the whole
  dataset, snapshots included (its `usedbysnapshots` is in run.json). ZFS's logical bytes include its own
  metadata (indirect blocks, dnodes: many with recordsize 8k), so they are not the files' apparent size and
  can exceed it; not yet checked against `du --apparent-size` of the dataset (run.json does not record it).
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
    "zfs_used_bytes",
    "zfs_logicalused_bytes",
    "zfs_logicalused_est_bytes",
    "zfs_compressratio",
    "logical_bytes",
    "physical_bytes",
    "accounting",
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
    "logical, before compression (compsize / zfs)": "logical_bytes",
    "physical, after compression (compsize / zfs)": "physical_bytes",
}
ACCOUNTING_COMPSIZE = "btrfs compsize"
ACCOUNTING_ZFS = "zfs logicalused / used"
# zfs-fuse's pool version has no logicalused: the caption says so; the cell stays short for the page
ACCOUNTING_ZFS_EST = "zfs used × compressratio / used"


ZFS_COLUMNS = {
    "zfs_used_bytes": pl.Int64,
    "zfs_logicalused_bytes": pl.Int64,
    "zfs_logicalused_est_bytes": pl.Int64,
    "zfs_compressratio": pl.Float64,
}


def compression_columns(storage: pl.DataFrame) -> list[pl.Expr]:
    """`logical_bytes`, `physical_bytes` and `accounting` of each row of `queries.storage`: compsize where it
    measured (btrfs), else ZFS's logicalused (or its estimate) against used (zfs), else null."""
    has_comp = pl.col("compsize_disk_bytes").is_not_null() & pl.col("compsize_uncompressed_bytes").is_not_null()
    has_zfs = pl.col("zfs_used_bytes").is_not_null()
    zfs_logical = pl.coalesce("zfs_logicalused_bytes", "zfs_logicalused_est_bytes")
    return [
        pl.when(has_comp)
        .then(pl.col("compsize_uncompressed_bytes"))
        .when(has_zfs)
        .then(zfs_logical)
        .cast(pl.Int64)
        .alias("logical_bytes"),
        pl.when(has_comp)
        .then(pl.col("compsize_disk_bytes"))
        .when(has_zfs & zfs_logical.is_not_null())
        .then(pl.col("zfs_used_bytes"))
        .cast(pl.Int64)
        .alias("physical_bytes"),
        pl.when(has_comp)
        .then(pl.lit(ACCOUNTING_COMPSIZE))
        .when(has_zfs & pl.col("zfs_logicalused_bytes").is_not_null())
        .then(pl.lit(ACCOUNTING_ZFS))
        .when(has_zfs & pl.col("zfs_logicalused_est_bytes").is_not_null())
        .then(pl.lit(ACCOUNTING_ZFS_EST))
        .alias("accounting"),
    ]


def after_last_run(storage: pl.DataFrame, targets: pl.DataFrame, order: Sequence[str]) -> pl.DataFrame:
    """What does each target hold after its last run? `storage` (`queries.storage`: one row per run) cut
    to each target's last run (by `plan_index`), with the sizes right after the bulk load from `targets`
    (`queries.targets`: `load_database_bytes`, `load_fs_used_bytes`), the file system's own compression
    accounting (`compression_columns`) and its `ratio` and `space_savings` (`stats.compression_exprs`);
    targets in `order` (the config's), unknown ones last."""
    loaded = targets.select(
        "target",
        pl.col("database_bytes").alias("load_database_bytes"),
        pl.col("fs_used_bytes").alias("load_fs_used_bytes"),
    )
    rank = {t: i for i, t in enumerate(order)}
    missing = [pl.lit(None, dtype=t).alias(c) for c, t in ZFS_COLUMNS.items() if c not in storage.columns]
    storage = storage.with_columns(missing)  # facts from before zfs targets: no zfs accounting
    return (
        storage.sort("plan_index")
        .group_by("target", maintain_order=True)
        .last()
        .join(loaded, on="target", how="left")
        .with_columns(*compression_columns(storage))
        .with_columns(*stats.compression_exprs("logical_bytes", "physical_bytes"))
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
        size("logical_bytes").alias("logical (uncompr.)"),
        size("physical_bytes").alias("physical"),
        pl.col("ratio").alias("ratio"),
        pl.col("accounting").fill_null("–").alias("accounted by"),
        (100 * pl.col("space_savings")).alias("savings %"),
        (100 * pl.col("used_vs_reference")).alias("fs used vs ref. %"),
    )
