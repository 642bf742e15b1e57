"""Commits per WAL flush (pgfslab.analysis.wal) and the WAL device apart from the data device
(pgfslab.analysis.wal_device) on small hand-made frames; every expected value is worked out by hand in
the comments. The same functions on recorded real runs: tests/test_wal_recorded.py."""

from __future__ import annotations

import polars as pl
import pytest

from pgfslab.analysis import wal, wal_device
from pgfslab.records.run_record import parse


def _pgstat(run_id: str, ts: list[float], **cols: list[float | int | None]) -> pl.DataFrame:
    n = len(ts)
    base = {"run_id": [run_id] * n, "epoch_s": ts}
    return pl.DataFrame({**base, **cols})


def _three_samples(run_id: str) -> pl.DataFrame:
    return _pgstat(
        run_id,
        [100.0, 101.0, 102.0],
        xact_commit=[1000, 1500, 2100],
        wal_sync=[10, 60, 130],
        wal_write=[12, 65, 140],
        wal_bytes=[0, 50_000, 110_000],
        wal_records=[0, 400, 900],
        wal_fpi=[0, 40, 50],
        wal_buffers_full=[0, 0, 1],
        wal_sync_time=[0.0, 50.0, 120.0],
    )


RUNS = pl.DataFrame(
    {
        "run_id": ["a", "b", "old"],
        "target": ["ext4", "zfs", "ext4"],
        "workload": ["tpcb"] * 3,
        "clients": [4, 4, 4],
        "repeat": [1, 1, 2],
        "plan_index": [0, 1, 2],
    }
)
RECORDS = {
    k: parse(v)[0]
    for k, v in {
        "a": {"postgres": {"settings": {"track_wal_io_timing": {"setting": "on", "unit": None}}}},
        "b": {"postgres": {"settings": {"wal_sync_method": {"setting": "open_datasync", "unit": None}}}},
        "old": {"postgres": {"settings": {}}},
    }.items()
}


def _with_old(frame: pl.DataFrame) -> pl.DataFrame:
    """A v1 run (recorded before pg_stat_wal was sampled): its WAL columns are null."""
    old = _pgstat("old", [100.0, 101.0], xact_commit=[5, 900]).with_columns(
        *[
            pl.lit(None, dtype=pl.Int64).alias(c)
            for c in frame.columns
            if c.startswith("wal_") and c != "wal_sync_time"
        ],
        pl.lit(None, dtype=pl.Float64).alias("wal_sync_time"),
    )
    return pl.concat([frame, old.select(frame.columns)], how="vertical_relaxed")


def test_per_run_ratio_of_sums_net_of_the_samplers_own_commits() -> None:
    df = _with_old(pl.concat([_three_samples("a"), _three_samples("b")]))
    out = wal.per_run(df, RUNS, RECORDS)
    assert out["run_id"].to_list() == ["a", "b"]  # the v1 run has no flush counts: left out
    a, b = out.row(0, named=True), out.row(1, named=True)
    # xact_commit 1000 -> 2100 over 3 samples (2 intervals): 1100 - 2 x 2 sampler transactions = 1096
    assert a["commits"] == 1096 and a["seconds"] == 2.0 and a["samples"] == 3
    # fdatasync (the default): wal_sync 10 -> 130 = 120 flushes; 1096 / 120
    assert a["wal_flush_counter"] == "wal_sync" and a["flushes"] == 120
    assert a["commits_per_flush"] == pytest.approx(1096 / 120)
    assert a["wal_bytes_per_commit"] == pytest.approx(110_000 / 1096)
    assert a["fpi_share"] == pytest.approx(50 / 900)
    assert a["sync_ms_per_flush"] == pytest.approx(120.0 / 120)  # track_wal_io_timing on
    assert a["commits_per_s"] == pytest.approx(1096 / 2)
    # open_datasync: wal_sync is not the flush count, wal_write is (12 -> 140 = 128); no sync time per flush
    assert b["wal_flush_counter"] == "wal_write" and b["flushes"] == 128
    assert b["commits_per_flush"] == pytest.approx(1096 / 128)
    assert b["sync_ms_per_flush"] is None


def test_without_io_timing_the_sync_time_is_null() -> None:
    recs = {"a": parse({"postgres": {"settings": {}}})[0]}
    out = wal.per_run(_three_samples("a"), RUNS, recs)
    assert out["sync_ms_per_flush"].to_list() == [None]


def test_a_run_without_a_flush_has_no_ratio() -> None:
    df = _three_samples("a").with_columns(pl.lit(7).alias("wal_sync"))
    out = wal.per_run(df, RUNS, RECORDS)
    assert out["flushes"].to_list() == [0] and out["commits_per_flush"].to_list() == [None]


def test_per_second() -> None:
    out = wal.per_second(_three_samples("a"), RECORDS)
    # interval 1: 500 - 2 commits, 50 flushes; interval 2: 600 - 2, 70
    assert out["commits"].to_list() == [498, 598]
    assert out["flushes"].to_list() == [50, 70]
    assert out["commits_per_flush"].to_list() == pytest.approx([498 / 50, 598 / 70])


def test_only_v1_files_give_nothing() -> None:
    old = _with_old(_three_samples("a")).filter(pl.col("run_id") == "old")
    assert wal.run_deltas(old).height == 0
    assert wal.run_deltas(pl.DataFrame()).height == 0


def test_cells_and_comparison() -> None:
    """Five runs per target: medians and the order-statistic interval (n=5: ranks 1 and 5, 93.75 %)."""
    df = pl.DataFrame(
        {
            "run_id": [f"e{i}" for i in range(5)] + [f"z{i}" for i in range(5)],
            "target": ["ext4"] * 5 + ["zfs"] * 5,
            "workload": ["tpcb"] * 10,
            "clients": [4] * 10,
            "commits_per_flush": [1.0, 1.2, 1.1, 1.3, 1.05, 2.0, 2.2, 2.1, 2.4, 1.9],
            "wal_bytes_per_commit": [500.0, 510, 505, 520, 515, 700, 690, 710, 720, 705],
        }
    )
    c = wal.cells(df).sort("target")
    e = c.row(0, named=True)
    assert e["runs"] == 5 and e["run_ids"] == "e0, e1, e2, e3, e4"
    assert (e["commits_per_flush"], e["commits_per_flush_low"], e["commits_per_flush_high"]) == (1.1, 1.0, 1.3)
    assert e["commits_per_flush_coverage"] == pytest.approx(1 - 2 * 0.5**5)
    assert (e["wal_bytes_per_commit"], e["wal_bytes_per_commit_low"]) == (510.0, 500.0)
    g = wal.compare(df, "commits_per_flush", "ext4")
    row = g.row(0, named=True)
    assert (row["candidate"], row["center_baseline"], row["center_candidate"]) == ("zfs", 1.1, 2.1)
    assert row["delta_pct"] == pytest.approx(100 * (2.1 / 1.1 - 1))
    # complete separation of 5 vs 5: exact two-sided Mann-Whitney p = 2 / C(10, 5) = 2 / 252
    assert row["p"] == pytest.approx(2 / 252) and row["significant"]
    assert wal.compare(df, "commits_per_flush", "xfs").height == 0


# ------------------------------------------------------------------------------------------ WAL device

DEV_RECORDS = {
    "w1": {
        "target": "zfs-walext4",
        "mount": {"device": "/dev/loop3"},
        "wal": {"target": "ext4", "device": "/dev/loop1"},
    },
    "e1": {"target": "ext4", "mount": {"device": "/dev/loop1"}},
    "t1": {"target": "tmp", "mount": {"device": "tmpfs"}},
}


def test_device_roles_from_run_json() -> None:
    roles = wal_device.device_roles({k: parse(v)[0] for k, v in DEV_RECORDS.items()}).sort("run_id", "role")
    assert roles.rows() == [
        ("e1", "data+WAL", "loop1", "ext4"),
        ("w1", "WAL", "loop1", "ext4"),
        ("w1", "data", "loop3", "zfs-walext4"),
    ]


def test_run_io_keeps_the_devices_apart() -> None:
    roles = wal_device.device_roles({k: parse(v)[0] for k, v in DEV_RECORDS.items()})
    s = pl.DataFrame(
        {
            "run_id": ["w1"] * 6 + ["e1"] * 2,
            "epoch_s": [10.0, 11.0, 12.0, 10.0, 11.0, 12.0, 50.0, 54.0],
            "device": ["loop3"] * 3 + ["loop1"] * 3 + ["loop1", "loop1"],
            "reads_completed": [0, 5, 10, 0, 0, 0, 0, 8],
            "writes_completed": [100, 150, 300, 1000, 2000, 3000, 0, 400],
            "sectors_written": [0, 800, 4000, 0, 16, 32000, 0, 8000],
            "write_ms": [0, 50, 400, 0, 500, 1000, 0, 200],
            "flushes_completed": [0, 0, 2, 0, 900, 1800, 0, None],
        }
    )
    io = wal_device.run_io(s, roles).sort("run_id", "role")
    rows = {(r["run_id"], r["role"]): r for r in io.iter_rows(named=True)}
    data, walr, both = rows[("w1", "data")], rows[("w1", "WAL")], rows[("e1", "data+WAL")]
    # data device loop3: 200 writes, 4000 sectors, 400 ms, 2 flushes, 10 reads in 2 s
    assert data["write_iops"] == pytest.approx(100.0)
    assert data["write_mb_s"] == pytest.approx(4000 * 512 / 1e6 / 2)
    assert data["write_await_ms"] == pytest.approx(2.0)
    assert data["flushes_per_s"] == pytest.approx(1.0) and data["read_iops"] == pytest.approx(5.0)
    # WAL device loop1 in the same run: 2000 writes, 32000 sectors, 1000 ms, 1800 flushes in 2 s
    assert walr["write_iops"] == pytest.approx(1000.0) and walr["write_await_ms"] == pytest.approx(0.5)
    assert walr["write_mb_s"] == pytest.approx(32000 * 512 / 1e6 / 2) and walr["flushes_per_s"] == 900.0
    # ext4 alone (loop1 in another run): 400 writes in 4 s; no flush counter (an older kernel): null
    assert both["write_iops"] == pytest.approx(100.0) and both["flushes_per_s"] is None
    assert wal_device.has_wal_device(io)


def test_device_cells() -> None:
    io = pl.DataFrame(
        {
            "run_id": ["r1", "r2", "r3", "r1", "r2", "r3"],
            "target": ["z"] * 6,
            "workload": ["tpcb"] * 6,
            "clients": [1] * 6,
            "role": ["data"] * 3 + ["WAL"] * 3,
            "device": ["loop3", "loop4", "loop3", "loop1", "loop1", "loop1"],
            "on_target": ["z"] * 3 + ["ext4"] * 3,
            "write_iops": [10.0, 30.0, 20.0, 300.0, 100.0, 200.0],
            "write_mb_s": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            "write_await_ms": [1.0, 1.0, 1.0, 0.5, 0.5, 0.5],
            "flushes_per_s": [0.0, 0.0, 0.0, 90.0, 80.0, 70.0],
        }
    )
    c = wal_device.cells(io).sort("role")
    w, d = c.row(0, named=True), c.row(1, named=True)
    assert (w["role"], w["write_iops"], w["write_iops_low"], w["write_iops_high"]) == ("WAL", 200.0, 100.0, 300.0)
    assert (d["role"], d["write_iops"], d["devices"], d["on_target"]) == ("data", 20.0, "loop3, loop4", "z")
