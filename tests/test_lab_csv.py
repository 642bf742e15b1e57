"""The parsers of the lab's own CSV logs (pgstat.csv, fsmicro_ops.csv, snapshots.csv) on real files
recorded by the lab (tests/data/studies/, tests/data/fsmicro/), plus the damage they must report;
and the grid-wide benchstat helper the notebooks use."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pgfslab.analysis import stats
from pgfslab.host import snapshots
from pgfslab.ingest import parsers
from pgfslab.ingest.parsers import ParseError
from pgfslab.run import sampler
from pgfslab.runners import fsmicro

DATA = Path(__file__).resolve().parent / "data"
PGSTAT = next((DATA / "studies" / "dirty-bytes").glob("*/pgstat.csv"))  # v1: recorded before pg_stat_wal
PGSTAT_V2 = next((DATA / "studies" / "wal-zfs").glob("*/pgstat.csv"))  # v2: with pg_stat_wal
OPS = DATA / "fsmicro" / "write_fsync_interrupted" / "fsmicro_ops.csv"


def test_formats_are_detected() -> None:
    assert parsers.detect_format(PGSTAT) == "pgstat"
    assert parsers.detect_format(OPS) == "fsmicro-ops"


def test_pgstat_matches_the_file() -> None:
    out = parsers.parse(PGSTAT)
    df = out["pgstat"]
    lines = PGSTAT.read_text().splitlines()
    assert lines[0] == sampler.PGSTAT_HEADER_V1 and lines[1] == ",".join(sampler.PGSTAT_COLUMNS_V1)
    rows = [ln.split(",") for ln in lines[2:]]
    assert df.height == len(rows)
    assert df["xact_commit"].to_list() == [int(r[7]) for r in rows]
    assert df["ts"][0].timestamp() == pytest.approx(float(rows[0][0]), abs=1e-6)
    assert "_warnings" not in out


def test_pgstat_header_only_is_empty_with_a_warning(tmp_path: Path) -> None:
    p = tmp_path / "pgstat.csv"
    p.write_text(sampler.PGSTAT_HEADER + "\n" + ",".join(sampler.PGSTAT_COLUMNS) + "\n")
    out = parsers.parse(p, "pgstat")
    assert out["pgstat"].height == 0 and out["_warnings"].height == 1


def test_pgstat_damage(tmp_path: Path) -> None:
    head = sampler.PGSTAT_HEADER_V1 + "\n" + ",".join(sampler.PGSTAT_COLUMNS_V1) + "\n"
    good = "1795420845.5,0,3,394,5642,38638,30709,456,0,96627,3712277,1000256,44,64,60235776,0\n"
    p = tmp_path / "pgstat.csv"
    p.write_text(head + good + good.replace("456", "4x6"))
    with pytest.raises(ParseError, match=r"pgstat.csv:4: field 'xact_commit'"):
        parsers.parse(p, "pgstat")
    p.write_text(head + good + "1795420846.5,0,3")  # torn last line: dropped with a warning
    out = parsers.parse(p, "pgstat")
    assert out["pgstat"].height == 1 and "incomplete last line" in out["_warnings"]["message"][0]
    p.write_text(head.replace("checkpoints_timed", "ckpt") + good)
    with pytest.raises(ParseError, match=r":2: expected the header"):
        parsers.parse(p, "pgstat")


def test_fsmicro_ops_matches_the_runners_statistics() -> None:
    df = parsers.parse(OPS)["fsmicro_ops"]
    lines = OPS.read_text().splitlines()[1:]
    assert df.height == len(lines)
    lat = np.array([int(ln.split(",")[2]) for ln in lines])
    assert df["latency_ns"].to_list() == lat.tolist()
    printed = fsmicro.summary(lat)  # the runner's own statistics from the same latencies
    assert printed["p99"] == pytest.approx(np.percentile(lat, 99, method="inverted_cdf") / 1e6)


def test_fsmicro_ops_damage(tmp_path: Path) -> None:
    p = tmp_path / "fsmicro_ops.csv"
    p.write_text("op,start_ns,latency_ns\nx,1,2\nx,3,-4\n")
    with pytest.raises(ParseError, match=":3:"):
        parsers.parse(p, "fsmicro-ops")
    p.write_text("op,start_ns,latency_ns\nx,1,2,3\n")
    with pytest.raises(ParseError, match=":2: expected 3 comma-separated fields"):
        parsers.parse(p, "fsmicro-ops")
    p.write_text("")
    with pytest.raises(ParseError, match="empty file"):
        parsers.parse(p, "fsmicro-ops")


def test_snapshots_log(tmp_path: Path) -> None:
    p = tmp_path / "snapshots.csv"
    p.write_text(
        ",".join(snapshots.CSV_FIELDS) + "\n1795420900.123,create,pgfslab-snap-0001,41.7\n"
        "1795420930.125,delete,pgfslab-snap-0001,12.0\n"
    )
    assert parsers.detect_format(p) == "snapshots"
    df = parsers.parse(p)["snapshots"]
    assert df["action"].to_list() == ["create", "delete"] and df["duration_ms"].to_list() == [41.7, 12.0]
    assert df["ts"][0].timestamp() == pytest.approx(1795420900.123)
    p.write_text(",".join(snapshots.CSV_FIELDS) + "\n1795420900.123,explode,x,1\n")
    with pytest.raises(ParseError, match=":2: unknown action"):
        parsers.parse(p)


def test_benchstat_grid_adjusts_over_every_comparison() -> None:
    rng = np.random.default_rng(1)
    rows = [
        {"bench": b, "cfg": c, "v": base * (1 + 0.5 * (c == "b")) + rng.normal(0, 1)}
        for b, base in (("x", 100.0), ("y", 50.0))
        for c in ("a", "b", "c")
        for _ in range(8)
    ]
    df = pl.DataFrame(rows)
    grid = stats.benchstat_grid(df, "v", "bench", "cfg", "a", adjust="holm")
    tests = grid.filter(pl.col("benchmark") != "geomean")
    assert tests.height == 4 and grid.filter(pl.col("benchmark") == "geomean").height == 2
    raw = tests["p"].to_numpy()
    assert tests["p_adjusted"].to_numpy() == pytest.approx(stats.adjust_pvalues(raw, "holm"))  # over all 4
    assert tests.filter(pl.col("candidate") == "b")["significant"].all()
    assert not tests.filter(pl.col("candidate") == "c")["significant"].any()
    one = stats.benchstat(df, "v", "bench", "cfg", "a", "b")
    geo = grid.filter((pl.col("benchmark") == "geomean") & (pl.col("candidate") == "b"))
    assert geo["delta_pct"][0] == pytest.approx(one.filter(pl.col("benchmark") == "geomean")["delta_pct"][0])
    assert math.isclose(
        tests.filter(pl.col("candidate") == "b")["center_baseline"][0],
        float(np.median(df.filter((pl.col("bench") == "x") & (pl.col("cfg") == "a"))["v"])),
    )


def test_block_length_and_run_mean_ci_of_very_short_runs() -> None:
    """A run of a few seconds (pgbench -t with few transactions, after the warm-up trim) has fewer
    per-second samples than the Politis-White lag window: the run-mean interval must still come out."""
    for n in range(4, 12):
        x = np.random.default_rng(n).normal(100, 5, size=n)
        b = stats.politis_white_block_length(x)
        assert 1 <= b <= n
        ci = stats.mean_ci_autocorr(x)
        assert ci.lo < ci.mean < ci.hi and 1 <= ci.n_eff <= n


def test_pgstat_v1_files_ingest_with_null_wal_columns() -> None:
    """A raw folder from before pg_stat_wal was sampled: every WAL column is there, and null."""
    df = parsers.parse(PGSTAT)["pgstat"]
    for c in ("wal_records", "wal_fpi", "wal_bytes", "wal_buffers_full", "wal_write", "wal_sync"):
        assert df[c].dtype == pl.Int64 and df[c].null_count() == df.height
    for c in ("wal_write_time", "wal_sync_time"):
        assert df[c].dtype == pl.Float64 and df[c].null_count() == df.height


def test_pgstat_v2_reads_the_wal_columns(tmp_path: Path) -> None:
    head = sampler.PGSTAT_HEADER + "\n" + ",".join(sampler.PGSTAT_COLUMNS) + "\n"
    v1 = "1795420845.5,0,3,394,5642,38638,30709,456,0,96627,3712277,1000256,44,64,60235776,0"
    p = tmp_path / "pgstat.csv"
    p.write_text(head + v1 + ",104857,3120,9834516,0,1450,1449,12.500,830.125\n")
    assert parsers.detect_format(p) == "pgstat"
    row = parsers.parse(p)["pgstat"].row(0, named=True)
    assert (row["xact_commit"], row["wal_records"], row["wal_fpi"], row["wal_bytes"]) == (456, 104857, 3120, 9834516)
    assert (row["wal_buffers_full"], row["wal_write"], row["wal_sync"]) == (0, 1450, 1449)
    assert (row["wal_write_time"], row["wal_sync_time"]) == (12.5, 830.125)
    p.write_text(head + v1 + "\n")  # a v2 header with v1's fields: refused with the line
    with pytest.raises(ParseError, match=r"pgstat.csv:3: expected 24 comma-separated fields"):
        parsers.parse(p, "pgstat")
    p.write_text(sampler.PGSTAT_HEADER_V1 + "\n" + ",".join(sampler.PGSTAT_COLUMNS) + "\n")  # v1 says v1's columns
    with pytest.raises(ParseError, match=r":2: expected the header"):
        parsers.parse(p, "pgstat")


def test_pgstat_sampler_writes_what_the_format_reads() -> None:
    assert sampler.pgstat_layout(150018) == (sampler.PGSTAT_HEADER, sampler.PGSTAT_COLUMNS)
    assert sampler.pgstat_layout(140000)[1][-2:] == ["wal_write_time", "wal_sync_time"]
    assert sampler.pgstat_layout(130012) == (sampler.PGSTAT_HEADER_V1, sampler.PGSTAT_COLUMNS_V1)
    assert "pg_stat_wal" not in sampler.pgstat_sql(sampler.PGSTAT_COLUMNS_V1)
    assert "w.wal_bytes::bigint" in sampler.PGSTAT_SQL and "w.wal_sync_time" in sampler.PGSTAT_SQL
    row = (1795420845.5, *range(15), 104857, 3120, 9834516, 0, 1450, 1449, 0.0125, 830.1254)
    line = sampler.pgstat_line(sampler.PGSTAT_COLUMNS, row)
    assert (
        line
        == "1795420845.500000," + ",".join(str(i) for i in range(15)) + ",104857,3120,9834516,0,1450,1449,0.013,830.125"
    )


def test_pgstat_v2_matches_a_real_file() -> None:
    df = parsers.parse(PGSTAT_V2)["pgstat"]
    lines = PGSTAT_V2.read_text().splitlines()
    assert lines[0] == sampler.PGSTAT_HEADER and lines[1] == ",".join(sampler.PGSTAT_COLUMNS)
    rows = [dict(zip(lines[1].split(","), ln.split(","), strict=True)) for ln in lines[2:]]
    assert df.height == len(rows) > 2
    for c in ("xact_commit", "wal_records", "wal_fpi", "wal_bytes", "wal_buffers_full", "wal_write", "wal_sync"):
        assert df[c].to_list() == [int(r[c]) for r in rows], c
    assert df["wal_sync_time"].to_list() == [float(r["wal_sync_time"]) for r in rows]
    assert df["wal_sync_time"][-1] > 0  # recorded with track_wal_io_timing on


def test_the_emulated_disks_series_is_parsed(tmp_path: Path) -> None:
    """disk_series.csv as the daemon writes it (pgfslab/host/native/pgfslab_disk.c): a comment, the header, one
    row per second; a torn last line dropped with a warning."""
    p = tmp_path / "disk_series.csv"
    p.write_text(
        "# pgfslab-disk: the emulated disk's counters, per second (increments in the second ending at ts)\n"
        "ts,reads,writes,read_bytes,write_bytes,read_busy_ns,write_busy_ns,queued,queued_reads,reads_after_write,"
        "flushes\n"
        "1795893330.109,107,38,2027520,417792,650855550,287982210,20,18,3,29\n"
        "1795893331.109,0,0,0,0,0,0,0,0,0,0\n"
        "1795893332.109,12,3"
    )
    assert parsers.detect_format(p) == "disk-series"
    out = parsers.parse(p)
    df = out["disk_series"]
    assert df.height == 2 and df["reads"].to_list() == [107, 0] and df["write_busy_ns"][0] == 287982210
    assert str(df["ts"].dtype) == "Datetime(time_unit='us', time_zone='UTC')"
    assert out["_warnings"].height == 1
