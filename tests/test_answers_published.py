"""pgfslab.analysis.answers.published on hand-made runs and published rows; expected rows written out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from pgfslab.analysis.answers import published

WORKLOADS = {
    "tpcb": {"tool": "pgbench", "builtin": "tpcb-like"},
    "tpcb-off": {"tool": "pgbench", "builtin": "tpcb-like", "postgres_settings": {"synchronous_commit": "off"}},
    "rw": {"tool": "sysbench", "test": "oltp_read_write"},
}


def test_pgbench_items() -> None:
    """Two workloads of one built-in script (sync on, sync off) stay two rows: never one pooled median."""
    runs = pl.DataFrame(
        {
            "tool": ["pgbench"] * 5 + ["sysbench"],
            "workload": ["tpcb"] * 3 + ["tpcb-off"] * 2 + ["rw"],
            "target_label": ["ext4"] * 6,
            "clients": [4] * 6,
            "value": [100.0, 300.0, 200.0, 900.0, 1100.0, 5.0],
        }
    )
    pub = pl.DataFrame(
        {
            "builtin": ["tpcb-like", "select-only"],
            "target": ["nvme", "nvme"],
            "clients": [8, 8],
            "tps": [1234.5, 99.0],
            "fs": ["ext4", "ext4"],
            "scale": [100, 100],
            "pg_version": ["15", "15"],
            "settings": ["synchronous_commit=off, fsync=on", ""],
        }
    )
    items = published.pgbench_items(runs, pub, WORKLOADS, 10)
    assert items.rows() == [
        (
            "pgbench tps (seed 001)",
            "tpcb-like · ext4 · c=4 · tpcb",
            "this lab",
            200.0,
            "tps",
            "median of 3 runs, scale 10",
        ),
        (
            "pgbench tps (seed 001)",
            "tpcb-like · ext4 · c=4 · tpcb-off",
            "this lab",
            1000.0,
            "tps",
            "median of 2 runs, scale 10",
        ),
        (
            "pgbench tps (seed 001)",
            "tpcb-like · nvme · c=8 · sync off",
            "published",
            1234.5,
            "tps",
            "ext4, scale 100, PG 15; synchronous_commit=off, fsync=on",
        ),
    ]
    assert published.pgbench_items(runs, pub.clear(), WORKLOADS, 10).height == 0


def test_sysbench_items() -> None:
    progress = pl.DataFrame(
        {
            "tool": ["sysbench"] * 8,
            "workload": ["rw"] * 8,
            "target_label": ["ext4"] * 8,
            "clients": [8] * 8,
            "run_id": ["r1"] * 5 + ["r2"] * 3,
            "t_s": [1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0],
            "tps": [0.0, 0.0, 10.0, 20.0, 30.0, 20.0, 40.0, 60.0],
        }
    )
    pub = pl.DataFrame(
        {
            "workload": ["oltp_read_write", "oltp_read_only"],
            "device": ["intel", "intel"],
            "fillfactor": [100, 100],
            "threads": [16, 16],
            "tps_avg": [1000.0, 1.0],
            "tps_variance": [2500.0, 1.0],
        }
    )
    # after 2 s: r1 10 20 30 (mean 20, σ² 100, CV 0.5), r2 20 40 60 (mean 40, σ² 400, CV 0.5); medians 30, 250, 0.5
    assert published.sysbench_items(progress, pub, WORKLOADS, 2.0).rows() == [
        (
            published.SYSBENCH,
            "oltp_read_write · ext4 · 8 thr",
            "this lab",
            50.0,
            "%",
            "avg 30 tps, σ² 250 (medians of 2 runs)",
        ),
        (published.SYSBENCH, "oltp_read_write · intel ff100 · 16 thr", "published", 5.0, "%", "avg 1000 tps, σ² 2500"),
    ]


def test_family() -> None:
    names = pl.Series(["fsbench/create_fsync_1MB", "delete_small_dir_2MB", "statfs", "write_4KiB", "x_1.5GB"])
    assert names.to_frame("b").select(published.family(pl.col("b")))["b"].to_list() == [
        "create_fsync",
        "delete_small_dir",
        "statfs",
        "write",
        "x",
    ]


def test_fs_items() -> None:
    ops = pl.DataFrame(
        {
            "benchmark": ["statfs", "create_fsync_4KB", "create_fsync_4KB", "create_fsync_4KB"],
            "target_label": ["ext4"] * 4,
            "ops_per_s": [5.0, 10.0, 30.0, 20.0],
        }
    )
    pub = pl.DataFrame(
        {
            "benchmark": ["fsbench/create_fsync_1MB", "fsbench/create_fsync_1MB", "rename"],
            "fs": ["xfs"] * 3,
            "ops_per_s": [100.0, 200.0, 7.0],
        }
    )
    assert published.fs_items(ops, pub).rows() == [
        (published.FS, "create_fsync_4KB · ext4", "this lab", 20.0, "ops/s", "median of 3 repeats"),
        (published.FS, "statfs · ext4", "this lab", 5.0, "ops/s", "median of 1 repeats"),
        (published.FS, "fsbench/create_fsync_1MB · xfs", "published", 150.0, "ops/s", "median of 2 published runs"),
    ]


def test_compression_items() -> None:
    storage = pl.DataFrame(
        {
            "target": ["zstd", "zstd", "ext4", "plain"],
            "fs": ["btrfs", "btrfs", "ext4", "btrfs"],
            "mount_options": ["noatime,compress=zstd:1"] * 2 + [None, "noatime"],
            "plan_index": [2, 1, 3, 4],
            "compsize_uncompressed_bytes": [400, 999, None, 100],
            "compsize_disk_bytes": [100, 999, None, 100],
        }
    )
    compression = pl.DataFrame(
        {
            "fs": ["btrfs", "btrfs", "btrfs"],
            "mount_options": ["compress=lzo", "compress=zstd", "compress=zstd"],
            "workload": ["tpcc", "tpcb", "x"],
            "logical_gb": [None, 10.0, None],
            "physical_gb": [None, 4.0, None],
            "space_savings_min_pct": [30.0, None, None],
            "space_savings_max_pct": [50.0, None, None],
        }
    )
    space = pl.DataFrame({"device": ["sfx", "intel"], "fillfactor": [70, 100], "compression_ratio": [2.0, None]})
    rows = published.compression_items(storage, compression, space).rows()
    assert [r[1:] for r in rows] == [
        ("zstd (btrfs compress=zstd:1)", "this lab", 75.0, "%", "compsize ratio 4.00:1"),
        ("plain (btrfs)", "this lab", 0.0, "%", "compsize ratio 1.00:1"),
        ("btrfs compress=lzo · tpcc", "published", 40.0, "%", "published 30–50 %"),
        ("btrfs compress=zstd · tpcb", "published", pytest.approx(60.0), "%", "from logical/physical GB"),
        ("sfx · fillfactor 70", "published", 50.0, "%", "compression ratio 2.00:1"),
    ]
    assert {r[0] for r in rows} == {published.SPACE}
    assert published.compression_items(storage, compression.clear(), space.clear()).height == 0


def test_comparable_and_ranges() -> None:
    items = pl.DataFrame(
        {
            "kind": ["a", "a", "a", "b"],
            "item": ["x", "y", "z", "w"],
            "source": [published.LAB, published.LAB, published.PUB, published.LAB],
            "value": [1.0, 3.0, 10.0, 5.0],
            "unit": ["tps"] * 3 + ["%"],
            "note": [""] * 4,
        }
    )
    table = published.comparable([items.head(2), items.tail(2)])
    assert table["item"].to_list() == ["x", "y", "z"]  # b has no published side
    assert published.ranges(table).rows() == [("a", "tps", 1.0, 3.0, 10.0, 10.0)]
    assert published.comparable([]).height == 0
