"""pgfslab.analysis.wal and wal_device on recorded real runs (tests/data/studies/, see its README.md): each
expected value is read from the raw files with plain Python (csv rows, diskstats lines, run.json), never
from the code under test.

* dirty-bytes: pgstat v1 (no pg_stat_wal: no WAL rows), one ext4 device holding data and WAL;
* wal-zfs: pgstat v2, track_wal_io_timing on, zfs-fuse targets with gzip, one with WAL on the ext4 target.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pgfslab.analysis import queries, wal, wal_device

STUDIES = Path(__file__).resolve().parent / "data" / "studies"


def _db(tmp: Path, name: str) -> str:
    db = tmp / f"{name}.duckdb"
    subprocess.run(
        [sys.executable, "-m", "pgfslab", "ingest-study", "--raw", str(STUDIES / name), "--db", str(db)],
        check=True,
        capture_output=True,
    )
    return str(db)


@pytest.fixture(scope="module")
def dirty(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _db(tmp_path_factory.mktemp("walrec"), "dirty-bytes")


def diskstats_first_last(log: Path, device: str) -> tuple[tuple[float, list[int]], tuple[float, list[int]]]:
    """(epoch, counters) of `device` in the first and the last sample of a diskstats.log, read by hand."""
    samples: list[tuple[float, list[int]]] = []
    ts = None
    for line in log.read_text().splitlines():
        if line.startswith("@ "):
            ts = float(line[2:])
            continue
        f = line.split()
        if len(f) >= 14 and f[2] == device:
            samples.append((ts, [int(x) for x in f[3:]]))  # type: ignore[arg-type]
    return samples[0], samples[-1]


def expected_io(rundir: Path, device: str) -> dict[str, float | None]:
    (t0, a), (t1, b) = diskstats_first_last(rundir / "diskstats.log", device)
    dt = t1 - t0
    # iostats.rst field order after the name: reads, reads merged, sectors read, read ms, writes, writes merged,
    # sectors written, write ms, in flight, io ms, weighted ms, (discards x4), flushes, flush ms
    writes, sectors, wms = b[4] - a[4], b[6] - a[6], b[7] - a[7]
    return {
        "write_iops": writes / dt,
        "write_mb_s": sectors * 512 / 1e6 / dt,
        "write_await_ms": wms / writes if writes else None,
        "flushes_per_s": (b[15] - a[15]) / dt if len(b) >= 17 else None,
    }


def test_data_and_wal_on_one_ext4_device(dirty: str) -> None:
    io = wal_device.per_run(dirty, "dirty-bytes")
    assert set(io["role"]) == {"data+WAL"} and not wal_device.has_wal_device(io)
    for rundir in sorted(p for p in (STUDIES / "dirty-bytes").iterdir() if (p / "run.json").is_file()):
        rec = json.loads((rundir / "run.json").read_text())
        dev = rec["mount"]["device"].removeprefix("/dev/")
        row = io.filter(pl.col("run_id") == rec["run_id"]).row(0, named=True)
        assert row["device"] == dev
        for k, v in expected_io(rundir, dev).items():
            assert row[k] == pytest.approx(v, rel=1e-6), (rec["run_id"], k)


def test_v1_pgstat_gives_no_wal_rows(dirty: str) -> None:
    ps = queries.pgstat(dirty, "dirty-bytes")
    assert ps.height > 0 and ps["wal_sync"].null_count() == ps.height
    assert wal.run_deltas(ps).height == 0


# ------------------------------------------------------------------------------------------ wal-zfs

WALZFS = STUDIES / "wal-zfs"


@pytest.fixture(scope="module")
def walzfs(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _db(tmp_path_factory.mktemp("walzfs"), "wal-zfs")


def _runs(study: Path) -> list[tuple[Path, dict]]:
    return [
        (p, json.loads((p / "run.json").read_text())) for p in sorted(study.iterdir()) if (p / "run.json").is_file()
    ]


def _pgstat_rows(rundir: Path) -> list[dict[str, str]]:
    with open(rundir / "pgstat.csv", newline="") as fh:
        lines = [ln for ln in fh if not ln.startswith("#")]
    return list(csv.DictReader(lines))


def _per_run(db: str) -> pl.DataFrame:
    runs = queries.runs(db, "wal-zfs", only_ok=True)
    return wal.per_run(queries.pgstat(db, "wal-zfs"), runs, queries.run_records(db, "wal-zfs"))


def test_commits_per_flush_read_from_the_files(walzfs: str) -> None:
    got = {r["run_id"]: r for r in _per_run(walzfs).iter_rows(named=True)}
    runs = _runs(WALZFS)
    assert len(got) == len(runs) == 40
    for rundir, rec in runs:
        settings = rec["postgres"]["settings"]
        assert "wal_sync_method" not in settings and settings["track_wal_io_timing"]["setting"] == "on"
        rows = _pgstat_rows(rundir)
        first, last = rows[0], rows[-1]
        commits = int(last["xact_commit"]) - int(first["xact_commit"]) - 2 * (len(rows) - 1)
        syncs = int(last["wal_sync"]) - int(first["wal_sync"])  # fdatasync, Linux's default: wal_sync counts
        g = got[rec["run_id"]]
        assert (g["commits"], g["flushes"], g["samples"]) == (commits, syncs, len(rows))
        assert g["commits_per_flush"] == pytest.approx(commits / syncs)
        wal_bytes = int(last["wal_bytes"]) - int(first["wal_bytes"])
        assert g["wal_bytes_per_commit"] == pytest.approx(wal_bytes / commits)
        sync_ms = float(last["wal_sync_time"]) - float(first["wal_sync_time"])
        assert g["sync_ms_per_flush"] == pytest.approx(sync_ms / syncs)


def test_one_client_flushes_once_per_commit(walzfs: str) -> None:
    """What PostgreSQL must do: a lone client's commit waits for its own flush (no one to share it with), so
    its runs sit at one commit per flush whatever the file system; with four clients flushes are shared."""
    pr = _per_run(walzfs)
    one = pr.filter(pl.col("clients") == 1)["commits_per_flush"]
    assert one.len() == 20 and one.min() > 0.99 and one.max() < 1.01
    four = pr.filter(pl.col("clients") == 4)["commits_per_flush"]
    assert four.len() == 20 and four.min() > 1.05


def test_the_wal_device_apart_from_the_data_device(walzfs: str) -> None:
    io = wal_device.per_run(walzfs, "wal-zfs")
    assert wal_device.has_wal_device(io)
    seen = 0
    for rundir, rec in _runs(WALZFS):
        rows = io.filter(pl.col("run_id") == rec["run_id"])
        if rec.get("wal"):
            assert rec["wal"]["target"] == "ext4" and rec["target"] == "zfs-gzip-walext4"
            roles = {"data": rec["mount"]["device"], "WAL": rec["wal"]["device"]}
        else:
            roles = {"data+WAL": rec["mount"]["device"]}
        assert sorted(rows["role"].to_list()) == sorted(roles)
        for role, dev in roles.items():
            row = rows.filter(pl.col("role") == role).row(0, named=True)
            assert row["device"] == dev.removeprefix("/dev/")
            for k, v in expected_io(rundir, row["device"]).items():
                if v is None:  # no write completed in the run (the zfs data device between txg syncs)
                    assert row[k] is None, (rec["run_id"], role, k)
                else:
                    assert row[k] == pytest.approx(v, rel=1e-6), (rec["run_id"], role, k)
            seen += 1
    assert seen == 50  # 40 runs, 10 of them with two devices


def test_zfs_footprint_beside_btrfs_compsize(walzfs: str) -> None:
    from pgfslab.analysis.answers import footprint

    last = footprint.after_last_run(
        queries.storage(walzfs, "wal-zfs"), queries.targets(walzfs, "wal-zfs"), queries.target_names(walzfs, "wal-zfs")
    )
    final: dict[str, dict] = {}
    for _, rec in sorted(_runs(WALZFS), key=lambda x: x[1]["plan_index"]):
        final[rec["target"]] = rec
    for t, rec in final.items():
        row = last.filter(pl.col("target") == t).row(0, named=True)
        if rec.get("zfs_footprint"):
            z = rec["zfs_footprint"]
            assert z["implementation"] == "zfs-fuse" and z["logicalused"] is None
            assert (row["physical_bytes"], row["logical_bytes"]) == (z["used"], z["logicalused_est"])
            assert row["ratio"] == pytest.approx(z["compressratio"], abs=0.005) and row["ratio"] > 2  # gzip
            assert row["accounting"] == footprint.ACCOUNTING_ZFS_EST
        elif rec.get("compsize"):
            c = rec["compsize"]
            assert (row["physical_bytes"], row["logical_bytes"]) == (c["disk_bytes"], c["uncompressed_bytes"])
            assert row["accounting"] == footprint.ACCOUNTING_COMPSIZE
        else:
            assert row["ratio"] is None


def test_ceiling_of_the_wal_target(walzfs: str) -> None:
    from pgfslab.analysis import device

    c = {r["target"]: r for r in device.ceilings(walzfs, "wal-zfs").iter_rows(named=True)}
    assert c["zfs-gzip-walext4"]["ceiling_of"] == "ext4"
    assert c["zfs-gzip-walext4"]["ceiling_commits_s"] == c["ext4"]["ceiling_commits_s"]
    assert c["zfs-gzip"]["ceiling_of"] == "zfs-gzip"
