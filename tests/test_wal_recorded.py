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

from pgfslab.analysis import queries as data
from pgfslab.analysis import wal, wal_device

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
    ps = data.pgstat(dirty, "dirty-bytes")
    assert ps.height > 0 and ps["wal_sync"].null_count() == ps.height
    assert wal.run_deltas(ps).height == 0
