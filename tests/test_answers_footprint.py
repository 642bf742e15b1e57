"""pgfslab.analysis.answers.footprint on hand-made storage facts; expected values worked out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from pgfslab.analysis.answers import footprint

MiB = 2**20


def storage() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "target": ["ext4", "ext4", "btrfs", "ext4-ff70", "zz"],
            "fs": ["ext4", "ext4", "btrfs", "ext4", "xfs"],
            "mount_options": [None, None, "compress=zstd", None, None],
            "plan_index": [2, 1, 3, 4, 5],
            "run_id": ["e2", "e1", "b1", "f1", "z1"],
            "dataset": ["s10"] * 5,
            "fillfactor": [100, 100, 100, 70, 100],
            "database_bytes": [20 * MiB, 10 * MiB, 20 * MiB, 25 * MiB, 20 * MiB],
            "relations_bytes": [18 * MiB, 9 * MiB, 18 * MiB, 23 * MiB, 18 * MiB],
            "all_databases_bytes": [30 * MiB, 20 * MiB, 30 * MiB, 35 * MiB, 30 * MiB],
            "fs_used_bytes": [200 * MiB, 100 * MiB, 50 * MiB, 250 * MiB, 100 * MiB],
            "compsize_uncompressed_bytes": [None, None, 300 * MiB, None, None],
            "compsize_disk_bytes": [None, None, 100 * MiB, None, None],
        }
    )


def zfs_storage() -> pl.DataFrame:
    """zfs-fuse (no logicalused: the estimate used x compressratio, as run.json records it) and OpenZFS."""
    return pl.DataFrame(
        {
            "target": ["zfs-fuse", "openzfs"],
            "fs": ["zfs", "zfs"],
            "plan_index": [6, 7],
            "run_id": ["zf1", "zo1"],
            "dataset": ["s10"] * 2,
            "fillfactor": [100, 100],
            "database_bytes": [20 * MiB, 20 * MiB],
            "fs_used_bytes": [40 * MiB, 30 * MiB],
            "compsize_uncompressed_bytes": [None, None],
            "compsize_disk_bytes": [None, None],
            "zfs_used_bytes": [40 * MiB, 30 * MiB],
            "zfs_logicalused_bytes": [None, 90 * MiB],
            "zfs_logicalused_est_bytes": [100 * MiB, None],
            "zfs_compressratio": [2.5, 3.0],
        }
    )


def targets() -> pl.DataFrame:
    return pl.DataFrame(
        {"target": ["btrfs", "ext4"], "database_bytes": [16 * MiB, 15 * MiB], "fs_used_bytes": [40 * MiB, 150 * MiB]}
    )


def last() -> pl.DataFrame:
    return footprint.after_last_run(storage(), targets(), ["btrfs", "ext4", "ext4-ff70"])


def test_after_last_run() -> None:
    out = last()
    assert out["target"].to_list() == ["btrfs", "ext4", "ext4-ff70", "zz"]  # config order, unknown last
    assert out["run_id"].to_list() == ["b1", "e2", "f1", "z1"]  # each target's last run by plan_index
    assert out["load_database_bytes"].to_list() == [16 * MiB, 15 * MiB, None, None]
    assert out["ratio"][0] == 3.0 and out["space_savings"][0] == pytest.approx(2 / 3)
    assert out["ratio"][1] is None
    assert out["accounting"].to_list() == [footprint.ACCOUNTING_COMPSIZE, None, None, None]
    assert out["logical_bytes"][0] == 300 * MiB and out["physical_bytes"][0] == 100 * MiB


def test_zfs_accounting_beside_compsize() -> None:
    st = pl.concat([storage(), zfs_storage()], how="diagonal_relaxed")
    out = footprint.after_last_run(st, targets(), ["btrfs", "zfs-fuse", "openzfs"])
    z, o = out.row(1, named=True), out.row(2, named=True)
    # zfs-fuse: logical 100 MiB (estimate) against used 40 MiB: ratio 2.5, savings 1 - 40/100
    assert (z["target"], z["logical_bytes"], z["physical_bytes"]) == ("zfs-fuse", 100 * MiB, 40 * MiB)
    assert z["ratio"] == pytest.approx(2.5) and z["space_savings"] == pytest.approx(0.6)
    assert z["accounting"] == footprint.ACCOUNTING_ZFS_EST
    # OpenZFS: logicalused 90 MiB against used 30 MiB: ratio 3, savings 2/3
    assert (o["logical_bytes"], o["physical_bytes"], o["accounting"]) == (90 * MiB, 30 * MiB, footprint.ACCOUNTING_ZFS)
    assert o["ratio"] == pytest.approx(3.0) and o["space_savings"] == pytest.approx(2 / 3)
    long = footprint.sizes_long(out.filter(pl.col("target") == "zfs-fuse"))
    assert long["MiB"].to_list() == [20.0, 40.0, 100.0, 40.0]


def test_with_reference() -> None:
    out = footprint.with_reference(last(), "ext4")
    assert out["reference"].to_list() == ["ext4", "ext4", "ext4-ff70", "ext4"]
    # btrfs uses 50 MiB against ext4's 200: 75 % smaller; zz 100 against 200: 50 %
    assert out["used_vs_reference"].to_list() == pytest.approx([0.75, 0.0, 0.0, 0.5])
    assert out.select(footprint.SAVED_COLUMNS).columns == footprint.SAVED_COLUMNS


def test_no_data_kept_means_no_reference_share() -> None:
    empty = last().with_columns(pl.lit(None, pl.Int64).alias("database_bytes"))
    assert footprint.keeps_data(last()) and not footprint.keeps_data(empty)
    assert footprint.with_reference(empty, "ext4")["used_vs_reference"].to_list() == [None] * 4


def test_sizes_long_in_mib_without_unknowns() -> None:
    long = footprint.sizes_long(last().filter(pl.col("target").is_in(["btrfs", "ext4"])))
    assert long.filter(pl.col("target") == "btrfs")["MiB"].to_list() == [20.0, 50.0, 300.0, 100.0]
    assert long.filter(pl.col("target") == "ext4")["measure"].to_list() == ["PostgreSQL database", "file system used"]


def test_footprint_table() -> None:
    table = footprint.footprint_table(footprint.with_reference(last(), "ext4"))
    row = table.row(0, named=True)
    assert row["target"] == "btrfs" and row["fs used"] == "50.0 MiB" and row["physical"] == "100.0 MiB"
    assert row["database after load"] == "16.0 MiB" and row["ratio"] == 3.0
    assert row["savings %"] == pytest.approx(200 / 3) and row["fs used vs ref. %"] == pytest.approx(75.0)
    assert table["physical"][1] is None  # shown as – in the Markdown table
    assert row["logical (uncompr.)"] == "300.0 MiB" and row["accounted by"] == "btrfs compsize"
